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

The run directories are the truth, and ``<runs root>/ledger/<scenario>.<hardware>.jsonl`` their
memory, which outlives them: a night whose run directory was pruned is still a night. So the
file is only ever appended to (:func:`record`, when a run is closed): one lock for every writer,
whole lines in one write, fsync'd; a night judged again or moved gets a new line, and the last
line of a run id is its entry. A line that is not an entry (torn, not UTF-8, a JSON list, too
large) is set aside into ``<file>.quarantine`` beside it, every other line kept, and named in a
warning on stderr and in the index (:func:`problems`). A ledger file is built from the run
directories only when it is missing (:func:`rebuild`), and a rebuild only adds nights. A
published site carries the ledger too, the nightly's memory on runners that keep nothing:
:func:`merge` adds another runs root's nights the same way (seeding a runs root from a site,
publishing a runs root into one), so no night is ever lost between them. Readers
never block (a FIFO or device in ``ledger/`` is skipped with a warning, the lock is only tried)
and read at most :data:`LEDGER_MAX_BYTES` per file. ``hardware`` is the run's profile (``cpu``,
``npu``, ``cuda``), so a night on another machine of the same kind still finds the last green
night before it, and what changed names the machine; each entry keeps the full hardware key.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from workbook.core.atomic import flock_within, sync_folder
from workbook.core.clock import utc_time
from workbook.core.layout import (
    BISECT_FILE,
    BISECTS_DIR,
    RUN_FILES,
    SUITE_FILE,
    SWEEP_FILE,
    SWEEPS_DIR,
    TREE_MAX_BYTES,
    read_json_object,
    walk_runs,
    write_atomic,
)
from workbook.core.redaction import dump_json
from workbook.core.serialization import load_yaml
from workbook.core.status import RED, VERDICTS, Verdict
from workbook.core.textfile import read_bytes
from workbook.core.values import finite
from workbook.errors import InputError, WorkbookError
from workbook.params.settings import environment_of, settings_of, tuning_of
from workbook.provenance import hardware_key, image_of, versions_of

LEDGER_DIR = "ledger"
LEDGER_SUFFIX = ".jsonl"
LOCK_FILE = ".lock"
QUARANTINE = ".quarantine"  # <scenario>.<hardware>.jsonl.quarantine: its lines that were not entries
LEDGER_MAX_BYTES = TREE_MAX_BYTES  # a ledger file read whole (an entry is a few kB: 10^4 nights)
LINE_MAX_BYTES = 1 << 20  # a longer line was not written by the workbook
LOCK_WAIT_S = 300.0  # a writer waits this long for another (a first rebuild walks every run)
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
    """A night that cannot be written into its ledger (its file or the lock is not a regular
    file, the lock is held too long): the night stays in its run directory."""


def ledger_file(runs_root: Path, scenario: str, hardware: str) -> Path:
    """``<runs root>/ledger/<scenario>.<hardware>.jsonl`` (unusual characters as ``_``)."""
    return Path(runs_root) / LEDGER_DIR / f"{_safe(scenario)}.{_safe(hardware)}{LEDGER_SUFFIX}"


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
    """Every ledger of the runs root, each oldest first: its files, or, when it has none yet,
    rebuilt from its run directories (and stored when ``store``: not in a published copy)."""
    folder = Path(runs_root) / LEDGER_DIR
    names = sorted(folder.glob(f"*{LEDGER_SUFFIX}")) if folder.is_dir() else []
    if not names:
        return _rebuilt(runs_root, store=store)
    found: dict[tuple[str, str], list[Entry]] = {}
    for path in names:
        for entry in read_file(path, store=store):
            found.setdefault(entry.key, []).append(entry)
    return {key: _fold(entries) for key, entries in found.items()}


