"""``publish``: a static, shareable tree of reports, redacted logs and the index.

The run directories keep the raw ``run.log`` (nothing is lost); what leaves the machine is a
copy in which every text file went through redaction: reports, ``run.json``, ``checks.json``,
``params.resolved.yaml``, ``command.*``, the log and each suite night's ``suite.json``. Links in
the index are relative, so the tree works from any web server path, an artifact store, a local
folder opened offline, or GitHub Pages (a ``.nojekyll`` marker keeps Pages from rewriting it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from workbook.errors import InputError
from workbook.report.index import write_index
from workbook.report.redaction import LineRedactor
from workbook.report.summary import scan
from workbook.runs import RUN_FILES
from workbook.suite import SUITE_FILE

# Files copied (redacted) into the published tree; metrics are numbers and copied as they are.
REDACTED_FILES = ("report", "run", "checks", "params", "command_json", "command_sh", "log")
PLAIN_FILES = ("metrics",)


def publish(runs_root: Path, dest: Path) -> Path:
    """Copy every run's report, redacted files and an index into ``dest``; return the index."""
    runs_root, dest = Path(runs_root), Path(dest)
    tree = scan(runs_root)
    runs = tree.runs
    if not runs:
        raise InputError(f"{runs_root}: no run directories found")
    if dest.resolve() == runs_root.resolve() or runs_root.resolve() in dest.resolve().parents:
        raise InputError(f"{dest}: the published tree must be outside the runs root {runs_root}")
    for run in runs:
        target = dest / run.relative_to(runs_root) if run != runs_root else dest / run.name
        target.mkdir(parents=True, exist_ok=True)
        for key in REDACTED_FILES:
            source = run / RUN_FILES[key]
            if source.is_file():
                redacted_copy(source, target / source.name)
        for key in PLAIN_FILES:
            source = run / RUN_FILES[key]
            if source.is_file():
                shutil.copyfile(source, target / source.name)
    for record in tree.holding(SUITE_FILE):  # the suite nights' own tables
        target = dest / record.relative_to(runs_root)
        target.parent.mkdir(parents=True, exist_ok=True)
        redacted_copy(record, target)
    (dest / ".nojekyll").write_text("")  # GitHub Pages: serve the tree as it is
    return write_index(dest)


def redacted_copy(source: Path, target: Path) -> Path:
    """Copy a text file line by line through redaction (a log can be gigabytes), atomically."""
    tmp = target.with_name(f".{target.name}.publishing")
    with (
        source.open(encoding="utf-8", errors="replace", newline="") as src,
        tmp.open("w", encoding="utf-8", newline="") as out,
    ):
        redactor = LineRedactor()  # a private key's lines are dropped up to its END line
        out.writelines(map(redactor.line, src))
    tmp.replace(target)
    return target
