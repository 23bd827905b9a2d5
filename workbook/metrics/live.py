"""Follow a run while it is going: each step as soon as the line that carries it is complete.

``LiveReader`` follows a growing ``run.log``, ``metrics.jsonl`` or a run directory (both files,
the JSONL winning where both have a value). It keeps a byte offset per file and only reads what
was appended since the last :meth:`LiveReader.poll`; a half-written line waits for its newline.
``ChunkReader`` does the same for text that arrives as chunks (Ray ``tail_job_logs``, a
subprocess pipe). Both keep the run so far in ``.metrics`` for plots to redraw from.

A step comes back from ``poll``/``feed`` with the values that are new or changed; a line that
repeats known values (Ray job logs can print the trainer's lines twice) yields nothing, and a
later line for the same step (verl prints validation apart) yields just what it added.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Protocol

from workbook.core.layout import RUN_FILES
from workbook.metrics.console import ConsoleParser
from workbook.metrics.jsonl import JsonlParser, looks_like_jsonl
from workbook.metrics.lines import LineSplitter
from workbook.metrics.model import RunMetrics
from workbook.metrics.rows import StepLine

StepUpdate = tuple[int, dict[str, float]]
JSONL_SOURCE = RUN_FILES["metrics"]
READ_LIMIT = 8 << 20


class _Parser(Protocol):
    def feed(self, raw: str) -> list[StepLine]: ...
    def finish(self) -> list[StepLine]: ...


class _Stream:
    """Lines -> rows for one source, choosing console or JSONL from the first non-empty line."""

    def __init__(self, source: str, kind: str | None) -> None:
        self.source = source
        self.kind = kind
        self.splitter = LineSplitter()
        self.parser: _Parser | None = self._make(kind) if kind else None
        self.lineno = 0

    @staticmethod
    def _make(kind: str) -> _Parser:
        return JsonlParser() if kind == "jsonl" else ConsoleParser(wraps=False)

    def lines(self, lines: list[str]) -> list[StepLine]:
        rows: list[StepLine] = []
        for line in lines:
            if self.parser is None:
                if not line.strip():
                    self.lineno += 1
                    continue
                self.kind = "jsonl" if looks_like_jsonl(line) else "console"
                self.parser = self._make(self.kind)
                for _ in range(self.lineno):  # keep line numbers physical
                    self.parser.feed("")
            rows.extend(self.parser.feed(line))
        return rows

    def finish(self) -> list[StepLine]:
        rows = self.lines(self.splitter.finish())
        return rows + (self.parser.finish() if self.parser else [])


class _Merger:
    """Puts rows into one RunMetrics; JSONL values are never replaced by console ones."""

    def __init__(self) -> None:
        self.metrics = RunMetrics()

    def add(self, stream: _Stream, rows: list[StepLine], out: dict[int, dict[str, float]]) -> None:
        for row in rows:
            values = row.values
            if stream.kind != "jsonl":
                known: Mapping[str, str] = self.metrics.sources.get(row.step, {})
                values = {
                    k: v for k, v in values.items() if not known.get(k, "").startswith(JSONL_SOURCE)
                }
            if not values:
                continue
            changed = self.metrics.put_many(
                row.step, values, f"{stream.source}:{row.line}", row.originals, changes=True
            )
            if changed:
                out.setdefault(row.step, {}).update(changed)
        parser = stream.parser
        if isinstance(parser, ConsoleParser) and parser.validation:  # pprinted validation dicts
            for kind, values in parser.validation.items():
                self.metrics.validation.setdefault(kind, {}).update(values)


class _Follower:
    """One growing file: offset, inode, and the partial line at its end."""

    def __init__(self, path: Path, kind: str | None) -> None:
        self.path = path
        self.kind = kind
        self.offset = 0
        self.inode: int | None = None
        self.stream = _Stream(path.name, kind)

    def read(self) -> tuple[list[str], bool]:
        """New complete lines, and whether the file was replaced/truncated (start over)."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return [], False
        restarted = False
        if (self.inode is not None and stat.st_ino != self.inode) or stat.st_size < self.offset:
            self.offset, restarted = 0, True
            self.stream = _Stream(self.path.name, self.kind)
        self.inode = stat.st_ino
        lines: list[str] = []
        if stat.st_size == self.offset:
            return lines, restarted
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            while True:
                chunk = handle.read(READ_LIMIT)
                if not chunk:
                    break
                self.offset += len(chunk)
                lines.extend(self.stream.splitter.feed(chunk))
        return lines, restarted