def read_ledger(runs_root: Path, scenario: str, hardware: str, *, store: bool = True
                ) -> list[Entry]:
    """The ledger of one scenario and hardware, oldest first (rebuilt from the run directories
    when its file is missing, and then stored when ``store``)."""
    path = ledger_file(runs_root, scenario, hardware)
    if not os.path.lexists(path):
        return _rebuilt(runs_root, store=store).get((scenario, hardware), [])
    return [e for e in read_file(path, store=store) if e.key == (scenario, hardware)]


def read_file(path: Path, *, store: bool = True) -> list[Entry]:
    """A ledger file's entries, each run once (its last line), oldest first. A line that is not
    an entry is skipped with a warning, and set aside into the quarantine file when ``store``
    (and no writer holds the lock); a file that is not a regular file, or is larger than
    :data:`LEDGER_MAX_BYTES`, is skipped with a warning. Never blocks."""
    path = Path(path)
    lines = _load(path)
    if lines is None:
        return []
    if lines.bad:
        moved = None
        if store:
            with _locked(path.parent, wait=False) as held:
                moved = _quarantine(path) if held else None
        _warn_bad(path, lines, moved)
    return _fold(lines.entries)


def quarantine_file(path: Path) -> Path:
    """Where a ledger file's lines that are not entries are kept aside."""
    return Path(path).with_name(Path(path).name + QUARANTINE)


def problems(runs_root: Path) -> list[str]:
    """What the user must know of the runs root's ledger, one sentence each: the lines kept
    aside in quarantine files, and the entries of ``ledger/`` that are not regular files (a FIFO
    is never read). Read from the folder's listing and the quarantine files' sizes only."""
    folder = Path(runs_root) / LEDGER_DIR
    try:
        names = sorted(folder.iterdir())
    except OSError:
        return []
    found = []
    for path in names:
        shown = f"{LEDGER_DIR}/{path.name}"
        info = _lstat(path)
        regular = info is not None and stat.S_ISREG(info.st_mode)
        if path.name == LOCK_FILE or path.name.endswith(LEDGER_SUFFIX):
            if not regular:
                found.append(f"{shown} is not a regular file (a FIFO, device, folder or link): "
                             + ("no night can be recorded" if path.name == LOCK_FILE
                                else "its nights are not read"))
            elif info is not None and info.st_size > LEDGER_MAX_BYTES:
                found.append(f"{shown} is larger than {LEDGER_MAX_BYTES >> 20} MiB: its nights "
                             "are not read")
        elif path.name.endswith(LEDGER_SUFFIX + QUARANTINE) and regular and info is not None:
            ledger = shown[:-len(QUARANTINE)]
            found.append(f"{shown} holds {_quantity(path, info.st_size)} of {ledger} that were "
                         "not ledger entries, kept aside (every other night kept); look at "
                         "them, then delete the file")
    return found


def record(run_dir: Path, runs_root: Path) -> Entry | None:
    """Add a closed run's entry to its ledger (a line; the night judged again or moved: a newer
    line for the same run id) and return it; None, and no line, for a run that is not a night
    (or not judged), or a copy of a night the ledger holds (the same run id, its directory still
    there). A runs root without a ledger file gets every ledger built from its run directories
    first, and a scenario without one its own; a rebuild only adds nights.

    Raises:
        LedgerError: the ledger file or its lock is not a regular file, or another writer held
            the lock for :data:`LOCK_WAIT_S` (the night stays in its run directory).
    """
    run_dir, root = Path(run_dir), Path(runs_root)
    judged = entry_of(run_dir, root, judged_now=True)
    entry = judged if judged is not None and counts(run_dir, root) else None
    folder = root / LEDGER_DIR
    with _locked(folder, wait=True):
        if not any(folder.glob(f"*{LEDGER_SUFFIX}")):  # no ledger yet: every one built once
            _add_missing(root, rebuild(root))
        if entry is None:
            return None
        path = ledger_file(root, *entry.key)
        if not os.path.lexists(path):  # this scenario's is missing: its older nights first
            _add_missing(root, {entry.key: rebuild(root).get(entry.key, [])})
        lines = _load(path)
        if lines is not None and lines.bad:
            _warn_bad(path, lines, _quarantine(path))
        current = _fold(lines.entries) if lines is not None else []
        twin = next((e for e in current if e.run_id == entry.run_id and e.path != entry.path),
                    None)
        if twin is not None and twin.run_dir(root).is_dir():
            return None  # a copy of a night already recorded is not a night of its own
        if _as_written(entry) not in current:  # a night closed again unchanged: no line
            _append(path, [entry])
    return entry


