"""Structured documents redacted inside their structure: they stay valid, numbers stay exact.

A JSON, JSONL, YAML or notebook document, or JUnit XML, is redacted by key and by value: a
string under a secret key goes whole (``{"HF_TOKEN": "..."}``), every other string, and every
key, goes through :func:`~.text.redact_text`. A number, boolean or null is never touched:
``{"pass": 16}`` counts checks, and a value that is not text has no credential's shape. Two
places where a name sits apart from its value are followed too: a ``{"name": "HF_TOKEN",
"value": "..."}`` pair (a Kubernetes env entry, a JUnit property) and an argv list
(``["--api-key", "k", "-u", "bob:pw"]``). A container that YAML aliases share is redacted once,
so an alias bomb stays as small as it was read.

Redacting text that is a document (``redact_*_text``) returns the text itself when nothing in it
is secret, so a clean file is copied byte for byte; otherwise the redacted structure is written
back. Text that does not parse as its form is redacted as plain text, line by line.
"""

from __future__ import annotations

import functools
import json
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from typing import Any

from workbook.core.redaction.text import (
    _USER_FLAG_NAME,
    HARMLESS_VALUES,
    REDACTED,
    LineRedactor,
    _triggered,
    _uid_gid,
    client_password,
    is_secret_name,
    redact_text,
)

# ---- values -----------------------------------------------------------------------------

_USER_FLAG = re.compile(_USER_FLAG_NAME + r"\Z")
_BOOLEAN_FLAG = re.compile(r"-+(?:no|disable|enable|use|skip|with|without)[-_]", re.IGNORECASE)


class _Cycle(ValueError):
    """A container that holds itself (a recursive YAML alias): no document to write back."""


_IN_PROGRESS = object()  # marks a container being redacted: meeting it again is a cycle


