"""Suites: many scenarios, one command, one verdict, one JUnit file, one summary.

A suite is a commented text file (``params/suites/<name>.txt``), one scenario per line with
optional per-line overrides, as NeMo-RL keeps its nightly lists::

    # tiny CPU scenarios the project's own CI runs
    gspo-tiny-1n1cpu-fsdp2-vllm.yaml
    ppo-tiny-2n1cpu-fsdp2-vllm-ray.yaml -s total_training_steps=2

Scenario paths are relative to the suite file's folder, else to the project's ``params/``.
:func:`run_suite` validates every entry before launching any, runs them in order into one
suite directory (``<runs>/suites/<suite>/<UTC date>/``, recorded in its ``suite.json``), keeps
going when an entry crashes or times out, shares a local Ray cluster between consecutive entries
that ask for the same one, clears what an earlier crashed workbook run left behind before each
entry, and stops launching when the user stops it (Ctrl-C). Running the same suite again the
same day resumes: finished entries are skipped unless ``rerun``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workbook.checks.verdict import FINISHED, exit_code_of
from workbook.errors import InputError, ParamsError
from workbook.report.redaction import redact_text
from workbook.runs import RunDir, now_iso, write_atomic

SUITE_FILE = "suite.json"


@dataclass
class Entry:
    """One line of a suite file."""

    index: int
    line: str
    params: Path
    sets: list[str]

    @property
    def key(self) -> str:
        """``01-gspo-tiny-...`` (``-<hash>`` of the overrides when there are any)."""
        key = f"{self.index:02d}-{self.params.stem}"
        if self.sets:
            key += "-" + hashlib.sha1(" ".join(self.sets).encode()).hexdigest()[:6]
        return key


@dataclass
class EntryRecord:
    """What suite.json keeps of one entry."""

    key: str
    line: str
    scenario: str
    status: str = "pending"  # pending | running | passed | regressed | failed | stopped
    exit_code: int | None = None
    reason: str = ""
    duration_s: float | None = None
    run_dir: str | None = None
    report: str | None = None
    runs: list[str] = field(default_factory=list)  # every run dir, earlier attempts included


@dataclass
class SuiteResult:
    name: str
    directory: Path
    entries: list[EntryRecord]
    exit_code: int
    interrupted: bool = False


def read_suite(path: Path) -> list[Entry]:
    """The entries of a suite file; InputError naming the line when one cannot be read."""
    from workbook.project import find_scenario

    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such suite file: {path}")
    entries: list[Entry] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not text:
            continue
        try:
            words = shlex.split(text)
        except ValueError as exc:
            raise InputError(f"{path}:{number}: {exc}") from None
        sets, rest = [], words[1:]
        while rest:
            flag = rest.pop(0)
            if flag not in ("-s", "--set") or not rest:
                raise InputError(f"{path}:{number}: expected '-s KEY=VALUE', got {flag!r}")
            sets.append(rest.pop(0))
        scenario = path.parent / words[0]
        entries.append(Entry(len(entries) + 1, text,
                             scenario.resolve() if scenario.is_file() else find_scenario(words[0]),
                             sets))
    if not entries:
        raise InputError(f"{path}: the suite lists no scenario")
    return entries


def suite_dir(name: str, runs_root: Path, when: datetime | None = None) -> Path:
    """``<runs root>/suites/<name>/<UTC date>``: the same command on the same night resumes."""
    day = (when or datetime.now(timezone.utc)).strftime("%Y-%m-%d")
    return Path(runs_root) / "suites" / name / day


def validate_entries(entries: list[Entry]) -> None:
    """Every entry valid, or ParamsError naming each bad entry: nothing starts otherwise."""
    from workbook.params import validate_scenario
    from workbook.pipeline import ensure_profile_ready

    problems: list[tuple[str, str]] = []
    for entry in entries:
        try:
            ensure_profile_ready(entry.params, entry.sets)
            validate_scenario(entry.params, entry.sets)
        except ParamsError as exc:
            problems += [(f"entry {entry.index} ({entry.line}): {f or '<scenario>'}", m)
                         for f, m in exc.problems]
        except InputError as exc:
            problems.append((f"entry {entry.index} ({entry.line})", exc.message))
    if problems:
        raise ParamsError(problems, "suite")


def run_suite(path: Path, *, runs_root: Path, directory: Path | None = None,
              only: str | None = None, timeout_s: float | None = None, rerun: bool = False,
              echo: bool = False, on_start: Any = None) -> SuiteResult:
    """Validate, then run every entry (see the module docstring); never raises for an entry.

    ``on_start(directory)`` is called once the suite directory exists (before any launch).
    """
    from workbook.params import load_scenario

    name = Path(path).stem
    entries = read_suite(path)
    if only:
        entries = [e for e in entries if fnmatch.fnmatch(e.params.stem, only)
                   or fnmatch.fnmatch(e.key, only)]
        if not entries:
            raise InputError(f"--only {only!r} matches no entry of {path}")
    validate_entries(entries)
    directory = Path(directory or suite_dir(name, runs_root)).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    records = _load_records(directory, entries)
    _save(directory, name, path, records)
    if on_start is not None:
        on_start(directory)
    interrupted = False
    with _shared_clusters(directory) as clusters:
        for entry, record in zip(entries, records, strict=True):
            if record.status in FINISHED and not rerun:
                continue
            scenario = load_scenario(entry.params, entry.sets, check_files=False)
            clusters.prepare(scenario)
            _clear_leftovers(runs_root)
            record = _run_entry(entry, record, scenario.name, scenario.launcher, directory,
                                runs_root, timeout_s, echo)
            _save(directory, name, path, records)
            if record.status == "stopped":
                interrupted = True
                break
    # an entry still pending or running (never finished) counts as a failed run, never a pass
    code = max((exit_code_of(r.status) for r in records), default=0)
    return SuiteResult(name, directory, records, code, interrupted)


def _run_entry(entry: Entry, record: EntryRecord, scenario: str, launcher: str,
               directory: Path, runs_root: Path, timeout_s: float | None,
               echo: bool) -> EntryRecord:
    from workbook.execution import execute_run

    sets = list(entry.sets) + ([f"timeout_s={timeout_s:g}"] if timeout_s else [])
    rd = RunDir.create(directory, entry.key)
    record.status, record.run_dir = "running", str(rd.path)
    record.runs.append(str(rd.path))
    print(f"suite: entry {entry.index}: {record.line} -> {rd.path}", flush=True)
    result = execute_run(entry.params, sets, rd, runs_root=runs_root, launcher=launcher,
                         echo=echo)
    record.status, record.exit_code = result.verdict, result.exit_code
    record.reason, record.duration_s = result.reason, result.duration_s
    record.report = str(result.report) if result.report else None
    record.scenario = scenario
    return record


def _load_records(directory: Path, entries: list[Entry]) -> list[EntryRecord]:
    """This suite directory's records of these entries (new ones pending)."""
    known: dict[str, EntryRecord] = {}
    try:
        data = json.loads((directory / SUITE_FILE).read_text(encoding="utf-8"))
        for item in data.get("entries", []):
            known[item["key"]] = EntryRecord(**item)
    except (OSError, ValueError, TypeError, KeyError):
        pass
    out = []
    for entry in entries:
        record = known.get(entry.key) or EntryRecord(entry.key, redact_text(entry.line),
                                                     entry.params.stem)
        if record.status == "running":  # the workbook died during it: run it again
            record.status = "stopped"
        out.append(record)
    return out