def merge(ledgers: Mapping[tuple[str, str], Sequence[Entry]], runs_root: Path) -> int:
    """Add to the runs root's ledgers each entry of ``ledgers`` (another runs root's: a
    published site's when seeding a fresh runs root, a runs root's when publishing into a site)
    that no line of its file ever held; return how many were added.

    Under the one lock, whole lines appended, never one removed or rewritten (a line that is not
    an entry is quarantined as :func:`record` does), so merging again adds nothing and merges in
    any order leave the same nights. A runs root without any ledger file first gets its own
    nights built from its run directories, as :func:`record` would: a rebuild only adds.
    """
    root = Path(runs_root)
    folder = root / LEDGER_DIR
    added = 0
    with _locked(folder, wait=True):
        if not any(folder.glob(f"*{LEDGER_SUFFIX}")):
            _add_missing(root, rebuild(root))
        for key, entries in sorted(ledgers.items()):
            path = ledger_file(root, *key)
            lines = _load(path)
            if lines is None:
                continue  # not a regular file: warned, left as it is
            if lines.bad:
                _warn_bad(path, lines, _quarantine(path))
            held = set(lines.good)
            new = [e for e in entries if dump([e]).encode("utf-8") not in held]
            if new:
                _append(path, new)
                added += len(new)
    return added


def run_dirs(runs_root: Path) -> list[Path]:
    """Every run directory under ``runs_root`` (see :func:`~workbook.core.layout.walk_runs`),
    sweeps' and bisects' aside."""
    runs, _ = walk_runs(runs_root, lambda folder: not (folder / SWEEP_FILE).is_file()
                        and not (folder / BISECT_FILE).is_file())
    return runs


def dump(entries: Sequence[Entry]) -> str:
    """A ledger file's text: one JSON object per line, keys sorted (a rebuild is byte-equal),
    through the writers' one JSON guard (the run files it copies from may have been written raw)."""
    return "".join(dump_json(e.to_dict(), indent=None, sort_keys=True) for e in entries)


@dataclass(frozen=True)
class _Lines:
    """A ledger file as read: its entries in file order, its good lines as written, and the
    lines that are not entries (numbered from 1)."""

    entries: list[Entry]
    good: list[bytes]
    bad: list[tuple[int, bytes]]


def _load(path: Path) -> _Lines | None:
    """A ledger file's lines (none when it is missing); None, with a warning, when it cannot
    be read as one: not a regular file, too large, unreadable."""
    if not os.path.lexists(path):
        return _Lines([], [], [])
    try:
        if Path(path).is_symlink():
            raise InputError(f"{path}: the ledger file is a link, not a regular file")
        data = read_bytes(path, max_bytes=LEDGER_MAX_BYTES, what="ledger file")
    except InputError as exc:
        _warn(f"{exc.message}: its nights are not read (the file is left as it is)")
        return None
    return _parse(data)


def _parse(data: bytes) -> _Lines:
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # the file ends with a whole line
    entries, good, bad = [], [], []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue  # an empty line holds nothing to keep
        entry = _entry(line)
        if entry is None:
            bad.append((n, line))
        else:
            entries.append(entry)
            good.append(line + b"\n")
    return _Lines(entries, good, bad)