class _Redactor:
    """One walk over a document. Returns the very object it was given when nothing in it
    changed (so callers can tell), a redacted copy otherwise; each container is redacted once."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, bool], Any] = {}

    def value(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return _text(obj)
        if isinstance(obj, dict):
            return self._once(obj, False, self._dict)
        if isinstance(obj, (list, tuple)):
            return self._once(obj, False, self._list)
        return obj  # numbers, booleans, null, dates: never touched

    def blank(self, obj: Any) -> Any:
        """Everything under a secret name: each string leaf becomes ``[REDACTED]`` (numbers,
        booleans and null stay; the shape stays readable)."""
        if isinstance(obj, str):
            return obj if _tells_nothing(obj) else REDACTED
        if isinstance(obj, dict):
            return self._once(obj, True, self._blank_dict)
        if isinstance(obj, (list, tuple)):
            return self._once(obj, True, self._blank_list)
        return obj

    def _once(self, obj: Any, blank: bool, redact: Callable[[Any], Any]) -> Any:
        key = (id(obj), blank)
        if key in self._seen:
            done = self._seen[key]
            if done is _IN_PROGRESS:
                raise _Cycle("a container holds itself")
            return done
        self._seen[key] = _IN_PROGRESS
        self._seen[key] = done = redact(obj)
        return done

    def _blank_dict(self, data: dict[Any, Any]) -> dict[Any, Any]:
        out = {_text(k) if isinstance(k, str) else k: self.blank(v) for k, v in data.items()}
        return _same_or(data, out)

    def _blank_list(self, items: list[Any] | tuple[Any, ...]) -> list[Any] | tuple[Any, ...]:
        out = [self.blank(v) for v in items]
        return _same_or(items, out if isinstance(items, list) else tuple(out))

    def _dict(self, data: dict[Any, Any]) -> dict[Any, Any]:
        secret_value = _pair_value_key(data)
        out: dict[Any, Any] = {}
        for key, value in data.items():
            secret = key == secret_value or (isinstance(key, str) and is_secret_name(key))
            out[_text(key) if isinstance(key, str) else key] = (
                self.blank(value) if secret else self.value(value)
            )
        return _same_or(data, out)

    def _list(self, items: list[Any] | tuple[Any, ...]) -> list[Any] | tuple[Any, ...]:
        out, after = [], ""
        client: tuple[str, bool, bool] = ("", False, False)  # the last client's password flag
        for item in items:
            if not isinstance(item, str):
                out.append(self.value(item))
                after = ""
                continue
            flag, glued, apart = client
            if flag and item.startswith(flag) and (glued or apart):
                client = ("", False, False)  # its first password flag only (see _CLIENT)
                if len(item) > len(flag) and glued:
                    out.append(flag + _argument(item[len(flag):], "value"))
                    after = ""
                    continue
                if item == flag and apart:
                    out.append(item)
                    after = "value"
                    continue
            out.append(_argument(item, after))
            after = _flag_takes(item)
            client = client_password(item) if not item.startswith("-") else client
        return _same_or(items, out if isinstance(items, list) else tuple(out))


def _same_or(original: Any, redacted: Any) -> Any:
    """``original`` itself when every member of ``redacted`` is the member it was."""
    if isinstance(original, dict):
        same = len(original) == len(redacted) and all(
            k in redacted and redacted[k] is v for k, v in original.items()
        )
    else:
        same = all(a is b for a, b in zip(original, redacted, strict=True))
    return original if same else redacted


def _text(text: str) -> str:
    """``text`` redacted; ``text`` itself when nothing in it changed."""
    if len(text) > 256:
        out = redact_text(text)
        return text if out == text else out
    out = _short_text(text)
    return text if out == text else out


@functools.lru_cache(maxsize=8192)
def _short_text(text: str) -> str:
    """Keys and short values repeat (every line of a metrics file names the same metrics)."""
    return redact_text(text)


def _tells_nothing(value: str) -> bool:
    return not value or value.lower() in HARMLESS_VALUES or REDACTED[:-1] in value


def _pair_value_key(data: dict[Any, Any]) -> str | None:
    """``"value"`` when ``data`` is a ``{"name": <secret name>, "value": ...}`` pair."""
    for name_key, value_key in (("name", "value"), ("key", "value"), ("Name", "Value")):
        name = data.get(name_key)
        if isinstance(name, str) and value_key in data and is_secret_name(name):
            return value_key
    return None


def _flag_takes(arg: str) -> str:
    """What the next argv element is after ``arg``: a secret (``--api-key``), the ``user:pw``
    of ``-u``, or nothing (``--no-auth`` and ``--use-auth`` take no value)."""
    if not arg.startswith("-") or any(c in arg for c in "= \t\n") or _BOOLEAN_FLAG.match(arg):
        return ""
    if _USER_FLAG.match(arg):
        return "user"
    return "value" if is_secret_name(arg) else ""


def _argument(arg: str, after: str) -> str:
    """One argv element, ``after`` being what the previous element said it is."""
    if not after or arg.startswith("-") or _tells_nothing(arg):
        return _text(arg)
    if after == "value":
        return REDACTED
    user, colon, password = arg.partition(":")
    if not colon or not password or _uid_gid(user, password):
        return _text(arg)
    return f"{user}:{REDACTED}"


def redact_mapping(obj: Any) -> Any:
    """A copy of ``obj`` (dicts, lists, strings, numbers) with secrets replaced inside it.

    A string under a secret-looking key is replaced whole (a dict or list there: each string
    leaf), every key and every other string goes through :func:`redact_text`; numbers,
    booleans and null are kept as they are. ``obj`` itself comes back when nothing changed.

    Raises:
        ValueError: ``obj`` holds itself (only a recursive YAML alias can).
    """
    return _Redactor().value(obj)


# ---- documents --------------------------------------------------------------------------


def dump_json(data: Any, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """JSON text of ``data``, redacted inside the structure (the writers' one JSON guard).

    Values JSON has no type for (paths, dates) are written as their text, and redacted as such.
    """
    plain = json.loads(json.dumps(data, default=str))
    return json.dumps(redact_mapping(plain), indent=indent, sort_keys=sort_keys,
                      ensure_ascii=False) + "\n"


class _Duplicates:
    """``object_pairs_hook`` that notes a key given twice (the earlier value would vanish from
    the parsed document, so the text must not be written back as it was)."""

    def __init__(self) -> None:
        self.found = False

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        data = dict(pairs)
        self.found = self.found or len(data) != len(pairs)
        return data


def _parse_json(text: str) -> tuple[Any, bool]:
    """The document and whether a key was duplicated; ValueError when it is no JSON."""
    duplicates = _Duplicates()
    try:
        return json.loads(text, object_pairs_hook=duplicates), duplicates.found
    except RecursionError:
        raise ValueError("nested too deeply") from None


def redact_json_text(text: str) -> str:
    """A JSON document redacted inside its structure; still valid, numbers exactly as written.

    Text that is no JSON (or nests too deeply to walk) is redacted as plain text.
    """
    try:
        data, duplicated = _parse_json(text)
        redacted = redact_mapping(data)
    except (ValueError, RecursionError):
        return redact_text(text)
    if redacted is data and not duplicated:
        return text
    indent = 2 if "\n" in text.strip() else None
    tail = "\n" if text.endswith("\n") else ""
    return json.dumps(redacted, indent=indent, ensure_ascii=False) + tail


def redact_json_line(line: str, redactor: LineRedactor | None = None) -> str:
    """One line of a JSONL file (its end kept): as JSON when it is, else as text (through
    ``redactor`` when given, so a block spanning lines is followed)."""
    body = line.rstrip("\r\n")
    if not body.strip() or (redactor is not None and redactor.pending):
        return redactor.line(line) if redactor is not None else line
    if not _may_hide(body):
        return line
    try:
        data, duplicated = _parse_json(body)
        redacted = redact_mapping(data)
    except (ValueError, RecursionError):
        return redactor.line(line) if redactor is not None else redact_text(line)
    if redacted is data and not duplicated:
        return line
    return json.dumps(redacted, ensure_ascii=False) + line[len(body) :]


def _may_hide(text: str) -> bool:
    """Whether a JSON line may hold a secret: a trigger of the text rules, or an escape that
    could spell one."""
    return "\\u" in text or _triggered(text, text.lower())


def redact_yaml_text(text: str) -> str:
    """A YAML document redacted inside its structure (still valid YAML, numbers untouched).

    Comments are no part of the structure: when one holds a secret the document is written back
    without them. Text that is no (single) YAML document is redacted as plain text.
    """
    from workbook.core.serialization import dump_yaml, load_yaml_text
    from workbook.errors import InputError

    as_text = redact_text(text)
    try:
        data = load_yaml_text(text)
        redacted = redact_mapping(data)
    except (InputError, ValueError, RecursionError):
        return as_text
    if redacted is data and as_text == text:
        return text
    return dump_yaml(redacted)


# ---- notebooks --------------------------------------------------------------------------


def redact_notebook_data(notebook: dict[str, Any]) -> dict[str, Any]:
    """A notebook with every cell's source, outputs and metadata redacted (images untouched).

    A multi-line text kept as a list of lines is redacted as one text (a private key spans
    lines) and kept as a list.
    """
    walk = _Redactor()
    out = {
        key: _same_or(value, [_cell(c, walk) for c in value])
        if key == "cells" and isinstance(value, list) else walk.value(value)
        for key, value in notebook.items()
    }
    return _same_or(notebook, out)


def _cell(cell: Any, walk: _Redactor) -> Any:
    if not isinstance(cell, dict):
        return walk.value(cell)
    out = dict(cell)
    for key, value in cell.items():
        if key == "source":
            out[key] = _lines(value, walk)
        elif key == "outputs" and isinstance(value, list):
            out[key] = _same_or(value, [_output(o, walk) for o in value])
        elif key != "attachments":  # attachments are images
            out[key] = walk.value(value)
    return _same_or(cell, out)


def _output(output: Any, walk: _Redactor) -> Any:
    if not isinstance(output, dict):
        return walk.value(output)
    out = dict(output)
    for key, value in output.items():
        if key == "text":
            out[key] = _lines(value, walk)
        elif key == "data" and isinstance(value, dict):
            data = {mime: found if mime.startswith("image/") else _lines(found, walk)
                    for mime, found in value.items()}
            out[key] = _same_or(value, data)
        else:  # traceback, evalue, metadata, ename
            out[key] = walk.value(value)
    return _same_or(output, out)


def _lines(value: Any, walk: _Redactor) -> Any:
    """A notebook text (a string, or a list of its lines) redacted as one text."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        joined = "".join(value)
        redacted = _text(joined)
        return value if redacted is joined else redacted.splitlines(keepends=True)
    return walk.value(value)


def redact_notebook_text(text: str) -> str:
    """A notebook's JSON text redacted (see :func:`redact_notebook_data`); no notebook: JSON."""
    try:
        data, _ = _parse_json(text)
    except ValueError:
        return redact_text(text)
    if not isinstance(data, dict):
        return redact_json_text(text)
    try:
        redacted = redact_notebook_data(data)
    except (ValueError, RecursionError):
        return redact_text(text)
    if redacted is data:
        return text
    return json.dumps(redacted, indent=1, ensure_ascii=False) + "\n"


# ---- XML --------------------------------------------------------------------------------


def redact_xml_text(text: str) -> str:
    """XML (a JUnit file) with every attribute value, text and tail redacted; still valid XML.

    A ``<property name="api_key" value="..."/>`` loses its value. A document declaring a
    DOCTYPE (entities) or that does not parse is redacted as plain text.
    """
    as_text = redact_text(text)
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        return as_text
    declaration = re.match(r"\s*<\?xml[^>]*\?>\s*", text)
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return as_text
    if not redact_xml_element(root) and as_text == text:
        return text  # (a comment is no part of the tree: one holding a secret is dropped)
    head = declaration.group(0) if declaration else ""
    return head + ElementTree.tostring(root, encoding="unicode") + ("\n" if text.endswith("\n") else "")


def redact_xml_element(root: ElementTree.Element) -> bool:
    """Redact ``root`` and everything under it in place; whether anything changed."""
    changed = False
    for element in root.iter():
        secret_value = _pair_value_key(dict(element.attrib))
        for name, value in list(element.attrib.items()):
            new = REDACTED if name == secret_value and not _tells_nothing(value) else _text(value)
            if new is not value:
                element.set(name, new)
                changed = True
        for part in ("text", "tail"):
            value = getattr(element, part)
            if value:
                new = _text(value)
                if new is not value:
                    setattr(element, part, new)
                    changed = True
    return changed
