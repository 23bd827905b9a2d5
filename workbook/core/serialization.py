"""YAML in and out: the one module that imports PyYAML.

Reading is guarded, because a scenario is hand-written input and PyYAML's ``safe_load`` is
safe against code, not against mistakes or bombs: a duplicate key silently kept the last value;
an alias "bomb" (a few lines of ``&a [*b, *b, ...]``) expanded to billions of values in whatever
walked the result next (3 GB and minutes before a MemoryError); a 5,000-digit number or a
13th month raised a bare ``ValueError``. Here every duplicate key is refused with its line, the
document may stand for at most :data:`MAX_NODES` values with every alias counted as what it
expands to, nest at most :data:`MAX_DEPTH` levels and hold no alias to its own container, and
numbers are at most :data:`MAX_NUMBER_CHARS` characters; every refusal is an InputError naming
the source (and the line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

try:  # libyaml reads the events in C (a scenario in 1 ms, not 10); composing stays guarded here
    from yaml.cyaml import CParser as _Events  # type: ignore[attr-defined]  # C-only name
except ImportError:  # PyYAML built without libyaml: the same events, read in Python
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Events(Reader, Scanner, Parser):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)

from workbook.core.quoting import cut, short
from workbook.core.textfile import MAX_BYTES, read_text
from workbook.errors import InputError

MAX_NODES = 10_000  # values, aliases expanded (a scenario has about a hundred)
MAX_DEPTH = 64
MAX_NUMBER_CHARS = 100
_MERGE = "tag:yaml.org,2002:merge"


class RefusedYAML(yaml.YAMLError):
    """Well-formed YAML this project refuses (duplicate keys, bombs, absurd numbers)."""


class _GuardedLoader(Composer, _Events, SafeConstructor, Resolver):
    """A safe loader that counts depth while composing and records duplicate keys."""

    def __init__(self, stream: str) -> None:
        _Events.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.depth = 0
        self.composed = 0  # nodes composed so far: stops a huge flat file early (PyYAML is slow)
        self.duplicates: list[str] = []

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self.depth += 1
        self.composed += 1
        try:
            if self.composed > MAX_NODES:
                raise RefusedYAML(f"more than {MAX_NODES} values"
                                  f"{_at(self.peek_event())}")
            if self.depth > MAX_DEPTH:
                raise RefusedYAML(f"nested deeper than {MAX_DEPTH} levels"
                                  f"{_at(self.peek_event())}")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, Node] = {}  # checked before the merge keys (<<) are flattened in
        for key_node, _ in node.value:
            if key_node.tag == _MERGE or not isinstance(key_node, ScalarNode):
                continue
            key = self.construct_object(key_node)
            if key in first:
                self.duplicates.append(
                    f"duplicate key {short(key)}{_line(key_node.start_mark)} (first"
                    f"{_line(first[key].start_mark)}): a key may appear once")
            else:
                first[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _at(event: Any) -> str:
    return _line(getattr(event, "start_mark", None))


def _line(mark: Any) -> str:
    return f" on line {mark.line + 1}" if mark is not None else ""


def _bounded_number(kind: str) -> Any:
    base = _GuardedLoader.yaml_constructors[f"tag:yaml.org,2002:{kind}"]

    def construct(loader: _GuardedLoader, node: ScalarNode) -> Any:
        if len(str(node.value)) > MAX_NUMBER_CHARS:
            raise ConstructorError(None, None, f"a number of {len(str(node.value))} characters "
                                   f"(at most {MAX_NUMBER_CHARS}): {cut(str(node.value), 20)}",
                                   node.start_mark)
        return base(loader, node)

    return construct


for _kind in ("int", "float"):
    _GuardedLoader.add_constructor(f"tag:yaml.org,2002:{_kind}", _bounded_number(_kind))


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expansion(root: Node) -> None:
    """Refuse a node graph that expands (aliases followed) beyond the budgets, or loops."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_path: set[int] = set()  # the nodes being walked: an alias to one of them is a loop
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            open_path.discard(key)
            if size[key] > MAX_NODES:
                raise RefusedYAML(f"its aliases expand to more than {MAX_NODES} values"
                                  f"{_line(node.start_mark)} (an alias bomb?)")
            if depth[key] > MAX_DEPTH:
                raise RefusedYAML(f"with its aliases expanded it nests deeper than {MAX_DEPTH} "
                                  f"levels{_line(node.start_mark)}")
            continue
        if key in size:
            continue
        open_path.add(key)
        stack.append((node, True))
        for kid in _children(node):
            if id(kid) in open_path:
                raise RefusedYAML(f"an alias{_line(kid.start_mark)} refers to a node that "
                                  "contains it (a loop)")
            if id(kid) not in size:
                stack.append((kid, False))


def _load(text: str) -> Any:
    """The one document in ``text``; yaml.YAMLError (RefusedYAML for what is refused)."""
    loader = _GuardedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        data = loader.construct_document(node)
    finally:
        loader.dispose()
    if loader.duplicates:
        raise RefusedYAML("; ".join(loader.duplicates[:10]) + (
            f"; and {len(loader.duplicates) - 10} more" if len(loader.duplicates) > 10 else ""))
    return data


def load_yaml_text(text: str, source: str = "<text>") -> Any:
    try:
        return _load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML: {cut(str(exc), 400)}") from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a date with month 13
        raise InputError(f"{source}: not valid YAML: {cut(str(exc), 200)}") from None


def load_yaml(path: Path, *, what: str = "YAML file", max_bytes: int = MAX_BYTES) -> Any:
    path = Path(path)
    return load_yaml_text(read_text(path, what=what, max_bytes=max_bytes), str(path))


def parse_scalar(text: str) -> Any:
    """A ``-s key=value`` value as YAML reads it: ``6e-4`` -> 0.0006, ``[1]`` -> [1], ``x`` -> 'x'.

    Text that is not YAML stays text; YAML that is refused (a duplicate key, a bomb) is an
    InputError, as in a file.
    """
    try:
        value = _load(text)
    except RefusedYAML as exc:
        raise InputError(f"not a usable value: {exc}") from None
    except yaml.YAMLError:
        return text
    except (ValueError, TypeError, OverflowError):
        return text
    # YAML 1.1 reads "6e-4" as a string (no dot); people mean a number.
    if isinstance(value, str) and len(value) <= MAX_NUMBER_CHARS:
        try:
            return float(value) if any(c in value for c in "eE.") else int(value)
        except ValueError:
            return value
    return value


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (e.g. a RayJob's runtimeEnvYAML) as readable ``|`` blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=100)
