"""Physical lines out of bytes, split on ``\\n`` only.

Python's text mode also splits on a lone ``\\r``; tqdm writes those inside a line, and the
console reader needs them to see a bar glued before ``step:``. Reading in large binary chunks
keeps a 1 GB log streaming at disk speed with constant memory.
"""

from __future__ import annotations

import codecs
import gc
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

CHUNK = 1 << 20


class LineSplitter:
    """Feed bytes or text as they arrive; get back the lines completed so far.

    A line is complete when its ``\\n`` arrived; the rest waits for the next chunk, so a
    partial line from a writer that is still writing is never parsed early.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._rest = ""

    def feed(self, chunk: bytes | str) -> list[str]:
        text = chunk if isinstance(chunk, str) else self._decoder.decode(chunk)
        if "\n" not in text:
            self._rest += text
            return []
        parts = (self._rest + text).split("\n")
        self._rest = parts.pop()
        return parts

    def finish(self) -> list[str]:
        """End of stream: the last line even without its newline."""
        rest = self._rest + self._decoder.decode(b"", final=True)
        self._rest = ""
        return [rest] if rest else []

    @property
    def pending(self) -> str:
        return self._rest


def iter_lines(path: Path) -> Iterator[str]:
    """Every physical line of a file (without its ``\\n``), streaming."""
    splitter = LineSplitter()
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
