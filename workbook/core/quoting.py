"""Values as text: quoted in error messages, and shown as recorded in tables and lists.

A message names the bad value so the user can find it, but a value can be a megabyte string, a
1,990-digit integer or a YAML alias structure that expands to billions of nodes: ``repr`` of
those costs minutes and gigabytes. :mod:`reprlib` stops at a few items per level and a few
levels; the result is then cut to ``limit`` characters with ``...``. A recorded setting,
version or fact (what changed since the last green night, two runs side by side) is shown as
itself instead, with a word for a value that is not there.
"""

from __future__ import annotations

import reprlib

LIMIT = 80

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = LIMIT
_REPR.maxother = LIMIT
_REPR.maxlong = 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = 6
_REPR.maxdict = 4


def cut(text: str, limit: int = LIMIT) -> str:
    """``text`` itself when short, else its first ``limit`` characters and ``...``."""
    return text if len(text) <= limit else text[:limit] + "..."


def value_text(value: object, absent: str) -> str:
    """A recorded value as a cell shows it: a float in ``g`` form (``0.0003``, ``1e-06``),
    anything else as its text, None as ``absent`` (the word for none: ``unset``, ``-``)."""
    if value is None:
        return absent
    return f"{value:g}" if isinstance(value, float) else str(value)


def short(value: object, limit: int = LIMIT) -> str:
    """A bounded ``repr`` of ``value`` (strings quoted, containers abridged)."""
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not replace the real error
        text = f"<{type(value).__name__}>"
    return cut(text, limit)
