"""Tables for terminals and CI logs, through rich (the one module that imports it).

A CI log is not a terminal: rich then prints plain text (no colour codes to garble the log) at
a fixed width wide enough that check names and messages are not cut to ``...``. On a terminal
the verdict and statuses are coloured (``improved``, a verdict or a row, cyan beside the pass
green; ``suspect`` magenta beside the regressed yellow; a word without a style is printed plain, as it is). A CI log is public where the
repository is, so every cell and reason is redacted on its way out, like every file that leaves
a run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from workbook.core.layout import ERROR_LOG
from workbook.core.redaction import redact_text

CI_WIDTH = 240
STYLES = {
    "pass": "green", "passed": "bold green", "improved": "bold cyan", "suspect": "bold magenta",
    "fail": "red",
    "failed": "bold red",
    "error": "yellow", "regressed": "bold yellow", "stopped": "bold blue",
    "not_measured": "dim", "not_comparable": "dim", "skipped": "dim",
    # workbook align: its verdicts and the status of each metric
    "aligned": "bold green", "not aligned": "bold yellow", "within": "green", "beyond": "red",
    "missing": "yellow", "undefined": "yellow", "reported": "dim",
}


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[object]],
          *, status_column: int | None = None) -> Table:
    """A table whose ``status_column`` cells are coloured by their value."""
    out = Table(title=title or None, box=box.SIMPLE_HEAD, header_style="bold",
                title_justify="left")
    for column in columns:
        out.add_column(column, overflow="fold")
    for row in rows:
        cells = [Text("" if c is None else redact_text(str(c))) for c in row]  # Text: no markup
        if status_column is not None:
            status = cells[status_column].plain
            cells[status_column] = Text(status.replace("_", " ").upper(),
                                        style=STYLES.get(status.lower(), ""))
        out.add_row(*cells)
    return out


def show(*items: object, file: object = None) -> None:
    """Print tables or lines to ``file`` (stdout by default) the way the terminal can take."""
    stream = file or sys.stdout
    console = Console(file=stream, width=None if _is_tty(stream) else CI_WIDTH,  # type: ignore[arg-type]
                      highlight=False, soft_wrap=False)
    for item in items:
        console.print(item)


def verdict_line(status: str, reason: str) -> Text:
    """``verdict: PASSED - all 12 checks passed`` (what CI logs are grepped for)."""
    return Text.assemble("verdict: ", (status.upper(), STYLES.get(status, "")),
                         f" - {redact_text(reason)}")


def closing_errors(errors: Iterable[str], folder: Path) -> None:
    """Each closing step that failed, on stderr, with where its traceback was kept: the run's
    verdict still stands, so the user needs the file to see what went wrong after it."""
    for error in errors:
        print(f"workbook: {error} (traceback in {folder / ERROR_LOG})", file=sys.stderr)


def _is_tty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