_TEXTS = ("scenario", "hardware", "run_id", "path", "date", "verdict", "night")
_MAPS = ("versions", "commits", "settings", "baseline", "headline", "comparisons")
_MAYBE_MAPS = ("image", "hardware_key", "tuning", "env", "conditions")


def _entry(line: bytes) -> Entry | None:
    """The entry a line holds, None when it holds none: too long, not UTF-8, not a JSON object,
    missing a field an entry needs or holding one of the wrong kind."""
    if len(line) > LINE_MAX_BYTES:
        return None
    try:
        data = json.loads(line.decode("utf-8"))
        entry = Entry.from_dict(data) if isinstance(data, dict) else None
    except (ValueError, TypeError, RecursionError):
        return None
    if entry is None or not entry.run_id or not entry.scenario:
        return None
    typed = (all(isinstance(getattr(entry, f), str) for f in _TEXTS)
             and all(isinstance(getattr(entry, f), dict) for f in _MAPS)
             and all(isinstance(getattr(entry, f), dict | None) for f in _MAYBE_MAPS)
             and isinstance(entry.host, str | None))
    return entry if typed else None


def _as_written(entry: Entry) -> Entry | None:
    """An entry as its line reads back (redacted as it is written)."""
    return _entry(dump([entry]).encode("utf-8").rstrip(b"\n"))


def _fold(entries: Sequence[Entry]) -> list[Entry]:
    """Each run once, as its last line has it (a night judged again, or moved), oldest first."""
    latest = {e.run_id: e for e in entries}
    return sorted(latest.values(), key=lambda e: e.sort_key)


def _rebuilt(runs_root: Path, *, store: bool) -> dict[tuple[str, str], list[Entry]]:
    """Every ledger from the run directories, stored where its file is missing when ``store``
    and no writer holds the lock (a reader never waits; the next one stores it)."""
    ledgers = rebuild(runs_root)
    if store and ledgers:
        try:
            with _locked(Path(runs_root) / LEDGER_DIR, wait=False) as held:
                if held:
                    _add_missing(Path(runs_root), ledgers)
        except (OSError, LedgerError):
            pass  # a read-only runs root (a published copy) keeps no ledger
    return ledgers


def _add_missing(runs_root: Path, ledgers: Mapping[tuple[str, str], Sequence[Entry]]) -> None:
    """Write the ledger files that are missing (the lock held): a rebuild never replaces one."""
    for key, entries in ledgers.items():
        path = ledger_file(runs_root, *key)
        if entries and not os.path.lexists(path):
            _append(path, sorted(entries, key=lambda e: e.sort_key))


def _append(path: Path, entries: Sequence[Entry]) -> None:
    """Append whole lines in one write and fsync them (the lock held). A file whose last line
    lost its end (a disk that filled up) gets one first, so only that line is ever torn."""
    payload = dump(entries).encode("utf-8")
    flags = (os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW
             | getattr(os, "O_CLOEXEC", 0))
    created = not os.path.lexists(path)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise LedgerError(f"{path}: cannot append to the ledger ({exc.strerror}; a link, FIFO "
                          "or device is never written through): the night stays in its run "
                          "directory") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LedgerError(f"{path}: the ledger file is not a regular file: the night stays "
                              "in its run directory")
        if info.st_size and os.pread(fd, 1, info.st_size - 1) != b"\n":
            payload = b"\n" + payload
        _write_synced(fd, payload)
    finally:
        os.close(fd)
    if created:
        sync_folder(Path(path).parent)


def _write_synced(fd: int, payload: bytes) -> None:
    """All of ``payload`` written to ``fd`` (one write may take only part of it), fsync'd."""
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _quarantine(path: Path) -> Path | None:
    """Move a ledger file's lines that are not entries to its quarantine file (appended,
    fsync'd, before the file is rewritten with every other line); the lock held. The file the
    lines are kept in, None when there were none (or the file cannot be read)."""
    lines = _load(path)
    if lines is None or not lines.bad:
        return None
    aside = quarantine_file(path)
    payload = b"".join(line + b"\n" for _, line in lines.bad)
    flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(aside, flags, 0o644)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            _write_synced(fd, payload)
        finally:
            os.close(fd)
        write_atomic(path, b"".join(lines.good).decode("utf-8"), sync=True)
    except OSError:
        return None  # a read-only runs root: the lines are skipped, not moved
    return aside


