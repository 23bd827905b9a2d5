"""Python values as Hydra override values: each override stays ONE argv item, no shell."""

from __future__ import annotations

import re
from typing import Any

# Characters Hydra's override grammar treats specially in an unquoted value.
_PLAIN = re.compile(r"^[A-Za-z0-9_./:+\-@${}~*]+$")


def value(v: Any) -> str:
    """Render ``v`` as Hydra reads it back: ``True``, ``null``, ``0.0003``, ``["console","file"]``."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_item(x) for x in v) + "]"
    text = str(v)
    return text if _PLAIN.match(text) else _quote(text)


def _item(v: Any) -> str:
    return _quote(v) if isinstance(v, str) else value(v)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def override(key: str, v: Any) -> str:
    return f"{key}={value(v)}"


def unquoted(text: str) -> str:
    """A raw override's value as Hydra reads a quoted string: without its quotes (``'dp'``,
    ``"true"``), so a scenario's quoting never changes what a value means."""
    return text.strip("'\"")


def key_of(raw: str) -> str:
    """The config key a raw override sets (``+a.b=1`` -> ``a.b``)."""
    return raw.split("=", 1)[0].lstrip("+~").strip()
