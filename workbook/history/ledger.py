"""The ledger: one entry per judged night of a scenario, per hardware, oldest first.

A red night asks what changed since the last green one, so every judged run of a scenario (a
suite night's entry or a single run) leaves an entry: when it ran, its verdict, what it ran with
(package versions, verl and workbook commits, image, host, hardware key, the machine's
conditions while it trained), the scenario's algorithmic settings, its tuning and its ``env:``
(:mod:`workbook.params.settings`), the baseline it was judged against (path and digest) and its
headline numbers (the window values of its baseline comparisons). A sweep point varies a setting
on purpose, a bisect's step runs an old verl commit on purpose and a run that loads a fault
(``WORKBOOK_FAULT``: a planted regression) is meant to be red: none is a night, and none is in
the ledger.

The run directories are the truth. ``<runs root>/ledger/<scenario>.<hardware>.jsonl`` caches
their entries: :func:`record` updates it when a run is closed, and a runs root without a
``ledger`` folder gets one rebuilt from its run directories (:func:`rebuild`) the first time one
is needed. ``hardware`` is the run's profile (``cpu``, ``npu``, ``cuda``), so a night on another
machine of the same kind still finds the last green night before it, and what changed names
the machine; each entry keeps the full hardware key.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from workbook.core.clock import utc_time
from workbook.core.layout import (
    BISECT_FILE,
    BISECTS_DIR,
    RUN_FILES,
    SUITE_FILE,
    SWEEP_FILE,
    SWEEPS_DIR,
    is_run_dir,
    read_json_object,
    write_atomic,
)
from workbook.core.redaction import dump_json
from workbook.core.serialization import load_yaml
from workbook.core.status import RED, VERDICTS, Verdict
from workbook.errors import WorkbookError
from workbook.params.settings import environment_of, settings_of, tuning_of
from workbook.provenance import hardware_key, image_of, versions_of

LEDGER_DIR = "ledger"
LOCK_FILE = ".lock"
FAULT_ENV = "WORKBOOK_FAULT"  # benchmarks/faults: a planted fault the run is meant to show
GREEN = (Verdict.PASSED.value, Verdict.IMPROVED.value)
SINGLE = "single run"  # an entry's ``night`` when no suite ran it
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class Entry:
    """One judged night of a scenario, as the ledger keeps it (plain JSON values only)."""

    scenario: str
    hardware: str
    run_id: str
    path: str  # the run directory, relative to the runs root when inside it
    date: str  # when it started (UTC, ISO 8601), '' when not recorded
    verdict: str
    night: str = SINGLE  # the suite night's folder (relative), or SINGLE
    versions: dict[str, str] = field(default_factory=dict)  # CANN as "CANN"
    commits: dict[str, str] = field(default_factory=dict)  # verl, workbook
    image: dict[str, Any] | None = None
    host: str | None = None
    hardware_key: dict[str, Any] | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    settings_digest: str = ""
    baseline: dict[str, str | None] = field(default_factory=dict)  # path, sha256
    headline: dict[str, float | None] = field(default_factory=dict)
    # each compared metric's baseline-row status (pass, fail, suspect, ...): a noisy metric's
    # failure is confirmed by the nights before it (confirm_nights); absent in older files
    comparisons: dict[str, str] = field(default_factory=dict)
    # None in files from before they were recorded (not known, which is not "none"): the
    # scenario's tuning and env (params.settings), and run.json's machine conditions
    tuning: dict[str, Any] | None = None
    env: dict[str, str] | None = None
    conditions: dict[str, Any] | None = None

    @property
    def green(self) -> bool:
        return self.verdict in GREEN

    @property
    def red(self) -> bool:
        return self.verdict in RED

    @property
    def sort_key(self) -> tuple[str, str]:
        return (_utc(self.date) or self.run_id, self.run_id)

    @property
    def key(self) -> tuple[str, str]:
        """Which ledger the entry is in: its scenario and hardware."""
        return (self.scenario, self.hardware)

    def run_dir(self, runs_root: Path) -> Path:
        """The night's run directory: ``path`` is kept relative to the runs root it is in, so a
        runs root moved or published whole keeps its entries."""
        path = Path(self.path)
        return path if path.is_absolute() else Path(runs_root) / path

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Entry:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


class LedgerError(WorkbookError):
    """A ledger file that cannot be read (it is a cache: rebuilt from the run directories)."""


def ledger_file(runs_root: Path, scenario: str, hardware: str) -> Path:
    """``<runs root>/ledger/<scenario>.<hardware>.jsonl`` (unusual characters as ``_``)."""
    return Path(runs_root) / LEDGER_DIR / f"{_safe(scenario)}.{_safe(hardware)}.jsonl"


def last_green(ledger: Sequence[Entry], before: Entry | None = None) -> Entry | None:
    """The newest green entry of ``ledger`` older than ``before`` (or of all, without one)."""
    greens = [e for e in ledger if e.green and (
        before is None or (e.sort_key < before.sort_key and e.path != before.path))]
    return max(greens, key=lambda e: e.sort_key, default=None)


def entry_of(run_dir: Path, runs_root: Path, *, verdict: str | None = None,
             judged_now: bool = False) -> Entry | None:
    """The run's entry, None when it was not judged (``verdict`` says what it was judged, when
    the caller knows better). Whether it belongs in the ledger is :func:`counts`.

    The baseline's digest is the one recorded when the run was closed, unless ``judged_now``
    (it is being closed): then the file's as it is.
    """
    run_dir = Path(run_dir)
    run = read_json_object(run_dir / RUN_FILES["run"])
    checks = read_json_object(run_dir / RUN_FILES["checks"])
    judged = _mapping(checks.get("verdict")) or _mapping(run.get("verdict"))
    verdict = str(verdict or judged.get("status") or "")
    if verdict not in VERDICTS:
        return None
    key = hardware_key(run) if _mapping(run.get("hardware")) else None
    params = _params(run_dir)
    settings = settings_of(params) if params is not None else {}
    return Entry(
        scenario=str(run.get("scenario") or run_dir.parent.name),
        hardware=str(run.get("profile") or (key or {}).get("profile") or "unknown"),
        run_id=str(run.get("run_id") or run_dir.name),
        path=_relative(run_dir, runs_root),
        date=str(run.get("started_at") or ""),
        verdict=verdict,
        night=_night(run_dir, runs_root),
        versions=versions_of(run),
        commits={k: str(v) for k, v in _mapping(run.get("commits")).items() if v},
        image=image_of(run, _mapping(read_json_object(run_dir / RUN_FILES["command_json"]).get("env"))),
        host=str(run["host"]) if run.get("host") else None,
        hardware_key=key,
        settings=settings,
        settings_digest=_digest(settings),
        baseline=_baseline(run, checks, recorded=not judged_now),
        headline=_headline(checks),
        comparisons=_comparisons(checks),
        tuning=tuning_of(params) if params is not None else None,
        env=environment_of(params) if params is not None else None,
        conditions=_mapping(run.get("conditions")) or None,
    )


def counts(run_dir: Path, runs_root: Path) -> bool:
    """Whether a run is a night of its scenario: not a sweep point, not a bisect's step (an old
    commit tested on purpose), loading no fault."""
    run_dir = Path(run_dir)
    if _in_sweep(run_dir, runs_root) or _in_bisect(run_dir, runs_root):
        return False
    env = read_json_object(run_dir / RUN_FILES["command_json"]).get("env")
    if isinstance(env, dict) and str(env.get(FAULT_ENV) or "").strip():
        return False
    overrides = read_json_object(run_dir / RUN_FILES["run"]).get("overrides")
    prefix = f"env.{FAULT_ENV}="
    loaded = [str(o)[len(prefix):] for o in overrides if str(o).startswith(prefix)] if isinstance(
        overrides, list) else []
    return not any(value.strip() for value in loaded)


def night_of(run_dir: Path, runs_root: Path) -> Entry | None:
    """The run's ledger entry: judged and a night of its scenario, else None."""
    if not counts(run_dir, runs_root):
        return None
    return entry_of(run_dir, runs_root)


