"""Physical lines out of bytes, split on ``\\n`` only.

Python's text mode also splits on a lone ``\\r``; tqdm writes those inside a line, and the
console reader needs them to see a bar glued before ``step:``. Reading in large binary chunks
keeps a 1 GB log streaming at disk speed with constant memory.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import BytesIO
from operator import methodcaller
from pathlib import Path

CHUNK = 1 << 20
_DECODE: Callable[[bytes], str] = methodcaller("decode", "utf-8", "replace")


class LineSplitter:
    """Feed bytes or text as they arrive; get back the lines completed so far.

    A line is complete when its ``\\n`` arrived; the rest waits for the next chunk, so a
    partial line from a writer that is still writing is never parsed early. Bytes are split
    before they are decoded, line by line: a ``\\n`` never splits a UTF-8 character, and a
    chunk with one non-ASCII character (a tqdm bar) then costs no wide string for all its lines.
    With ``keepends=True`` lines split from bytes keep their ``\\n`` (the parsers strip it
    anyway, and not cutting it off saves a copy of every line).
    """

    def __init__(self, *, keepends: bool = False) -> None:
        self.keepends = keepends
        self._text = ""  # the start of an incomplete line, as text ...
        self._raw = b""  # ... followed by the bytes that came after it

    def feed(self, chunk: bytes | str) -> list[str]:
        if isinstance(chunk, str):
            text = self._take_rest() + chunk
            if "\n" not in text:
                self._text = text
                return []
            lines = text.split("\n")
            self._text = lines.pop()
            return lines
        if b"\n" not in chunk:
            self._raw += chunk
            return []
        parts = BytesIO(chunk).readlines()  # memchr: several times faster than split()
        if self._raw:
            parts[0] = self._raw + parts[0]
        self._raw = b"" if parts[-1][-1:] == b"\n" else parts.pop()
        lines = _decoded(parts if self.keepends else [part[:-1] for part in parts])
        if self._text:
            lines[0] = self._text + lines[0]
            self._text = ""
        return lines

    def finish(self) -> list[str]:
        """End of stream: the last line even without its newline."""
        rest = self._take_rest()
        return [rest] if rest else []

    @property
    def pending(self) -> str:
        return self._text + _DECODE(self._raw)

    def _take_rest(self) -> str:
        rest = self._text + _DECODE(self._raw) if self._raw else self._text
        self._text, self._raw = "", b""
        return rest


def _decoded(parts: list[bytes]) -> list[str]:
    """UTF-8, with U+FFFD for invalid bytes (strict first: its call is half the cost)."""
    try:
        return list(map(bytes.decode, parts))
    except UnicodeDecodeError:
        return list(map(_DECODE, parts))


def iter_lines(path: Path, *, keepends: bool = False) -> Iterator[str]:
    """Every physical line of a file (with its ``\\n`` only if ``keepends``), streaming."""
    splitter = LineSplitter(keepends=keepends)
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(CHUNK)
            if not chunk:
                break
            yield from splitter.feed(chunk)
    yield from splitter.finish()


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
