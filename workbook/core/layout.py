"""The run directory: ``<root>/<scenario>/<run_id>/`` and what each stage writes into it.

    params.resolved.yaml   the scenario after defaults and overrides (secrets redacted)
    command.json           {"argv": [...], "env": {...}} (secrets redacted)
    command.sh             the same, as a shell command a user can paste
    run.log                everything the run printed, as it printed it
    metrics.jsonl          verl's file logger ({"step": N, "data": {...}} per line)
    run.json               status, exit code, times, host, versions, diagnosis
    checks.json            check rows and the verdict
    notebook.ipynb         the executed notebook
    report.html            the rendered report

Run ids sort by start time: ``20261129T181829Z-1a2b3c``. Every file here but ``run.log`` and
``metrics.jsonl`` (the run's raw output) leaves the machine in reports, JUnit and the published
site, so it is written through one guard: :func:`write_json` for JSON, :func:`write_redacted`
for any other form, both redacted by :mod:`workbook.core.redaction` and atomic.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, TypeAlias

from workbook.core.atomic import write_atomic
from workbook.core.clock import now_iso  # the one writer of times; launchers import it here
from workbook.core.redaction import dump_json, form_of, redact_document
from workbook.core.textfile import read_text
from workbook.errors import InputError

__all__ = ["ALIGNMENTS_DIR", "ALIGNMENT_FILE", "ALIGNMENT_PAGE", "BISECTS_DIR", "BISECT_FILE",
           "BISECT_PAGE", "BISECT_STEPS_DIR", "BISECT_WORKTREES_DIR", "bisect_dir", "CLUSTER_FILE",
           "COMPARISONS_DIR", "PROPOSALS_DIR", "PROPOSAL_FILE", "PROPOSAL_PAGE", "proposal_dir",
           "proposals_of", "COMPARISON_FILE", "COMPARISON_NOTEBOOK",
           "COMPARISON_PAGE", "ERROR_LOG", "INDEX", "RAYJOB_FILE", "ROLLOUTS_DIR", "RUN_FILES", "RUN_MARKERS",
           "PRUNED_FILE", "RunDir", "SEEDED_FILE", "SITE_LOCK", "STOP_FILE", "SUITES_DIR", "SUITE_FILE", "SUMMARY_CACHE", "SWEEPS_DIR",
           "SWEEP_FILE", "TREND_CACHE", "default_root", "is_run_dir", "walk_runs", "lane_cluster_file",
           "new_run_id", "now_iso", "read_json_object", "run_dir_of", "RunRef", "write_atomic", "write_json", "write_redacted"]  # fmt: skip

RUN_FILES = {
    "params": "params.resolved.yaml",
    "command_json": "command.json",
    "command_sh": "command.sh",
    "log": "run.log",
    "metrics": "metrics.jsonl",
    "run": "run.json",
    "checks": "checks.json",
    "notebook": "notebook.ipynb",
    "report": "report.html",
}
# The largest JSON file of the runs tree a reader takes (a run.json is a few kB, a checks.json
# with per-step values some hundred kB): a larger one was not written by the workbook.
TREE_MAX_BYTES = 64 << 20
# What else a run directory may hold, besides RUN_FILES.
ERROR_LOG = "workbook-error.log"  # a workbook failure's traceback, kept with the run
STOP_FILE = "stop.request"  # written to ask a running run to stop (the notebook's stop button)
ROLLOUTS_DIR = "rollouts"  # the pinned rollout dump a run replays (a link or a copy)
CLUSTER_FILE = "cluster.json"  # the state of a local Ray cluster a run, suite or sweep started
RAYJOB_FILE = "rayjob.yaml"  # the KubeRay manifest a run was submitted as

# The runs tree above run directories: <root>/suites/<suite>/<night>/, <root>/sweeps/<params>/<id>/,
# <root>/comparisons/<id>/, <root>/alignments/<id>/, each with its record; the index at the root.
SUITES_DIR, SWEEPS_DIR, COMPARISONS_DIR = "suites", "sweeps", "comparisons"
SUITE_FILE = "suite.json"
SWEEP_FILE = "sweep.json"
COMPARISON_FILE = "comparison.json"
COMPARISON_NOTEBOOK = "comparison.ipynb"
COMPARISON_PAGE = "comparison.html"
INDEX = "index.html"
TREND_CACHE = ".trends"  # index charts by content hash: a refresh redraws only what changed
SUMMARY_CACHE = ".summary.json"  # a run's index line, cached beside it
# A published site is the nightly's memory (report/site.py): a run whose pages its retention
# removed keeps PRUNED_FILE (what went, when); a runs root seeded from a site lists the runs it
# took in SEEDED_FILE (publish leaves them out: the site has them); SITE_LOCK serialises
# publishes into one site.
PRUNED_FILE = "pruned.json"
SEEDED_FILE = ".seeded.json"
SITE_LOCK = ".publish.lock"
# <root>/alignments/<id>/: two runs judged for precision alignment (``workbook align``)
ALIGNMENTS_DIR = "alignments"
ALIGNMENT_FILE = "alignment.json"
ALIGNMENT_PAGE = "alignment.html"
# <root>/proposals/<scenario>.<hardware>/<UTC stamp>/: a candidate baseline, its review page and
# the record the index reads (which blessed content it was proposed against)
PROPOSALS_DIR = "proposals"
PROPOSAL_PAGE = "review.html"
PROPOSAL_FILE = "proposal.json"

# <root>/bisects/<scenario>/<good7>-<bad7>/: a bisect of verl's commits between two nights, its
# state, its page, each step's run under steps/<n>-<sha7>/<run_id>/ and the git worktrees the
# steps import verl from (hidden: the index and the ledger never walk a verl checkout)
BISECTS_DIR = "bisects"
BISECT_FILE = "bisect.json"
BISECT_PAGE = "bisect.html"
BISECT_STEPS_DIR = "steps"
BISECT_WORKTREES_DIR = ".worktrees"


def proposals_of(root: Path, scenario: str, hardware: str) -> Path:
    """The folder holding a scenario's proposals on one hardware, one subfolder each."""
    return Path(root) / PROPOSALS_DIR / f"{scenario}.{hardware}"


