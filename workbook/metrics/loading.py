"""``load_metrics(path)``: one entry point for a log, a JSONL file or a run directory.

In a run directory the file logger's ``metrics.jsonl`` wins (full precision, no parsing
ambiguity) and ``run.log`` fills what it lacks (steps before the file logger started, a run
without the file logger, pprinted validation dicts). Files are recognised by content, not by
name: a JSONL file saved as ``.log`` is still JSONL.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from pathlib import Path

from workbook.errors import MetricsError
from workbook.metrics.console import read_console
from workbook.metrics.jsonl import looks_like_jsonl, read_jsonl
from workbook.metrics.lines import iter_lines
from workbook.metrics.model import RunMetrics
from workbook.runs import RUN_FILES


def load_metrics(path: Path) -> RunMetrics:
    """The metrics of a log file, a file-logger JSONL file or a run directory.

    Raises:
        MetricsError: the path does not exist, cannot be read, or is a directory with neither
            ``metrics.jsonl`` nor ``run.log``.
    """
    path = Path(path)
    if path.is_dir():
        jsonl, log = path / RUN_FILES["metrics"], path / RUN_FILES["log"]
        if not jsonl.is_file() and not log.is_file():
            raise MetricsError(f"{path}: neither {jsonl.name} nor {log.name} in this run directory")
        run = read_metrics_file(jsonl) if jsonl.is_file() else RunMetrics()
        if log.is_file():
            run.fill_from(read_metrics_file(log))
        return run
    if not path.is_file():
        raise MetricsError(f"{path}: no such file or directory")
    return read_metrics_file(path)


def read_metrics_file(path: Path) -> RunMetrics:
    """One file, JSONL or console text by its first non-empty line; sources name the file."""
    try:
        lines = iter_lines(path, keepends=True)  # both readers strip the newline themselves
        head: list[str] = []
        for line in lines:
            head.append(line)
            if line.strip():
                break
        stream = chain(head, lines)
        if head and looks_like_jsonl(head[-1]):
            return read_jsonl(stream, path.name)
        return read_console(stream, path.name)
    except OSError as exc:
        raise MetricsError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def is_jsonl_file(path: Path) -> bool:
    """Whether a file holds file-logger records (first non-empty line), False if unreadable."""
    try:
        for line in _head(path):
            if line.strip():
                return looks_like_jsonl(line)
    except OSError:
        return False
    return False


def _head(path: Path) -> Iterator[str]:
    lines = iter_lines(path)
    for count, line in enumerate(lines):
        if count > 1000:
            return
        yield line
