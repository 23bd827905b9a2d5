"""Load a scenario: ``defaults:`` chain, then the file, then ``-s key=value`` overrides.

Precedence is explicit and in this order: base files (earlier listed first) < the scenario
file < overrides (CLI ``-s`` and notebook parameters, later wins). Mappings merge key by key;
lists and scalars replace, except ``-s overrides+=KEY=VALUE`` which appends one raw override.
Paths expand ``~``, ``${HOME}`` and ``${WORKBOOK_ASSETS}`` (the tiny CPU assets cache); a
relative ``rollouts.replay`` is relative to the scenario file's folder, like ``checks.baseline``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from workbook.errors import ParamsError
from workbook.serialization import load_yaml, parse_scalar

PATH_FIELDS = ("model_path", "critic_model_path", "train_files", "val_files")
_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def assets_dir() -> Path:
    """Where ``workbook assets`` builds the tiny model and data (``${WORKBOOK_ASSETS}`` in files)."""
    from workbook.assets import ASSETS_VERSION, default_cache_dir

    return default_cache_dir().resolve() / f"v{ASSETS_VERSION}"


def expand(text: str, variables: Mapping[str, str]) -> str:
    """Expand ``~`` and ``${VAR}``/``$VAR`` from ``variables``; unknown names stay as written."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return variables.get(name, m.group(0))

    text = _VAR.sub(sub, text)
    if (text == "~" or text.startswith("~/")) and "HOME" in variables:
        text = str(Path(variables["HOME"] + text[1:]))  # ~ is the HOME the caller chose
    elif text.startswith("~"):
        text = str(Path(text).expanduser())
    return text


def path_variables() -> dict[str, str]:
    return {"HOME": str(Path.home()), "WORKBOOK_ASSETS": str(assets_dir())}


def read_layers(path: Path, _seen: tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    """The scenario file and its ``defaults:`` bases, base-most first."""
    path = Path(path).resolve()
    if path in _seen:
        raise ParamsError([("defaults", f"cycle: {' -> '.join(str(p) for p in (*_seen, path))}")])
    if not path.exists():
        raise ParamsError([("", f"no such scenario file: {path}")])
    data = load_yaml(path) or {}
    if not isinstance(data, dict):
        raise ParamsError([("", "a scenario file must be a YAML mapping")], str(path))
    bases = data.pop("defaults", []) or []
    if isinstance(bases, str):
        bases = [bases]
    layers: list[dict[str, Any]] = []
    for base in bases:
        layers += read_layers(path.parent / str(base), (*_seen, path))
    return layers + [data]


def merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; everything else in ``top`` replaces."""
    out = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def apply_sets(data: dict[str, Any], sets: Iterable[str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Apply ``key=value`` / ``a.b=value`` / ``overrides+=raw`` strings in order."""
    out = copy.deepcopy(data)
    problems: list[tuple[str, str]] = []
    for item in sets:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or key == "+":
            problems.append((item, "an override must look like key=value"))
            continue
        append = key.endswith("+")
        key = key.rstrip("+")
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            if node.get(part) is None:
                node[part] = {}
            nxt = node[part]
            if not isinstance(nxt, dict):
                problems.append((key, f"'{part}' is not a mapping"))
                break
            node = nxt
        else:
            if not append:
                node[leaf] = parse_scalar(raw)
            elif isinstance(node.setdefault(leaf, []), list):
                node[leaf].append(raw)
            else:
                problems.append((key, "'+=' appends to a list field only"))
    return out, problems


def expand_paths(data: dict[str, Any], variables: Mapping[str, str]) -> dict[str, Any]:
    out = dict(data)
    for name in PATH_FIELDS:
        if isinstance(out.get(name), str):
            out[name] = expand(out[name], variables)
    if isinstance(out.get("overrides"), list):
        out["overrides"] = [expand(str(o), variables) if isinstance(o, str) else o for o in out["overrides"]]
    return out


def resolve(
    path: Path, sets: Iterable[str] = (), variables: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The merged, path-expanded scenario mapping and the problems met on the way.

    ``variables`` replace some of :func:`path_variables` in the scenario's paths (a RayJob maps
    ``HOME`` to ``${HOME}``: the paths are the pods', not this machine's). ``rollouts.replay``
    is always this machine's: the workbook copies it before launch.
    """
    data: dict[str, Any] = {}
    for layer in read_layers(path):
        data = merge(data, layer)
    data.setdefault("name", Path(path).stem)
    data, problems = apply_sets(data, sets)
    data = expand_paths(data, {**path_variables(), **(variables or {})})
    rollouts = data.get("rollouts")
    if isinstance(rollouts, dict) and isinstance(rollouts.get("replay"), str):
        replay = Path(expand(rollouts["replay"], path_variables()))
        rollouts["replay"] = str(replay if replay.is_absolute() else Path(path).resolve().parent / replay)
    return data, problems
