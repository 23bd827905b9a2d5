"""A redacted copy of any file, by its form: what ``publish`` (and any copy that leaves the run
directory) writes instead of the raw file.

``.json`` and ``.ipynb`` are redacted inside their structure and stay valid, ``.yaml``/``.yml``
likewise, ``.xml`` by element; ``.jsonl`` line by line (a line that is no JSON as text); anything
else, and any structured file too big to parse whole, is streamed line by line as text, so a
multi-gigabyte log costs one line of memory. The source is opened without following a link and
must be a regular file; the copy is written to a unique temp file and renamed into place.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from workbook.core.atomic import atomic_writer
from workbook.core.redaction.structure import (
    redact_json_line,
    redact_json_text,
    redact_notebook_text,
    redact_xml_text,
    redact_yaml_text,
)
from workbook.core.redaction.text import LineRedactor, redact_text
from workbook.errors import InputError

# Structured files above this size are streamed as text: a run.json is kilobytes, and parsing
# a huge document whole would cost memory the copy does not need.
MAX_STRUCTURED_BYTES = 64 << 20

_DOCUMENTS: dict[str, Callable[[str], str]] = {
    "json": redact_json_text,
    "ipynb": redact_notebook_text,
    "yaml": redact_yaml_text,
    "xml": redact_xml_text,
}
_SUFFIXES = {".json": "json", ".ipynb": "ipynb", ".yaml": "yaml", ".yml": "yaml",
             ".xml": "xml", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def form_of(path: Path | str) -> str:
    """``json``, ``jsonl``, ``yaml``, ``ipynb``, ``xml`` or ``text``, by the file's suffix."""
    return _SUFFIXES.get(Path(path).suffix.lower(), "text")


def redact_document(text: str, form: str) -> str:
    """``text`` (a whole file's content in ``form``, see :func:`form_of`) redacted."""
    if form == "jsonl":
        redactor = LineRedactor()
        return "".join(redact_json_line(line, redactor) for line in text.splitlines(keepends=True))
    return _DOCUMENTS.get(form, redact_text)(text)


def redact_file(source: Path, target: Path, *, form: str | None = None) -> Path:
    """Write a redacted copy of ``source`` to ``target`` (atomically); return ``target``.

    The form comes from ``source``'s suffix (else ``target``'s) unless given. ``target`` may be
    ``source`` (redaction in place). Undecodable bytes become U+FFFD.

    Raises:
        InputError: ``source`` is a link, or not a regular file (a FIFO, a device, a folder).
        OSError: it cannot be read, or ``target`` cannot be written.
    """
    source, target = Path(source), Path(target)
    if form is None:
        form = form_of(source) if source.suffix else form_of(target)
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        if source.is_symlink():
            raise InputError(f"{source}: a link, not copied") from None
        raise err
    try:
        return redact_opened(fd, target, form, name=str(source))
    finally:
        os.close(fd)


def redact_opened(fd: int, target: Path, form: str, *, name: str = "") -> Path:
    """Write a redacted copy of the file open on ``fd`` (the caller's; left open) to ``target``.

    For callers that opened the source themselves without following a link (``publish`` opens
    relative to a folder descriptor), so what is copied is the very file they checked.

    Raises:
        InputError: ``fd`` is not open on a regular file (a FIFO, a device, a folder).
    """
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{name or target}: not a regular file, not copied")
    os.set_blocking(fd, True)
    with os.fdopen(os.dup(fd), encoding="utf-8", errors="replace", newline="") as handle:
        with atomic_writer(Path(target), newline="") as out:
            if form in _DOCUMENTS and info.st_size <= MAX_STRUCTURED_BYTES:
                out.write(redact_document(handle.read(), form))
            else:
                out.writelines(_stream(handle, form))
    return Path(target)


def _stream(lines: Iterable[str], form: str) -> Iterable[str]:
    redactor = LineRedactor()  # a private key's lines are dropped up to its END line
    if form == "jsonl":
        return (redact_json_line(line, redactor) for line in lines)
    return map(redactor.line, lines)