def proposal_dir(root: Path, scenario: str, hardware: str, now: datetime | None = None) -> Path:
    """Where ``workbook baseline propose`` writes by default: one folder per proposal, by time."""
    now = now or datetime.now(timezone.utc)
    return proposals_of(root, scenario, hardware) / now.strftime("%Y%m%dT%H%M%SZ")


def bisect_dir(root: Path, scenario: str, good: str, bad: str) -> Path:
    """Where ``workbook bisect`` keeps a bisect by default: one folder per scenario and range."""
    return Path(root) / BISECTS_DIR / scenario / f"{good[:7]}-{bad[:7]}"


def lane_cluster_file(lane: int) -> str:
    """The cluster state file of one lane of a parallel sweep."""
    return f"cluster-{lane}.json"


def default_root() -> Path:
    """Where runs land unless told otherwise: ``$WORKBOOK_RUNS``, else the project's ``runs/``
    (never the working directory's: a notebook kernel runs in ``notebooks/``)."""
    from workbook.core.project import runs_root

    return runs_root()


def new_run_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


@dataclass(frozen=True)
class RunDir:
    """Paths of one run directory."""

    path: Path

    @classmethod
    def create(cls, root: Path, scenario: str, run_id: str | None = None) -> RunDir:
        path = Path(root).expanduser() / scenario / (run_id or new_run_id())
        path.mkdir(parents=True, exist_ok=False)
        return cls(path.resolve())

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def scenario(self) -> str:
        return self.path.parent.name

    def file(self, key: str) -> Path:
        return self.path / RUN_FILES[key]

    def read_json(self, key: str) -> dict[str, Any]:
        """One of the run's JSON files, {} when it is not there; InputError naming the file
        when it is there but a link (a run's records are its own), not a regular file, too
        large, not JSON or not an object."""
        path = self.file(key)
        if not path.exists() and not path.is_symlink():
            return {}
        text = read_text(path, max_bytes=TREE_MAX_BYTES, what=f"run's {RUN_FILES[key]}",
                         links=False)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InputError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: holds a JSON {type(data).__name__}, not an object")
        return data

    def json_object(self, key: str) -> dict[str, Any]:
        """One of the run's JSON files as :func:`read_json_object` reads it: {} for whatever is
        not there to read."""
        return read_json_object(self.file(key))

    def verdict(self) -> dict[str, Any]:
        """The run's verdict (``checks.json``, else the one ``run.json`` recorded), or ``{}``."""
        return self.read_json("checks").get("verdict") or self.read_json("run").get("verdict") or {}

    def write_json(self, key: str, data: dict[str, Any]) -> Path:
        """Write one of the run's JSON files (redacted, atomically; see :func:`write_json`)."""
        return write_json(self.file(key), data, sort_keys=True)

    def update_run(self, **fields: Any) -> dict[str, Any]:
        """Merge fields into run.json (written atomically so readers never see half a file)."""
        data = self.read_json("run")
        data.update(fields)
        self.write_json("run", data)
        return data


