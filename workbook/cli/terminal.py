"""Tables for terminals and CI logs, through rich (the one module that imports it).

A CI log is not a terminal: rich then prints plain text (no colour codes to garble the log) at
a fixed width wide enough that check names and messages are not cut to ``...``. On a terminal
the verdict and statuses are coloured (``improved``, a verdict or a row, cyan beside the pass
green; ``suspect`` magenta beside the regressed yellow; a word without a style is printed plain, as it is). A CI log is public where the
repository is, so every cell and reason is redacted on its way out, like every file that leaves
a run; and the CLI runs every command inside :func:`redacted_output`, so whatever else it prints
(an error line, a warning, a live log) is redacted too.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from workbook.core.layout import ERROR_LOG
from workbook.core.redaction import LineRedactor, redact_text

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


class RedactedStream(io.TextIOBase):
    """A text stream that writes each line to ``raw`` redacted, as a run's files are: what a
    command prints reaches a CI log, public where the repository is. A partial line waits for
    its end, or for :meth:`flush` (a live log's chunk), and is then written redacted as it is.
    """

    def __init__(self, raw: TextIO) -> None:
        self._raw = raw
        self._pending = ""
        self._redactor = LineRedactor()  # a private key's block spans lines

    def write(self, text: str) -> int:
        data = self._pending + text
        end = data.rfind("\n") + 1
        self._pending = data[end:]
        if end:
            lines = [line + "\n" for line in data[: end - 1].split("\n")]  # \n only: tqdm's \r
            self._raw.write("".join(map(self._redactor.line, lines)))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._raw.write(self._redactor.line(self._pending))
            self._pending = ""
        self._raw.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return _is_tty(self._raw)

    def fileno(self) -> int:
        return self._raw.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self._raw, "encoding", "utf-8"))


@contextmanager
def redacted_output() -> Iterator[None]:
    """Everything printed to stdout and stderr inside, redacted line by line."""
    out, err = RedactedStream(sys.stdout), RedactedStream(sys.stderr)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            yield
    finally:
        out.flush()
        err.flush()
