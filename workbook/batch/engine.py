"""The one engine suites and sweeps run on: many items, each a scenario with its overrides.

A suite (a parsed file) and a sweep (a grid and its comparison page) only say which items there
are and what their file's header holds; the engine does the rest, the same way for both:

* :func:`validate_items`: every item before anything starts, every problem listed at once under
  the item it belongs to (one :class:`~workbook.errors.ParamsError`);
* :class:`Batch`: the items, their :class:`~workbook.batch.records.Record` (resumed from the
  batch's JSON file: finished verdicts kept, a stopped or crashed item run again, ``rerun``
  runs everything) and the file, written after every change;
* :class:`Engine`: runs the items in order, one per lane at a time (:mod:`workbook.batch.lanes`
  shares local Ray clusters), each through ``workbook.run.driver.execute_run`` in a thread of
  its own; before each item it clears what crashed workbook runs left running
  (:mod:`workbook.batch.orphans`). An item that fails or cannot start is recorded failed and
  the others go on. SIGINT or SIGTERM (a terminal's Ctrl-C, ``kill``, a CI runner's stop)
  stops launching and asks every running item to stop (each is recorded ``stopped`` with its
  report); the engine returns once they have ended, so the summary is still written.
* :class:`Retry`: a batch may run an item again whose run failed on the infrastructure (its
  diagnosis ``infrastructure``: a device, a disk, Ray or a link broke, not the run), at most
  ``max`` times; each attempt keeps its run directory, and the record says what was retried and
  why. Any other failure is never retried: it would fail the same way again.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from workbook.batch.lanes import Lanes
from workbook.batch.orphans import clear_orphans
from workbook.batch.records import BatchFile, Record, resumed
from workbook.checks.verdict import exit_code_of
from workbook.core.layout import ERROR_LOG, RunDir
from workbook.core.quoting import cut, short
from workbook.core.signals import stopping_on_signals
from workbook.core.status import Verdict
from workbook.errors import InputError, ParamsError, WorkbookError

if TYPE_CHECKING:
    from workbook.run.driver import RunResult

Execute = Callable[..., "RunResult"]  # execute_run's signature: (params, sets, rd, *, runs_root, launcher, echo)
POLL_S = 0.5
RETRIED = "infrastructure"  # the one diagnosis category a retry may mend
MAX_RETRIES = 3  # a night of accelerators is too dear to spend on more


def _retries(value: Any) -> Any:
    """``max``: a whole number of retries (``max: yes`` is a mistake, not 1)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETRIES:
        raise ValueError(f"{short(value)} is not a whole number from 0 to {MAX_RETRIES}")
    return value


