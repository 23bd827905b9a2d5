"""Atomic writes: readers (a report, the index, a concurrent publish) never see half a file.

Each write goes to its own temp file in the target's folder (``mkstemp``: a unique name, so two
writers of one file never share one) and is renamed over the target, which replaces a link
there instead of writing through it.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO


@contextmanager
def atomic_writer(path: Path, *, newline: str | None = None, sync: bool = False
                  ) -> Iterator[TextIO]:
    """A UTF-8 text handle whose content replaces ``path`` when the block ends without error
    (and is thrown away when it raises). ``newline=""`` writes line ends as given; ``sync``
    puts the content and the rename on disk before returning (a record that must survive a
    power cut, such as the ledger)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as handle:
            yield handle
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; these files are meant to be read and published
        os.replace(tmp, path)
        if sync:
            sync_folder(path.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, text: str, *, sync: bool = False) -> Path:
    """Write ``text`` to ``path`` through a temp file in the same folder and a rename."""
    with atomic_writer(path, sync=sync) as handle:
        handle.write(text)
    return Path(path)


def sync_folder(folder: Path) -> None:
    """Put a folder's entries (a file created or renamed in it) on disk."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def flock_within(fd: int, wait_s: float) -> bool:
    """Take an exclusive ``flock`` on ``fd``, trying for up to ``wait_s`` seconds (0: once);
    False when another process still holds it. The writers of one shared file (the ledger, a
    published site) each wait a bounded time rather than block for ever on a stuck peer."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