class LiveReader:
    """Follow ``run.log``, ``metrics.jsonl`` or a run directory as it grows.

    Example:
        reader = LiveReader(run_dir)
        while running:
            for step, values in reader.poll():
                redraw(reader.metrics)
            time.sleep(0.5)
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            self._followers = [
                _Follower(self.path / RUN_FILES["metrics"], "jsonl"),
                _Follower(self.path / RUN_FILES["log"], "console"),
            ]
        else:
            kind = "jsonl" if self.path.suffix == ".jsonl" else None
            self._followers = [_Follower(self.path, kind)]
        self._merger = _Merger()

    @property
    def metrics(self) -> RunMetrics:
        """The run so far (redraw plots from this)."""
        return self._merger.metrics

    def poll(self) -> list[StepUpdate]:
        """Steps completed since the last call, with their new or changed values."""
        out: dict[int, dict[str, float]] = {}
        for follower in self._followers:
            lines, restarted = follower.read()
            if restarted:  # verl truncates metrics.jsonl when a new run opens it
                self._merger = _Merger()
                for other in self._followers:
                    other.offset, other.inode = 0, None
                    other.stream = _Stream(other.path.name, other.kind)
                return self.poll()
            self._merger.add(follower.stream, follower.stream.lines(lines), out)
        return list(out.items())

    def close(self) -> list[StepUpdate]:
        """The writer is done: also take a last line that has no newline."""
        out: dict[int, dict[str, float]] = {}
        for follower in self._followers:
            lines, _ = follower.read()
            rows = follower.stream.lines(lines) + follower.stream.finish()
            self._merger.add(follower.stream, rows, out)
        return list(out.items())

    def follow(
        self,
        *,
        interval: float = 0.25,
        done: Callable[[], bool] | None = None,
        timeout: float | None = None,
    ) -> Iterator[StepUpdate]:
        """Yield steps as they complete until ``done()`` is true (then drain) or ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            finished = done() if done else False
            yield from self.poll()
            if finished:
                yield from self.close()
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(interval)


class ChunkReader:
    """Steps out of text that arrives in chunks (Ray job log tails, a subprocess pipe).

    ``feed`` takes raw chunks: a line counts once its ``\\n`` arrived. ``feed_line`` takes
    one whole line whether or not it ends in a newline (for callers that iterate lines).
    """

    def __init__(self, source: str = RUN_FILES["log"], kind: str | None = None) -> None:
        self._stream = _Stream(source, kind)
        self._merger = _Merger()

    @property
    def metrics(self) -> RunMetrics:
        return self._merger.metrics

    def feed(self, chunk: str | bytes) -> list[StepUpdate]:
        """A chunk of output; returns the steps its complete lines finished."""
        return self._rows(self._stream.lines(self._stream.splitter.feed(chunk)))

    def feed_line(self, line: str) -> list[StepUpdate]:
        """One complete output line (trailing newline optional)."""
        pending = self._stream.splitter.feed(line if line.endswith("\n") else line + "\n")
        return self._rows(self._stream.lines(pending))

    def close(self) -> list[StepUpdate]:
        """End of the stream: a last line without newline still counts."""
        return self._rows(self._stream.finish())

    def _rows(self, rows: list[StepLine]) -> list[StepUpdate]:
        out: dict[int, dict[str, float]] = {}
        self._merger.add(self._stream, rows, out)
        return list(out.items())
