"""Atomic writes: readers (a report, the index, a concurrent publish) never see half a file.

Each write goes to its own temp file in the target's folder (``mkstemp``: a unique name, so two
writers of one file never share one) and is renamed over the target, which replaces a link
there instead of writing through it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO


@contextmanager
def atomic_writer(path: Path, *, newline: str | None = None) -> Iterator[TextIO]:
    """A UTF-8 text handle whose content replaces ``path`` when the block ends without error
    (and is thrown away when it raises). ``newline=""`` writes line ends as given."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as handle:
            yield handle
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; these files are meant to be read and published
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temp file in the same folder and a rename."""
    with atomic_writer(path) as handle:
        handle.write(text)
    return Path(path)
