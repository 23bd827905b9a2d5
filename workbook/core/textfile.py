"""Reading a file (a scenario, a suite, a file of the runs tree) without hanging, exhausting
memory or raising an internal error.

A FIFO or a device named where a file is expected would block ``open`` or ``read`` forever, a
huge file would be read whole, and a file in another encoding raised a bare
``UnicodeDecodeError`` that named no file. Here the file is opened non-blocking, must be a
regular file (checked on the open descriptor, so nothing can be swapped in between), is read up
to a size cap, and must be UTF-8; each refusal is an :class:`InputError` naming the file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from workbook.errors import InputError

MAX_BYTES = 1 << 20  # 1 MiB: a scenario or suite file is a few kB


def read_bytes(path: Path | str, *, max_bytes: int = MAX_BYTES, what: str = "file",
               links: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``; InputError naming it when
    it is missing, not a regular file, unreadable or larger (or a link, unless ``links``)."""
    path = Path(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags if links else flags | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise InputError(f"no such {what}: {path}") from None
    except OSError as exc:
        if not links and exc.errno == errno.ELOOP:
            raise InputError(f"{path}: the {what} is a link, not read: give the file "
                             "itself") from None
        raise InputError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # before fdopen, which refuses a folder itself
        os.close(fd)
        raise InputError(f"{path}: the {what} is not a regular file (a folder, FIFO or "
                         "device); give a file")
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    if len(data) > max_bytes:
        raise InputError(f"{path}: the {what} is larger than {max_bytes // 1024} KiB")
    return data


def read_text(path: Path | str, *, max_bytes: int = MAX_BYTES, what: str = "file",
              links: bool = True) -> str:
    """The UTF-8 text of the regular file ``path``; InputError naming it when that cannot be."""
    data = read_bytes(path, max_bytes=max_bytes, what=what, links=links)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{path}: the {what} is not UTF-8 text (byte {exc.start} on line "
                         f"{line} is 0x{data[exc.start]:02x}); save it as UTF-8") from None