def _save(directory: Path, name: str, path: Path, records: list[EntryRecord]) -> None:
    write_atomic(directory / SUITE_FILE, json.dumps({
        "suite": name, "file": str(Path(path).resolve()), "updated": now_iso(),
        "entries": [asdict(r) for r in records]}, indent=2) + "\n")


def _clear_leftovers(runs_root: Path) -> None:
    """End what earlier crashed workbook runs left running (found by their own run.json)."""
    from workbook.launch.leftovers import end_run, orphaned_runs
    from workbook.launch.outcome import Outcome
    from workbook.pipeline import record_outcome

    for run_dir, info in orphaned_runs(runs_root):
        killed = end_run(info, run_dir.name)
        print(f"suite: cleared a run left running by a workbook process that died: {run_dir}"
              f" ({killed} process(es) needed SIGKILL)", flush=True)
        try:
            record_outcome(RunDir(run_dir), Outcome(
                "failed", None, str(info.get("started_at") or ""), now_iso(), 0.0,
                "orphaned: the workbook process driving it died; ended by a later suite"))
        except Exception:  # noqa: BLE001 - a half-written run dir must not stop the suite
            pass


class _Clusters:
    """One local Ray cluster at a time, shared by consecutive entries of the same shape."""

    def __init__(self, directory: Path) -> None:
        self.state_file = directory / "cluster.json"
        self.shape: dict[str, Any] | None = None

    def prepare(self, scenario: Any) -> None:
        from workbook.launch import cluster

        wanted = cluster.shape_of(scenario) if (
            scenario.launcher == "ray" and scenario.ray.local_nodes) else None
        if wanted == self.shape:
            return
        self.stop()
        if wanted is not None:
            cluster.up(state_file=self.state_file, **wanted)
            self.shape = wanted

    def stop(self) -> None:
        from workbook.launch import cluster

        if self.shape is not None:
            cluster.down(self.state_file)
            self.shape = None


@contextmanager
def _shared_clusters(directory: Path) -> Iterator[_Clusters]:
    clusters = _Clusters(directory)
    previous = os.environ.get("WORKBOOK_CLUSTER_STATE")
    os.environ["WORKBOOK_CLUSTER_STATE"] = str(clusters.state_file)  # entries find it there
    try:
        yield clusters
    finally:
        clusters.stop()
        if previous is None:
            os.environ.pop("WORKBOOK_CLUSTER_STATE", None)
        else:
            os.environ["WORKBOOK_CLUSTER_STATE"] = previous
