"""``load_metrics(path)``: one entry point for a log, a JSONL file or a run directory.

In a run directory the file logger's ``metrics.jsonl`` wins (full precision, no parsing
ambiguity) and ``run.log`` fills what it lacks (steps before the file logger started, a run
without the file logger, pprinted validation dicts), then TensorBoard event files
(:mod:`~workbook.metrics.sources` says which files count and which source names the metrics).
Files are recognised by content, not by name: a JSONL file saved as ``.log`` is still JSONL.

What is not a log, a JSONL file or a run directory is refused up front by :func:`input_kind`
(bad input, exit 2), from ``os.stat`` and a bounded prefix: a FIFO or device is never opened for
reading, and binary data is never parsed into a run with no steps that would look clean.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Literal

from workbook.core.layout import RUN_FILES
from workbook.errors import MetricsError
from workbook.metrics.console import read_console
from workbook.metrics.events import read_events
from workbook.metrics.jsonl import looks_like_jsonl, read_jsonl
from workbook.metrics.lines import iter_lines, not_regular, open_regular
from workbook.metrics.model import RunMetrics
from workbook.metrics.sources import CONSOLE, JSONL, TENSORBOARD, combine, run_files

SNIFF_BYTES = 64 * 1024
# A log is text: beyond this share of undecodable bytes and control characters it is binary.
BINARY_SHARE = 0.1
# Undecodable bytes and the control characters a console log never holds (it does hold tab,
# newline, carriage return (tqdm), form feed, backspace and escape (ANSI colours)).
_NOT_TEXT = re.compile("[\x01-\x07\x0b\x0e-\x1a\x1c-\x1f\x7f\ufffd]")
RUN_MARKERS = ("run", "log", "metrics")  # a folder holding none of these is not a run directory
InputKind = Literal["run directory", "file"]


def input_kind(path: Path) -> InputKind:
    """Whether ``path`` is a run directory or a text file, else MetricsError (exit 2).

    Refused, each said so: a missing path, a folder with no ``run.json``, ``run.log`` or
    ``metrics.jsonl`` (or with one that is not a regular file), a FIFO, device or socket (from
    ``os.stat``, never opened), and a file whose first 64 KiB are binary (a NUL byte or too
    many undecodable bytes).
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise MetricsError(f"{path}: no such file or directory") from None
    except OSError as exc:
        raise MetricsError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        if not any((path / RUN_FILES[key]).exists() for key in RUN_MARKERS):
            names = ", ".join(RUN_FILES[key] for key in RUN_MARKERS)
            raise MetricsError(f"{path}: not a run directory (none of {names}); give a run "
                               "directory, a verl console log or a metrics JSONL file")
        for key in (*RUN_MARKERS, "params"):  # each is read whole: a FIFO would block
            member = path / RUN_FILES[key]
            if member.exists() and not member.is_file():
                kind = not_regular(os.stat(member).st_mode)
                raise MetricsError(f"{member}: {kind}, not a regular file: cannot read the run")
        return "run directory"
    kind = not_regular(mode)
    if kind is not None:
        raise MetricsError(f"{path}: {kind}, not a log, JSONL file or run directory")
    why = binary_reason(read_prefix(path))
    if why is not None:
        raise MetricsError(f"{path}: not a log or JSONL file: binary data ({why} in the first "
                           f"{SNIFF_BYTES // 1024} KiB)")
    return "file"


def read_prefix(path: Path, size: int = SNIFF_BYTES) -> bytes:
    """At most ``size`` bytes from the start of a regular file (MetricsError otherwise)."""
    try:
        with open_regular(path) as handle:
            return handle.read(size)
    except OSError as exc:
        raise MetricsError(f"{path}: cannot read ({exc.strerror or exc})") from None


def binary_reason(prefix: bytes) -> str | None:
    """Why bytes are not text (``"NUL bytes"``, ``"62% undecodable bytes or ..."``), else None.

    A NUL byte never appears in a UTF-8 console log or JSONL file. Otherwise undecodable
    sequences and control characters are counted: a stray invalid byte (a log cut mid-character,
    a Latin-1 path) stays text, random or compressed data is far above ``BINARY_SHARE``.
    """
    if not prefix:
        return None
    if b"\0" in prefix:
        return "NUL bytes"
    decoded = prefix.decode("utf-8", "replace")
    if len(prefix) == SNIFF_BYTES:
        decoded = decoded[:-1] if decoded.endswith("\ufffd") else decoded  # a cut character
    share = len(_NOT_TEXT.findall(decoded)) / max(len(decoded), 1)
    return f"{share:.0%} undecodable bytes or control characters" if share > BINARY_SHARE else None


def load_metrics(path: Path) -> RunMetrics:
    """The metrics of a log file, a file-logger JSONL file or a run directory.

    Raises:
        MetricsError: the path does not exist, cannot be read, is not a log, JSONL file or run
            directory (:func:`input_kind`), or is a directory with neither ``metrics.jsonl``
            nor ``run.log``.
    """
    path = Path(path)
    if input_kind(path) == "run directory":
        # a run.log that is a FIFO or a link to a device is refused by the reader (never
        # opened for a blocking read), not silently skipped (sources.run_files)
        files = run_files(path)
        if files.jsonl is None and files.log is None and not files.events:
            raise MetricsError(f"{path}: neither {RUN_FILES['metrics']} nor {RUN_FILES['log']} "
                               "in this run directory")
        parts = {key: read_metrics_file(file) for key, file in
                 ((JSONL, files.jsonl), (CONSOLE, files.log)) if file is not None}
        notes = list(files.notes)
        if files.events:
            parts[TENSORBOARD], unread = read_events(files.events, path)
            notes += unread
        return combine(parts, notes)
    return read_metrics_file(path)


def read_metrics_file(path: Path) -> RunMetrics:
    """One file, JSONL or console text by its first non-empty line; sources name the file."""
    try:  # both readers strip the newline themselves
        return read_lines(iter_lines(path, keepends=True), path.name)
    except OSError as exc:
        raise MetricsError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def read_lines(lines: Iterator[str], name: str) -> RunMetrics:
    """A file's lines as metrics: file-logger records if its first non-empty line is one, else
    a console log; every line is consumed (a caller may be watching them go by)."""
    head: list[str] = []
    for line in lines:
        head.append(line)
        if line.strip():
            break
    stream = chain(head, lines)
    if head and looks_like_jsonl(head[-1]):
        metrics = read_jsonl(stream, name)
    else:
        metrics = read_console(stream, name)
    for _ in stream:
        pass
    return metrics


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
