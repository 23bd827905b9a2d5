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
from workbook.core.layout import CLUSTER_FILE, SUITE_FILE, SUITES_DIR, RunDir, now_iso, write_json
from workbook.core.quoting import cut, short
from workbook.core.redaction import redact_text
from workbook.core.textfile import read_text
from workbook.errors import InputError, ParamsError


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
    """The entries of a suite file; ParamsError naming every line that cannot be read."""
    entries, problems = _read_entries(Path(path))
    if problems:
        raise ParamsError(problems, "suite")
    return entries


def _read_entries(path: Path) -> tuple[list[Entry], list[tuple[str, str]]]:
    """The entries that can be read, and a ``(file:line, message)`` for each line that cannot."""
    if not path.exists():
        raise InputError(f"no such suite file: {path}")
    text = read_text(path, what="suite file")
    roots = _roots(path)
    entries: list[Entry] = []
    problems: list[tuple[str, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        where = f"{path}:{number}"
        try:
            words = shlex.split(line)
        except ValueError as exc:
            problems.append((where, f"{exc}: {cut(line)}"))
            continue
        sets, rest, bad = [], words[1:], False
        while rest:
            flag = rest.pop(0)
            if flag not in ("-s", "--set") or not rest:
                problems.append((where, f"expected '-s KEY=VALUE', got {short(flag)}"))
                bad = True
                break
            sets.append(rest.pop(0))
        scenario, problem = _entry_file(words[0], path.parent, roots)
        if problem:
            problems.append((where, problem))
        if scenario is not None and not bad:
            entries.append(Entry(len(entries) + 1, line, scenario, sets))
    if not entries and not problems:
        problems.append((str(path), "the suite lists no scenario"))
    return entries, problems


def _roots(suite: Path) -> tuple[Path, ...]:
    """Where a suite's scenarios may live: its own folder and the params folders."""
    from workbook.core.project import params_dir, root

    return tuple(dict.fromkeys((suite.resolve().parent, (root() / "params").resolve(),
                                params_dir())))


def _entry_file(word: str, folder: Path, roots: tuple[Path, ...]) -> tuple[Path | None, str]:
    """A suite line's scenario file: beside the suite, else in the params folder (never the
    working directory), and inside one of ``roots`` once symlinks are resolved."""
    from workbook.core.project import params_dir

    given = Path(word)
    candidates = [given] if given.is_absolute() else [folder / given, params_dir() / given]
    if given.parts[:1] == ("params",):
        candidates.append(params_dir() / Path(*given.parts[1:]))
    for candidate in candidates:
        try:
            if not candidate.is_file():
                continue
            found = candidate.resolve()
        except (OSError, ValueError, RuntimeError):
            continue
        if not any(found == r or r in found.parents for r in roots):
            return None, (f"{short(word)} resolves to {cut(str(found))}, outside the suite's "
                          f"folder and the params folder {params_dir()}")
        return found, ""
    tried = ", ".join(dict.fromkeys(cut(str(c)) for c in candidates))
    return None, f"no such scenario file: {cut(word)} (looked for {tried})"


def suite_dir(name: str, runs_root: Path, when: datetime | None = None) -> Path:
    """``<runs root>/suites/<name>/<UTC date>``: the same command on the same night resumes."""
    day = (when or datetime.now(timezone.utc)).strftime("%Y-%m-%d")
    return Path(runs_root) / SUITES_DIR / name / day


def validate_suite(path: Path, only: str | None = None) -> list[Entry]:
    """The suite's entries (those matching ``only``), every one valid; else one ParamsError
    listing every problem of every line and entry at once."""
    entries, problems = _read_entries(Path(path))
    if only:
        entries = [e for e in entries if fnmatch.fnmatch(e.params.stem, only)
                   or fnmatch.fnmatch(e.key, only)]
        if not entries and not problems:
            raise InputError(f"--only {only!r} matches no entry of {path}")
    validate_entries(entries, problems)
    return entries


def validate_entries(entries: list[Entry], problems: list[tuple[str, str]] | None = None) -> None:
    """Every entry valid, or ParamsError naming each bad entry (after ``problems`` found
    before, such as unreadable lines): nothing starts otherwise."""
    from workbook.run.steps import ensure_profile_ready
    from workbook.scenario import validate_scenario

    problems = list(problems or [])
    for entry in entries:
        try:
            ensure_profile_ready(entry.params, entry.sets)
            validate_scenario(entry.params, entry.sets)
        except ParamsError as exc:
            problems += [(f"entry {entry.index} ({cut(entry.line)}): {f or '<scenario>'}", m)
                         for f, m in exc.problems]
        except InputError as exc:
            problems.append((f"entry {entry.index} ({cut(entry.line)})", exc.message))
    if problems:
        raise ParamsError(problems, "suite")


def run_suite(path: Path, *, runs_root: Path, directory: Path | None = None,
              only: str | None = None, timeout_s: float | None = None, rerun: bool = False,
              echo: bool = False, on_start: Any = None) -> SuiteResult:
    """Validate, then run every entry (see the module docstring); never raises for an entry.

    ``on_start(directory)`` is called once the suite directory exists (before any launch).
    """
    from workbook.scenario import load_scenario

    name = Path(path).stem
    entries = validate_suite(path, only)
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
    from workbook.run.driver import execute_run

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
    """Write this invocation's records into suite.json, keeping the entries others ran there
    (a CI matrix runs one ``--only`` entry per job into the same night)."""
    try:
        recorded = json.loads((directory / SUITE_FILE).read_text(encoding="utf-8")).get("entries", [])
    except (OSError, ValueError, AttributeError):
        recorded = []
    write_json(directory / SUITE_FILE, {
        "suite": name, "file": str(Path(path).resolve()), "updated": now_iso(),
        "entries": merged_entries(recorded, [asdict(r) for r in records])})


def merged_entries(recorded: list[Any], ours: list[dict[str, Any]]) -> list[Any]:
    """suite.json's entries with ours in place of the same keys (new ones appended)."""
    by_key = {entry["key"]: entry for entry in ours}
    out = [by_key.pop(e["key"]) if isinstance(e, dict) and e.get("key") in by_key else e
           for e in recorded]
    return out + list(by_key.values())


def _clear_leftovers(runs_root: Path) -> None:
    """End what earlier crashed workbook runs left running (found by their own run.json)."""
    from workbook.launch.leftovers import end_run, orphaned_runs
    from workbook.launch.outcome import Outcome
    from workbook.run.steps import record_outcome

    for run_dir, info in orphaned_runs(runs_root):
        killed = end_run(info, run_dir.name)
        print(f"suite: cleared a run left running by a workbook process that died: {run_dir}"
              f" ({killed} process(es) needed SIGKILL)", flush=True)
        try:
            record_outcome(RunDir(run_dir), Outcome(
                "failed", None, str(info.get("started_at") or ""), now_iso(), 0.0,
                "orphaned: the workbook process driving it died; ended by a later suite"))
        except Exception as exc:  # noqa: BLE001 - a half-written run dir must not stop the suite
            print(f"suite: could not record the cleared run {run_dir} in full "
                  f"({type(exc).__name__}: {exc}); marked failed", flush=True)
            try:  # at least never "clear" it again before every entry
                RunDir(run_dir).update_run(status="failed", reason="orphaned: its workbook died")
            except (OSError, ValueError) as again:
                print(f"suite: {run_dir}: run.json cannot be written ({again})", flush=True)


class _Clusters:
    """One local Ray cluster at a time, shared by consecutive entries of the same shape."""

    def __init__(self, directory: Path) -> None:
        self.state_file = directory / CLUSTER_FILE
        self.shape: dict[str, Any] | None = None

    def prepare(self, scenario: Any) -> None:
        from workbook.launch.cluster import on_demand as cluster

        wanted = cluster.shape_of(scenario) if (
            scenario.launcher == "ray" and scenario.ray.local_nodes) else None
        if wanted == self.shape:
            return
        self.stop()
        if wanted is not None:
            cluster.up(state_file=self.state_file, **wanted)
            self.shape = wanted

    def stop(self) -> None:
        from workbook.launch.cluster import lifecycle as cluster

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