def rebuild(runs_root: Path) -> dict[tuple[str, str], list[Entry]]:
    """Every ledger, from the run directories alone (each oldest first)."""
    ledgers: dict[tuple[str, str], list[Entry]] = {}
    seen: set[tuple[tuple[str, str], str]] = set()
    for run_dir in run_dirs(runs_root):
        entry = night_of(run_dir, runs_root)
        if entry is not None and (entry.key, entry.run_id) not in seen:  # a copy counts once
            seen.add((entry.key, entry.run_id))
            ledgers.setdefault(entry.key, []).append(entry)
    return {key: sorted(entries, key=lambda e: e.sort_key) for key, entries in ledgers.items()}


def read_all(runs_root: Path, *, store: bool = True) -> dict[tuple[str, str], list[Entry]]:
    """Every ledger of the runs root: its files, or, when it has none yet, rebuilt from its run
    directories (and stored when ``store``: not in a published copy of the tree)."""
    folder = Path(runs_root) / LEDGER_DIR
    if not folder.is_dir():
        ledgers = rebuild(runs_root)
        if store:
            _store_all(runs_root, ledgers)
        return ledgers
    found: dict[tuple[str, str], list[Entry]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        try:
            entries = read_file(path)
        except LedgerError:
            return read_rebuilt(runs_root, store=store)
        for entry in entries:
            found.setdefault(entry.key, []).append(entry)
    return {key: sorted(entries, key=lambda e: e.sort_key) for key, entries in found.items()}


def read_rebuilt(runs_root: Path, *, store: bool = True) -> dict[tuple[str, str], list[Entry]]:
    """Every ledger rebuilt from the run directories (and stored in place of the files)."""
    ledgers = rebuild(runs_root)
    if store:
        _store_all(runs_root, ledgers, replace=True)
    return ledgers


def read_ledger(runs_root: Path, scenario: str, hardware: str, *, store: bool = True
                ) -> list[Entry]:
    """The ledger of one scenario and hardware, oldest first."""
    path = ledger_file(runs_root, scenario, hardware)
    if path.parent.is_dir():
        try:
            return read_file(path) if path.is_file() else []
        except LedgerError:
            return read_rebuilt(runs_root, store=store).get((scenario, hardware), [])
    return read_all(runs_root, store=store).get((scenario, hardware), [])


def read_file(path: Path) -> list[Entry]:
    """A ledger file's entries; LedgerError when a line is not one."""
    entries = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise LedgerError(f"{path}: unreadable: {exc}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            entries.append(Entry.from_dict(data))
        except (ValueError, TypeError, AttributeError) as exc:
            raise LedgerError(f"{path}: line {n}: not a ledger entry ({exc})") from None
    return entries


def record(run_dir: Path, runs_root: Path) -> Entry | None:
    """Put a closed run's entry in its ledger, replacing the one it had (a run judged again, or
    moved: the same run id whose old directory is gone), and return it; None, and no entry, for a
    run that is not a night (or not judged), or a copy of a night the ledger holds (the same run
    id, its directory still there). The first record in a runs root builds every ledger from its
    run directories."""
    folder = Path(runs_root) / LEDGER_DIR
    existed = folder.is_dir()
    folder.mkdir(parents=True, exist_ok=True)
    judged = entry_of(run_dir, runs_root, judged_now=True)
    entry = judged if judged is not None and counts(run_dir, runs_root) else None
    with _locked(folder / LOCK_FILE):
        if not existed:
            _store_all(runs_root, rebuild(runs_root))
        if judged is not None:
            path = ledger_file(runs_root, *judged.key)
            try:
                before: list[Entry] | None = read_file(path) if path.is_file() else []
            except LedgerError:  # a broken cache: written anew from the run directories
                before = None
            found = rebuild(runs_root).get(judged.key, []) if before is None else before
            others = [e for e in found if e.path != judged.path]
            twin = next((e for e in others if e.run_id == judged.run_id), None)
            if twin is not None and twin.run_dir(runs_root).is_dir():
                entry = None  # a copy of a night already recorded is not a night of its own
            elif twin is not None:
                others.remove(twin)  # the night moved: its entry follows it
            kept = sorted(others + ([entry] if entry else []), key=lambda e: e.sort_key)
            if kept != before:  # a sweep point, say, changes nothing
                _store(path, kept)
    return entry


def run_dirs(runs_root: Path) -> Iterator[Path]:
    """Every run directory under ``runs_root`` (the root itself may be one), sweeps' aside: no
    hidden folder, no link, nothing inside a run directory."""
    root = Path(runs_root)
    if is_run_dir(root):
        yield root
        return
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            children = sorted(p for p in folder.iterdir() if not p.name.startswith(".")
                              and p.is_dir() and not p.is_symlink())
        except OSError:
            continue
        for child in children:
            if is_run_dir(child):
                yield child
            elif not (child / SWEEP_FILE).is_file() and not (child / BISECT_FILE).is_file():
                stack.append(child)


def dump(entries: Sequence[Entry]) -> str:
    """A ledger file's text: one JSON object per line, keys sorted (a rebuild is byte-equal),
    through the writers' one JSON guard (the run files it copies from may have been written raw)."""
    return "".join(dump_json(e.to_dict(), indent=None, sort_keys=True) for e in entries)


def _store(path: Path, entries: Sequence[Entry]) -> None:
    if entries:
        write_atomic(path, dump(entries))
    else:
        path.unlink(missing_ok=True)


def _store_all(runs_root: Path, ledgers: Mapping[tuple[str, str], Sequence[Entry]], *,
               replace: bool = False) -> None:
    """Write every ledger file (``replace``: and remove the others); a read-only runs root is
    left as it is (the ledger is a cache)."""
    folder = Path(runs_root) / LEDGER_DIR
    try:
        folder.mkdir(parents=True, exist_ok=True)
        written = set()
        for key, entries in ledgers.items():
            path = ledger_file(runs_root, *key)
            _store(path, entries)
            written.add(path.name)
        if replace:
            for stale in folder.glob("*.jsonl"):
                if stale.name not in written:
                    stale.unlink(missing_ok=True)
    except OSError:
        pass


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One writer at a time (runs of a parallel suite close at once)."""
    with open(path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _mapping(value: Any) -> dict[str, Any]:
    """A JSON object as it is, anything else as {} (a run.json written by hand may hold a list)."""
    return value if isinstance(value, dict) else {}


def _params(run_dir: Path) -> dict[str, Any] | None:
    """The run's resolved params, None when it has none (or they cannot be read)."""
    path = run_dir / RUN_FILES["params"]
    if not path.is_file():
        return None
    try:
        data = load_yaml(path)
    except WorkbookError:
        return None
    return data if isinstance(data, dict) else None


def _baseline(run: Mapping[str, Any], checks: Mapping[str, Any], *, recorded: bool
              ) -> dict[str, str | None]:
    """The baseline file the run was judged against and its digest: the one recorded when the
    run was closed (``closed.ledger``, if ``recorded``), else the file's as it is now."""
    closed = _mapping(run.get("closed"))
    path = (_mapping(checks.get("baseline")).get("path")
            or _mapping(closed.get("judge")).get("baseline"))
    if not path:
        return {"path": None, "sha256": None}
    mark = _mapping(closed.get("ledger")) if recorded else {}
    digest = mark.get("baseline_sha256") if mark.get("baseline") == path else None
    return {"path": str(path), "sha256": digest or file_sha256(Path(str(path)))}


def file_sha256(path: Path) -> str | None:
    """A file's SHA-256, None when it is not a regular file or cannot be read."""
    if not Path(path).is_file():
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _headline(checks: Mapping[str, Any]) -> dict[str, float | None]:
    """Each compared metric's window value (the first baseline row of each metric)."""
    numbers: dict[str, float | None] = {}
    for row in checks.get("rows") or []:
        if isinstance(row, dict) and row.get("kind") == "baseline" and row.get("metric"):
            value = row.get("value")
            number = float(value) if isinstance(value, (int, float)) and not isinstance(
                value, bool) else math.nan
            numbers.setdefault(str(row["metric"]), number if math.isfinite(number) else None)
    return numbers


def _comparisons(checks: Mapping[str, Any]) -> dict[str, str]:
    """Each compared metric's status (the first baseline row of each metric, as the headline)."""
    statuses: dict[str, str] = {}
    for row in checks.get("rows") or []:
        if isinstance(row, dict) and row.get("kind") == "baseline" and row.get("metric"):
            statuses.setdefault(str(row["metric"]), str(row.get("status") or ""))
    return statuses


def previous_comparisons(ledger: Sequence[Entry], run_path: str, date: str, *,
                         nights: int = 30) -> dict[str, list[str | None]]:
    """``{metric: [its baseline row's status, newest night first]}`` over the ``nights`` entries
    of ``ledger`` older than a run (started at ``date``, at ``run_path``, its own entry aside);
    ``None`` for a night that did not compare the metric. What a noisy metric's confirmation
    (``workbook.checks.confirmation``) reads."""
    key = (_utc(date) or "", "")
    older = [e for e in ledger if e.path != run_path and (not key[0] or e.sort_key < key)]
    recent = sorted(older, key=lambda e: e.sort_key, reverse=True)[:nights]
    metrics = sorted({m for e in recent for m in e.comparisons})
    return {m: [e.comparisons.get(m) for e in recent] for m in metrics}


def _night(run_dir: Path, runs_root: Path) -> str:
    """The suite night a run belongs to (its folder, relative), or :data:`SINGLE`."""
    for folder in _batch_folders(run_dir, runs_root):
        if (folder / SUITE_FILE).is_file():
            return _relative(folder, runs_root)
    return SINGLE


def _in_sweep(run_dir: Path, runs_root: Path) -> bool:
    """Whether a run is a sweep's point: under the root's ``sweeps/``, or below a folder that
    holds ``sweep.json`` (``<sweep>/<point>/<run_id>``, wherever ``--dir`` put it)."""
    return (SWEEPS_DIR in _below_root(run_dir, runs_root)[:1]
            or any((folder / SWEEP_FILE).is_file() for folder in _batch_folders(run_dir, runs_root)))


def _in_bisect(run_dir: Path, runs_root: Path) -> bool:
    """Whether a run is a bisect's step: under the root's ``bisects/``, or in a folder holding
    ``bisect.json`` (``<bisect>/steps/<step>/<run_id>``, wherever ``--dir`` put it)."""
    return (BISECTS_DIR in _below_root(run_dir, runs_root)[:1]
            or any((folder / BISECT_FILE).is_file()
                   for folder in Path(run_dir).resolve().parents[:3]))


def _batch_folders(run_dir: Path, runs_root: Path) -> list[Path]:
    """The folders a suite night or sweep holding the run can be: its parents up to the runs
    root (the two above it, for a run outside the root)."""
    root, parents = Path(runs_root).resolve(), list(Path(run_dir).resolve().parents)
    if root not in parents:
        return parents[:2]
    return parents[:parents.index(root) + 1]


def _below_root(path: Path, runs_root: Path) -> tuple[str, ...]:
    try:
        return Path(path).resolve().relative_to(Path(runs_root).resolve()).parts
    except ValueError:
        return ()


def _relative(path: Path, runs_root: Path) -> str:
    resolved, root = Path(path).resolve(), Path(runs_root).resolve()
    try:
        return resolved.relative_to(root).as_posix()
    except ValueError:
        return resolved.as_posix()


def _digest(settings: Mapping[str, Any]) -> str:
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name) or "_"


def _utc(date: str) -> str:
    """A date as UTC ISO text, so ``...Z`` and ``...+00:00`` sort alike ('' if absent, the text
    as it is if unreadable)."""
    parsed = utc_time(date)
    return parsed.isoformat() if parsed else date


__all__ = ["FAULT_ENV", "GREEN", "LEDGER_DIR", "RED", "SINGLE", "Entry", "LedgerError", "counts",
           "dump", "entry_of", "file_sha256", "last_green", "ledger_file", "night_of",
           "read_all", "read_file", "read_ledger", "read_rebuilt", "rebuild", "record",
           "run_dirs"]
