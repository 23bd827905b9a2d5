"""Physical lines out of bytes, split on ``\\n`` only.

Python's text mode also splits on a lone ``\\r``; tqdm writes those inside a line, and the
console reader needs them to see a bar glued before ``step:``. Reading in large binary chunks
keeps a 1 GB log streaming at disk speed with constant memory.

Files are opened with :func:`open_regular`: a FIFO or a device (``/dev/zero``) given as a log
would block or never end, so only regular files are read, decided on the opened descriptor.
"""

from __future__ import annotations

import gc
import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import BytesIO
from operator import methodcaller
from pathlib import Path
from typing import BinaryIO

from workbook.errors import MetricsError

CHUNK = 1 << 20
# A line longer than this is skipped (and counted), never held: a verl step line is kilobytes,
# and a 100 MB line of a runaway print would otherwise cost several times its size in memory.
MAX_LINE_BYTES = 8 << 20
_DECODE: Callable[[bytes | bytearray], str] = methodcaller("decode", "utf-8", "replace")


class LineSplitter:
    """Feed bytes or text as they arrive; get back the lines completed so far.

    A line is complete when its ``\\n`` arrived; the rest waits for the next chunk, so a
    partial line from a writer that is still writing is never parsed early. Bytes are split
    before they are decoded, line by line: a ``\\n`` never splits a UTF-8 character, and a
    chunk with one non-ASCII character (a tqdm bar) then costs no wide string for all its lines.
    With ``keepends=True`` lines split from bytes keep their ``\\n`` (the parsers strip it
    anyway, and not cutting it off saves a copy of every line).
    """

    def __init__(self, *, keepends: bool = False, max_line: int = MAX_LINE_BYTES) -> None:
        self.keepends = keepends
        self.max_line = max_line
        self.skipped = 0  # lines longer than max_line, dropped unread
        self._skipping = False  # inside such a line: drop up to its newline
        self._text = ""  # the start of an incomplete line, as text ...
        # ... followed by the bytes that came after it (a bytearray: appending a chunk to a
        # long line without a newline stays linear, where bytes += bytes copies it every time)
        self._raw = bytearray()

    def feed(self, chunk: bytes | str) -> list[str]:
        if self._skipping:
            end = chunk.find("\n" if isinstance(chunk, str) else b"\n")  # type: ignore[arg-type]
            if end < 0:
                return []
            self._skipping, chunk = False, chunk[end + 1 :]
        if isinstance(chunk, str):
            text = self._take_rest() + chunk
            if "\n" not in text:
                self._text = self._held(text)
                return []
            lines = text.split("\n")
            self._text = lines.pop()
            return lines
        if b"\n" not in chunk:
            self._raw += chunk
            if len(self._text) + len(self._raw) > self.max_line:
                self._text, self._raw = "", bytearray()
                self._skip()
            return []
        parts = BytesIO(chunk).readlines()  # memchr: several times faster than split()
        if self._raw:
            parts[0] = bytes(self._raw) + parts[0]
        self._raw = bytearray() if parts[-1][-1:] == b"\n" else bytearray(parts.pop())
        lines = _decoded(parts if self.keepends else [part[:-1] for part in parts])
        if self._text:
            lines[0] = self._text + lines[0]
            self._text = ""
        return lines

    def _held(self, text: str) -> str:
        """``text`` (an incomplete line) kept, or dropped with the rest of its line when it
        is already longer than ``max_line``."""
        if len(text) <= self.max_line:
            return text
        self._skip()
        return ""

    def _skip(self) -> None:
        self.skipped += 1
        self._skipping = True

    def finish(self) -> list[str]:
        """End of stream: the last line even without its newline."""
        rest = self._take_rest()
        return [rest] if rest else []

    @property
    def pending(self) -> str:
        return self._text + _DECODE(self._raw)

    def _take_rest(self) -> str:
        rest = self._text + _DECODE(self._raw) if self._raw else self._text
        self._text, self._raw = "", bytearray()
        return rest


def _decoded(parts: list[bytes]) -> list[str]:
    """UTF-8, with U+FFFD for invalid bytes (strict first: its call is half the cost)."""
    try:
        return list(map(bytes.decode, parts))
    except UnicodeDecodeError:
        return list(map(_DECODE, parts))


def iter_lines(path: Path, *, keepends: bool = False) -> Iterator[str]:
    """Every physical line of a file (with its ``\\n`` only if ``keepends``), streaming; a line
    longer than :data:`MAX_LINE_BYTES` is skipped, and how many were is said on stderr."""
    splitter = LineSplitter(keepends=keepends)
    with open_regular(path) as handle:
        while True:
            chunk = handle.read(CHUNK)
            if not chunk:
                break
            yield from splitter.feed(chunk)
    yield from splitter.finish()
    if splitter.skipped:
        print(f"workbook: {path}: {splitter.skipped} line(s) longer than "
              f"{MAX_LINE_BYTES >> 20} MiB skipped, not read", file=sys.stderr)


def not_regular(mode: int) -> str | None:
    """What a file that is not a regular file is ("a FIFO", "a device"), None for a regular one."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file for binary reading; MetricsError for a FIFO, device or socket.

    ``O_NONBLOCK`` makes opening a FIFO return at once instead of waiting for a writer, and the
    type is read from the opened descriptor, so a file swapped for a FIFO after a check is
    still refused (the flag does nothing to a regular file's reads).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        kind = not_regular(os.fstat(fd).st_mode)
        if kind is not None:
            raise MetricsError(f"{path}: {kind}, not a log file: only regular files are read")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@contextmanager
def gc_paused() -> Iterator[None]:
    """Make the cyclic garbage collector rare while a reader builds many small dicts.

    The readers create almost no reference cycles, but with the default thresholds the
    collector walks the metrics parsed so far every few hundred allocations; collecting
    100 times less often saves a fifth of the parse time and still frees the few cycles
    (``ast.literal_eval`` of pprinted validation dicts makes some).
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], 70_000), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
