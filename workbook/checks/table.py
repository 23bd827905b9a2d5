"""The checks table as plain text, for terminals and CI logs (no colour codes to garble)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbook.checks.verdict import Verdict

_COLUMNS = ("STATUS", "CHECK", "VALUE", "EXPECTED", "MESSAGE")
_WIDTH = {"CHECK": 60, "EXPECTED": 48}


def value_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def format_table(verdict: "Verdict") -> str:
    """Rows as aligned columns, then the verdict line CI greps for."""
    lines = [[row.status.upper(), row.name, value_text(row.value), row.expected, row.message]
             for row in verdict.rows]
    cells = [[_clip(c, _WIDTH.get(h)) for h, c in zip(_COLUMNS, line)] for line in lines]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(_COLUMNS)]
    out = ["  ".join(h.ljust(w) for h, w in zip(_COLUMNS, widths)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells]
    out.append(f"verdict: {verdict.status.upper()} - {verdict.reason}")
    return "\n".join(out)


def _clip(text: str, width: int | None) -> str:
    if width is None or len(text) <= width:
        return text
    return text[: width - 3] + "..."