class Retry(BaseModel):
    """Run an item again, at most ``max`` times, when its run failed on the infrastructure (a
    device, disk, Ray node or link broke); any other failure would fail the same way again."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max: Annotated[int, BeforeValidator(_retries)] = 1

    @classmethod
    def parse(cls, value: Any) -> tuple[Retry | None, list[str]]:
        """``{max: 1}`` as a Retry, else None and every problem found, each with its key."""
        if not isinstance(value, dict):
            return None, [f"expected a mapping such as {{max: 1}}, got {short(value)}"]
        # YAML 1.1 reads the key ``on`` (the policy's old key, now refused) as true
        given = {("on" if key is True else str(key)): v for key, v in value.items()}
        try:
            return cls.model_validate(given), []
        except ValidationError as exc:
            return None, [_retry_problem(err) for err in exc.errors(include_url=False)]


def _retry_problem(err: Any) -> str:
    key = err["loc"][0]
    if err["type"] == "extra_forbidden":
        hint = "; only infrastructure failures are retried, always" if key == "on" else ""
        return f"unknown key {short(key)} (known: max){hint}"
    return f"{key}: {str(err['msg']).removeprefix('Value error, ')}"


@dataclass
class Item:
    """One run a batch asks for."""

    key: str  # unique in the batch: the record's key, the folder of its run directories
    params: Path
    sets: list[str]
    label: str  # how a problem names it: ``entry 2 (a.yaml -s x=1)``
    title: str  # how progress names it: ``entry 2: a.yaml -s x=1``
    about: dict[str, Any] = field(default_factory=dict)  # fields its record adds


def validate_items(items: Sequence[Item], *, source: str,
                   problems: Sequence[tuple[str, str]] = ()) -> None:
    """Every item valid, else one ParamsError listing ``problems`` (found before, such as a
    suite's unreadable lines) and every problem of every item, each under the item's label."""
    from workbook.run.steps import ensure_profile_ready
    from workbook.scenario import validate_scenario

    found = list(problems)
    for item in items:
        try:
            ensure_profile_ready(item.params, item.sets)
            validate_scenario(item.params, item.sets)
        except ParamsError as exc:
            found += [(f"{item.label}: {f or '<scenario>'}", m) for f, m in exc.problems]
        except InputError as exc:
            found.append((item.label, exc.message))
    if found:
        raise ParamsError(found, source)


class Batch:
    """A batch's items, their records and the JSON file that holds them.

    ``kind`` names the batch in what it prints (``suite``, ``sweep``); ``header`` gives what the
    file holds besides the records, asked at every write (a sweep's comparison page comes last).
    """

    def __init__(self, kind: str, directory: Path, items: Sequence[Item], ledger: BatchFile,
                 header: Callable[[], dict[str, Any]]) -> None:
        self.kind, self.directory, self.items = kind, Path(directory), list(items)
        self.ledger, self.header = ledger, header
        known = ledger.known()
        self.records = [resumed(known.get(i.key), i.key, i.params.stem, i.about)
                        for i in self.items]
        self._by_key = {r.key: r for r in self.records}
        self.leftovers = ledger.leftovers()

    def record(self, item: Item) -> Record:
        return self._by_key[item.key]

    def add(self, item: Item) -> Record:
        """One more item, learnt as the batch goes (a bisect picks each commit from the verdicts
        before it); its record is the one it already has, or the file's, or a fresh one."""
        if item.key not in self._by_key:
            record = resumed(self.ledger.known().get(item.key), item.key, item.params.stem,
                             item.about)
            self.items.append(item)
            self.records.append(record)
            self._by_key[item.key] = record
        return self._by_key[item.key]

    def todo(self, items: Sequence[Item] | None = None, *, rerun: bool = False) -> list[Item]:
        """The items that run now: not finished yet, or every one with ``rerun``."""
        return [i for i in (self.items if items is None else items)
                if rerun or not self.record(i).finished]

    @property
    def exit_code(self) -> int:
        """The worst record's: an item never finished (pending, running) counts as failed."""
        return max((exit_code_of(r.status) for r in self.records), default=0)

    def save(self) -> None:
        self.ledger.write(self.header(), self.records, self.leftovers)


@dataclass
class _Ready:
    """An item whose lane is ready: what its run is started with."""

    lane: int
    item: Item
    sets: list[str]
    launcher: str


@dataclass
class _Running:
    item: Item
    record: Record
    run_dir: RunDir
    thread: threading.Thread
    started: float = field(default_factory=time.monotonic)


class Engine:
    """One invocation of a batch: ``with Engine(...) as engine: engine.run(items)``.

    ``execute`` runs one item (``workbook.run.driver.execute_run`` unless a test gives a
    stand-in); the signal handlers are the engine's while it is open (from the main thread).
    ``retry`` runs an item whose run failed on the infrastructure again (:class:`Retry`).
    """

    def __init__(self, batch: Batch, *, runs_root: Path, lanes: Lanes | None = None,
                 echo: bool = False, execute: Execute | None = None,
                 retry: Retry | None = None) -> None:
        self.batch, self.runs_root, self.echo = batch, Path(runs_root), echo
        self.lanes = lanes or Lanes(batch.directory)
        self.execute = execute
        self.retry = retry
        self.retried: dict[str, int] = {}  # item key -> times it was run again in this session
        self._again: list[Item] = []  # items to run again next, and why (what their record says)
        self._why: dict[str, str] = {}
        self.stopping: list[str] = []  # why it stopped launching: signal names, a stopped item
        self._running: dict[int, _Running] = {}
        self._ended: queue.Queue[tuple[int, RunResult | BaseException]] = queue.Queue()
        self._stack = ExitStack()

    @property
    def interrupted(self) -> bool:
        return bool(self.stopping)

    def __enter__(self) -> Engine:
        self.batch.directory.mkdir(parents=True, exist_ok=True)
        self._stack = ExitStack()  # undone in reverse: the runs end, the signals, the lanes
        self._stack.enter_context(self.lanes.shared())
        self._stack.enter_context(self._signals())
        self._stack.callback(self._finish)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.__exit__(kind, exc, tb)

    def _finish(self) -> None:
        """Whatever ends the session, no item is left running unrecorded."""
        if self._running:  # something raised while items ran: stop them, record them
            self._stop_all("the batch ended")
            while self._running:
                self._collect()
        self.batch.save()

    def run(self, items: Sequence[Item], *, rerun: bool = False, extra: Sequence[str] = ()
            ) -> None:
        """Run those of ``items`` not finished (every one with ``rerun``), ``extra`` overrides
        after each item's own, until they have all run or the batch is stopped."""
        waiting = self.batch.todo(items, rerun=rerun)
        while True:
            waiting, self._again = self._again + waiting, []  # a retried item goes first
            if not ((waiting and not self.stopping) or self._running):
                break
            ready: list[_Ready] = []  # every free lane readied first: clusters start one by one
            for lane in range(len(self.lanes)):
                while (waiting and not self.stopping and lane not in self._running
                       and lane not in (r.lane for r in ready)):
                    prepared = self._prepare(lane, waiting.pop(0), list(extra))
                    if prepared is not None:
                        ready.append(prepared)
            for prepared in ready:
                if not self.stopping:  # stopped meanwhile: the item stays pending
                    self._start(prepared)
            if self._running:
                self._collect()

    def _prepare(self, lane: int, item: Item, extra: list[str]) -> _Ready | None:
        """The item's scenario and its lane readied; None (the item recorded failed) when it
        cannot start."""
        from workbook.scenario import load_scenario

        record = self.batch.record(item)
        sets = item.sets + extra
        try:
            scenario = load_scenario(item.params, sets, check_files=False)
            record.scenario = scenario.name
            sets += self.lanes.overrides(lane, scenario)
        except (WorkbookError, OSError) as exc:
            message = (exc.message if isinstance(exc, WorkbookError) else str(exc)) or repr(exc)
            record.failed(f"could not start: {message.splitlines()[0]}")
            print(f"{self.batch.kind}: {item.title}: {record.reason}", file=sys.stderr,
                  flush=True)
            self.batch.save()
            return None
        return _Ready(lane, item, sets, scenario.launcher)

    def _start(self, ready: _Ready) -> None:
        """Clear leftovers, create the run directory, start the item's thread."""
        item, record = ready.item, self.batch.record(ready.item)
        cleared = clear_orphans(self.runs_root, kind=self.batch.kind,
                                skip=[r.run_dir.path for r in self._running.values()])
        self.batch.leftovers += cleared
        rd = RunDir.create(self.batch.directory, item.key)
        record.started(rd.path, retry_of=self._why.pop(item.key, None))
        self.batch.save()
        print(f"{self.batch.kind}: {item.title} -> {rd.path}", flush=True)
        thread = threading.Thread(target=self._work, name=f"{self.batch.kind} {item.key}",
                                  args=(ready.lane, item, ready.sets, rd, ready.launcher),
                                  daemon=True)
        self._running[ready.lane] = _Running(item, record, rd, thread)
        thread.start()

    def _work(self, lane: int, item: Item, sets: list[str], rd: RunDir, launcher: str) -> None:
        """One item's run, in its own thread; how it ended goes back to the engine's thread."""
        try:
            execute = self.execute or _execute_run()
            self._ended.put((lane, execute(item.params, sets, rd, runs_root=self.runs_root,
                                           launcher=launcher, echo=self.echo)))
        except BaseException as exc:  # noqa: BLE001 - recorded as a failed item; the rest go on
            try:
                with open(rd.path / ERROR_LOG, "a", encoding="utf-8") as log:
                    log.write(f"--- {self.batch.kind}: running {item.key}\n"
                              f"{traceback.format_exc()}\n")
            except OSError:
                pass
            self._ended.put((lane, exc))

    def _collect(self) -> None:
        """Wait a little for an item to end; record each that did."""
        try:
            ended = [self._ended.get(timeout=POLL_S)]
        except queue.Empty:
            return
        while True:
            try:
                ended.append(self._ended.get_nowait())
            except queue.Empty:
                break
        for lane, outcome in ended:
            running = self._running.pop(lane)
            running.thread.join()
            record = running.record
            if isinstance(outcome, BaseException):
                record.duration_s = round(time.monotonic() - running.started, 1)
                record.failed(f"the workbook failed while it ran: {type(outcome).__name__}: "
                              f"{cut(str(outcome))} (traceback in {running.run_dir.path / ERROR_LOG})")
                print(f"{self.batch.kind}: {running.item.title}: {record.reason}",
                      file=sys.stderr, flush=True)
            else:
                record.ended(outcome.verdict, outcome.reason, outcome.duration_s, outcome.report)
                for error in outcome.errors:
                    print(f"{self.batch.kind}: {running.item.key}: {error}", file=sys.stderr,
                          flush=True)
                self._retry_if_due(running)
            if record.status == Verdict.STOPPED.value and not self.stopping:
                self.stopping.append(f"{running.item.key} was stopped")
                print(f"{self.batch.kind}: {running.item.title} was stopped; nothing new starts",
                      file=sys.stderr, flush=True)
        self.batch.save()

    def _retry_if_due(self, running: _Running) -> None:
        """Queue the item to run again when its run failed as the retry policy names and
        retries are left (never while the batch is stopping)."""
        policy, record, key = self.retry, running.record, running.item.key
        if (policy is None or self.stopping or record.status != Verdict.FAILED.value
                or self.retried.get(key, 0) >= policy.max):
            return
        why = failure_of(running.run_dir, RETRIED)
        if why is None:
            return
        self.retried[key] = self.retried.get(key, 0) + 1
        self._why[key] = why
        self._again.append(running.item)
        print(f"{self.batch.kind}: {running.item.title}: {why}; running it again (retry "
              f"{self.retried[key]} of {policy.max}; {running.run_dir.path} is kept)",
              file=sys.stderr, flush=True)

    def _signals(self) -> AbstractContextManager[None]:
        """SIGINT/SIGTERM stop the batch."""

        def stop(name: str) -> None:
            self.stopping.append(name)
            print(f"\n{self.batch.kind}: stopping ({name}); nothing new starts, what runs stops "
                  "and gets its report", file=sys.stderr, flush=True)
            self._stop_all(f"stopped by the user ({name})")

        return stopping_on_signals(stop)

    def _stop_all(self, reason: str) -> None:
        """Ask every running item to stop (asked twice, a run still stops once)."""
        from workbook.launch.outcome import request_stop

        for running in list(self._running.values()):
            try:
                request_stop(running.run_dir.path, reason)
            except OSError as exc:
                print(f"{self.batch.kind}: could not ask {running.item.key} to stop: {exc}",
                      file=sys.stderr, flush=True)


def failure_of(rd: RunDir, category: str) -> str | None:
    """The diagnosis summary of a run that failed with ``category`` (run.json), else None."""
    diagnosis = rd.json_object("run").get("diagnosis")
    if not isinstance(diagnosis, dict) or diagnosis.get("category") != category:
        return None
    return str(diagnosis.get("summary") or category)


def _execute_run() -> Execute:
    from workbook.run.driver import execute_run

    return execute_run
