"""Links from one page of a runs tree to another file of it: how every page writes an href.

Relative, so the tree can be copied or published whole and its pages still open each other;
percent-encoded, since a run, scenario or folder name holding ``#``, ``?``, ``%``, a space or
``:`` would otherwise be read as a fragment, query or scheme. A run's report is linked only when
it is a regular file of its own: never through a symlink, which publish does not follow, so the
published link would lead nowhere (or, locally, out of the tree).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from workbook.core.layout import RUN_FILES


def href(path: Path | str, base: Path | str) -> str:
    """A relative URL that opens ``path`` from a page in the folder ``base``."""
    relative = os.path.relpath(Path(path).resolve(), Path(base).resolve())
    return quote(Path(relative).as_posix(), safe="/")


def report_href(run_dir: Path | str, base: Path | str) -> str | None:
    """The run's ``report.html`` from a page in ``base``; None when the run has no report of
    its own (none yet, or a symlink)."""
    report = Path(run_dir) / RUN_FILES["report"]
    if report.is_symlink() or not report.is_file():
        return None
    return href(report, base)


__all__ = ["href", "report_href"]