class Prepared(Protocol):
    """A prepared run (``workbook.run.steps.Run``): what it is to the report is its folder."""

    @property
    def run_dir(self) -> RunDir: ...


RunRef: TypeAlias = Prepared | RunDir | Path | str  # what a notebook cell passes as ``run``


def run_dir_of(run: RunRef) -> RunDir:
    """The run directory of a prepared run, a ``RunDir`` or a path."""
    if isinstance(run, RunDir):
        return run
    if isinstance(run, (str, Path)):
        return RunDir(Path(run).resolve())
    return run.run_dir


def write_json(path: Path, data: Any, *, sort_keys: bool = False) -> Path:
    """Write a JSON file that leaves the run's raw files (``run.json``, ``checks.json``, a suite's
    or sweep's record): redacted inside its structure, so it stays valid JSON and its numbers
    exact (``{"pass": 16}`` stays), then written atomically. The one JSON guard writers share.
    """
    return write_atomic(Path(path), dump_json(data, sort_keys=sort_keys))


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON object file of the runs tree, {} when it is missing, not a regular file (a FIFO
    would block the read), unreadable, not JSON or not an object. For the readers that show or
    sum up what a run left, which a half-written or hand-edited run must not stop; a reader that
    must say a file is broken uses :meth:`RunDir.read_json`."""
    try:
        data = json.loads(read_text(path, max_bytes=TREE_MAX_BYTES))
    except (InputError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_redacted(path: Path, text: str, *, form: str | None = None) -> Path:
    """Write ``text`` redacted by its form (``form``, else ``path``'s suffix: YAML inside its
    structure, a shell command line by line), atomically."""
    return write_atomic(Path(path), redact_document(text, form or form_of(path)))


# What makes a folder a run directory (the index, publish and the checks agree on it).
RUN_MARKERS = (RUN_FILES["run"], RUN_FILES["log"])


def is_run_dir(path: Path) -> bool:
    return any((Path(path) / name).exists() for name in RUN_MARKERS)


def walk_runs(runs_root: Path, enter: Callable[[Path], bool] = lambda folder: True
              ) -> tuple[list[Path], list[Path]]:
    """Every run directory under ``runs_root`` at any depth (the root itself may be one), and
    the other folders walked on the way. Hidden folders, a folder ``enter`` refuses and a run
    directory's own subfolders (rollout dumps, Ray outputs) are not searched, and no link to a
    folder is followed (a loop, or a link to ``/``, would make the walk endless; one out of the
    tree would list runs that are not in it)."""
    root = Path(runs_root)
    if is_run_dir(root):
        return [root], []
    runs: list[Path] = []
    folders: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        folders.append(folder)
        try:
            children = sorted(p for p in folder.iterdir()
                              if not p.name.startswith(".") and p.is_dir() and not p.is_symlink())
        except OSError:
            continue
        for child in children:
            if is_run_dir(child):
                runs.append(child)
            elif enter(child):
                stack.append(child)
    return runs, folders


def file_signature(path: Path) -> list[int] | None:
    """A file's size and modification time (None when it is missing): what tells a cache, or
    a closing step, that a file it read has changed since."""
    try:
        found = Path(path).stat()
    except OSError:
        return None
    return [found.st_size, found.st_mtime_ns]


# run.json keys the closing writes after rendering (its steps done, when it ended): never an
# input of a closing step nor of a report section
CLOSING_WRITES = ("closed", "finished_at", "finish_errors")
