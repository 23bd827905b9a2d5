"""Sections already computed in this process, kept while the run's files are unchanged.

A notebook's report cells compute every section of its run; the notebook's last cell then renders
``report.html`` in the same process, from the same sections. Each section is kept under its run
directory and a signature of what it reads, so the page reuses the cells' work (the plots above
all) instead of drawing it again, and anything written since -- a new judgement, more metrics --
makes it computed afresh.

The signature is run.json's content without the keys closing writes after the page is rendered
(so recording the end does not make the page's sections stale) and the other files a section
reads by size and modification time.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

from workbook.core.layout import CLOSING_WRITES, RUN_FILES, file_signature

# run.json keys written by closing after the report is rendered: no section shows them
# the run's other files a section reads, signed by size and modification time
READ_FILES = ("checks", "metrics", "log", "params", "command_json", "command_sh")
LIMIT = 64  # sections kept (a report has seven; a notebook session rarely holds many runs)

T = TypeVar("T")
_KEPT: OrderedDict[tuple[Path, Hashable], tuple[str, Any]] = OrderedDict()


def kept(run_dir: Path, key: Hashable, compute: Callable[[], T]) -> T:
    """What ``compute`` returns for ``run_dir``, computed only when nothing is kept for ``key``
    under the directory's current signature."""
    path = Path(run_dir).resolve()
    signed = signature(path)
    slot = (path, key)
    found = _KEPT.get(slot)
    if found is not None and found[0] == signed:
        _KEPT.move_to_end(slot)
        value: T = found[1]
        return value
    value = compute()
    _KEPT[slot] = (signed, value)
    _KEPT.move_to_end(slot)
    while len(_KEPT) > LIMIT:
        _KEPT.popitem(last=False)
    return value


def signature(run_dir: Path) -> str:
    """A digest of what the sections of ``run_dir`` read (see the module's docstring)."""
    path = Path(run_dir)
    run_file = path / RUN_FILES["run"]
    try:
        run: Any = json.loads(run_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        run = {"unreadable": file_signature(run_file)}  # a broken file: changed when its bytes change
    if isinstance(run, dict):
        run = {k: v for k, v in run.items() if k not in CLOSING_WRITES}
    files = [file_signature(path / RUN_FILES[key]) for key in READ_FILES]
    text = json.dumps([run, files], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def forget() -> None:
    """Drop every kept section (a test, or a process that wants a fresh page)."""
    _KEPT.clear()