@contextmanager
def _locked(folder: Path, *, wait: bool) -> Iterator[bool]:
    """The ledger's one lock (``ledger/.lock``): True once held. A writer (``wait``) waits up to
    :data:`LOCK_WAIT_S`; a reader only tries, and is given False when another holds it or the
    lock cannot be taken (a read-only runs root)."""
    path = Path(folder) / LOCK_FILE
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if not wait:
            yield False
            return
        raise LedgerError(f"{path}: cannot take the ledger's lock ({exc.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            if not wait:
                yield False
                return
            raise LedgerError(f"{path}: the ledger's lock is not a regular file: no night can "
                              "be recorded until it is removed")
        if not flock_within(fd, LOCK_WAIT_S if wait else 0):
            if not wait:
                yield False
                return
            raise LedgerError(f"{path}: another process held the ledger's lock for "
                              f"{LOCK_WAIT_S:.0f} s: the night stays in its run directory")
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _warn_bad(path: Path, lines: _Lines, moved: Path | None) -> None:
    numbers = ", ".join(str(n) for n, _ in lines.bad[:10]) + (", ..." if len(lines.bad) > 10
                                                              else "")
    where = f"kept aside in {moved}" if moved else "skipped (not moved: the ledger is busy or "\
        "read-only)"
    _warn(f"{path}: {len(lines.bad)} line(s) are not ledger entries (line {numbers}): {where}; "
          f"its {len(lines.entries)} other line(s) kept")


def _warn(message: str) -> None:
    """A warning the user sees: on stderr (the index lists what stays, :func:`problems`)."""
    print(f"workbook: ledger: {message}", file=sys.stderr, flush=True)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except OSError:
        return None


def _quantity(path: Path, size: int) -> str:
    """How many lines a quarantine file holds (its size, when it cannot be read whole)."""
    try:
        lines = read_bytes(path, max_bytes=LEDGER_MAX_BYTES, what="quarantine file").count(b"\n")
    except InputError:
        return f"{size} bytes of lines"
    return f"{lines} line{'s' if lines != 1 else ''}"


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
    """A file's SHA-256, None when it is not a regular file, is too large or cannot be read."""
    try:
        return hashlib.sha256(read_bytes(path, max_bytes=TREE_MAX_BYTES)).hexdigest()
    except InputError:
        return None


def _headline(checks: Mapping[str, Any]) -> dict[str, float | None]:
    """Each compared metric's window value (the first baseline row of each metric)."""
    numbers: dict[str, float | None] = {}
    for row in checks.get("rows") or []:
        if isinstance(row, dict) and row.get("kind") == "baseline" and row.get("metric"):
            numbers.setdefault(str(row["metric"]), finite(row.get("value")))
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


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name) or "_"


def _utc(date: str) -> str:
    """A date as UTC ISO text, so ``...Z`` and ``...+00:00`` sort alike ('' if absent, the text
    as it is if unreadable)."""
    parsed = utc_time(date)
    return parsed.isoformat() if parsed else date


__all__ = ["FAULT_ENV", "GREEN", "LEDGER_DIR", "LEDGER_MAX_BYTES", "LINE_MAX_BYTES", "RED",
           "SINGLE", "Entry", "LedgerError", "counts", "dump", "entry_of", "file_sha256",
           "last_green", "ledger_file", "merge", "night_of", "problems", "quarantine_file", "read_all",
           "read_file", "read_ledger", "rebuild", "record", "run_dirs"]
