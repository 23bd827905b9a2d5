"""The steps of a bisect, each a run of the scenario through the batch engine.

Everything lands in one bisect directory (``<runs root>/bisects/<scenario>/<good7>-<bad7>/``):
``bisect.json`` (:mod:`workbook.bisect.state`, written after every change), ``bisect.html``
(:mod:`workbook.bisect.page`, after every step), each step's run under
``steps/<n>-<sha7>/<run_id>/`` and, while a step runs, its worktree under ``.worktrees/``
(removed when the step ends; whatever a killed bisect left is reused or replaced). Running the
same command again continues: finished steps are kept, a stopped step's commit is tested again.
A step's run is never a night of the scenario (the ledger leaves bisect steps out), so an old
commit's green run never becomes anyone's last green night.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.batch.engine import Batch, Engine, Execute, Item
from workbook.batch.records import BatchFile, Record
from workbook.bisect import bad_night
from workbook.bisect.decision import (
    GREEN_VERDICTS,
    CommitOutcome,
    Decision,
    classify,
    decide,
    states,
)
from workbook.bisect.page import write_bisect_page
from workbook.bisect.plan import BisectPlan
from workbook.bisect.repository import RepositoryError
from workbook.bisect.state import (
    STEP_FIELDS,
    BadNight,
    BisectState,
    Result,
    read_state,
)
from workbook.core.layout import (
    BISECT_FILE,
    BISECT_PAGE,
    BISECT_STEPS_DIR,
    BISECT_WORKTREES_DIR,
    now_iso,
)
from workbook.core.status import FINISHED_VERDICTS, RED, Verdict
from workbook.errors import (
    EXIT_BAD_INPUT,
    EXIT_PASSED,
    EXIT_RUN_FAILED,
    InputError,
    LaunchError,
)
from workbook.metrics.failures import INFRASTRUCTURE

# a found commit passes; a bad commit green here is bad input (nothing to bisect); every other
# end (ambiguous, stopped, failed) is a bisect that could not finish
EXIT_CODES = {"found": EXIT_PASSED, "green": EXIT_BAD_INPUT}
SHA_SHOWN = 12  # worktree folders: short enough to read, long enough never to clash


@dataclass
class BisectOutcome:
    """How a bisect invocation ended, as the command prints it."""

    directory: Path
    page: Path | None
    status: str
    message: str
    steps: list[Record] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.status, EXIT_RUN_FAILED)


def run_bisect(plan: BisectPlan, *, runs_root: Path, restart: bool = False, echo: bool = False,
               execute: Execute | None = None,
               on_start: Callable[[Path], object] | None = None) -> BisectOutcome:
    """Run (or continue) the bisect ``plan`` describes until it ends (see the module docstring).

    The same directory with other arguments is refused (InputError) unless ``restart``.
    ``execute`` runs one step's scenario (``workbook.run.driver.execute_run`` unless a test
    gives a stand-in); ``on_start(directory)`` is called once the bisect directory exists.
    """
    state = None if restart else read_state(plan.directory / BISECT_FILE)
    if state is not None and state.asked != plan.asked:
        differ = [k for k in plan.asked if state.asked.get(k) != plan.asked[k]]
        raise InputError(f"{plan.directory} holds a bisect asked with other {', '.join(differ)}: "
                         "pass --restart to start it afresh there, or --dir to bisect elsewhere")
    if state is None:
        state = BisectState(plan.asked, list(plan.candidates), plan.bad_night)
    state.bad_night = state.bad_night or plan.bad_night
    state.result = Result()
    plan.directory.mkdir(parents=True, exist_ok=True)
    bisect = Bisect(plan, state)
    bisect.batch.save()  # a restart leaves nothing of the file before
    if on_start is not None:
        on_start(plan.directory)
    bisect.announce()
    try:
        with Engine(bisect.batch, runs_root=runs_root, echo=echo, execute=execute) as engine:
            bisect.drive(engine)
    finally:
        if state.result.status == "running":  # something raised: the step could not run
            state.result = Result("failed", "the bisect ended unexpectedly")
        page = bisect.save()
        bisect.clear_worktrees()
    return BisectOutcome(plan.directory, page, state.result.status, state.result.message,
                         list(bisect.batch.records))


class Bisect:
    """One invocation of a bisect: its state, the batch of its steps, and the loop."""

    def __init__(self, plan: BisectPlan, state: BisectState) -> None:
        self.plan, self.state = plan, state
        self.subjects = {c.sha: c.subject for c in state.candidates}
        items = [self._item(str(s["key"]), str(s["sha"]), {k: s.get(k) for k in STEP_FIELDS})
                 for s in state.steps]
        self.batch = Batch("bisect", plan.directory / BISECT_STEPS_DIR, items,
                           BatchFile(plan.directory / BISECT_FILE, "steps"),
                           lambda: state.header(states([c.sha for c in state.candidates],
                                                       self.outcomes())))

    def _item(self, key: str, sha: str, about: dict[str, Any]) -> Item:
        worktree = self.plan.directory / BISECT_WORKTREES_DIR / sha[:SHA_SHOWN]
        title = f"step {about.get('step')}: {sha[:7]} {self.subjects.get(sha, '')}"
        return Item(key, self.plan.params, [*self.plan.sets, f"verl.path={worktree}"],
                    label=title, title=title, about=about)

    def announce(self) -> None:
        night = self.state.bad_night
        where = (f"{night.verdict.describe()} ({night.source}: {night.run_dir})" if night else
                 "not known yet: the bad commit runs first")
        print(f"bisect: {len(self.state.candidates)} commit(s) after {self.plan.good[:7]} up to "
              f"{self.plan.bad[:7]}; the bad verdict: {where}", flush=True)

    def outcomes(self) -> dict[str, CommitOutcome]:
        found = {str(r.about["sha"]): CommitOutcome(r.about["outcome"]) for r in self.batch.records
                 if r.about.get("outcome")}
        if self.state.bad_night is not None:
            found.setdefault(self.plan.bad, CommitOutcome.BAD)
        return found

    def drive(self, engine: Engine) -> None:
        """Test commits until the first bad one is known, the bisect is stopped or a step
        cannot run."""
        shas = [c.sha for c in self.state.candidates]
        while not engine.interrupted:
            if self.state.bad_night is None:
                if not self._step(engine, self.plan.bad):
                    return
                continue
            decision = decide(shas, self.outcomes())
            if decision.done:
                self._conclude(decision)
                return
            assert decision.next is not None
            if not self._step(engine, decision.next):
                return
        self._stopped()

    def _step(self, engine: Engine, sha: str) -> bool:
        """Test ``sha`` once; False when the bisect ends here (stopped, or cannot go on)."""
        last = self.batch.records[-1] if self.batch.records else None
        if last is not None and last.about.get("sha") == sha and not last.about.get("outcome"):
            number = int(last.about["step"])  # a stopped step: its commit is tested again
            item = next(i for i in self.batch.items if i.key == last.key)
        else:
            number = len(self.batch.records) + 1
            item = self._item(f"{number}-{sha[:7]}", sha, {"step": number, "sha": sha,
                              "subject": self.subjects.get(sha, "")})
        record = self.batch.add(item)
        worktree = self.plan.directory / BISECT_WORKTREES_DIR / sha[:SHA_SHOWN]
        try:
            self.plan.repo.checkout(worktree, sha)
        except LaunchError as exc:
            if engine.interrupted:
                return self._stopped()
            return self._end("failed", f"step {number} could not run: {exc.message}")
        if engine.interrupted:
            return self._stopped()
        record.about.update(started=now_iso(), ended=None, outcome=None, why="")
        self.batch.save()
        engine.run([item], rerun=True)
        self._remove(worktree)
        record.about["ended"] = now_iso()
        verdict = record.status
        if verdict == Verdict.STOPPED.value or (engine.interrupted
                                                and verdict not in FINISHED_VERDICTS):
            record.about["why"] = "stopped: its commit is tested again when the bisect goes on"
            return self._stopped()
        category = bad_night.diagnosis_category(record.run_dir)
        if self.state.bad_night is None:
            return self._learn_bad(record, verdict, category)
        outcome, why = classify(verdict, category, self.state.bad_night.verdict)
        record.about.update(outcome=outcome.value if outcome else None, why=why)
        print(f"bisect: step {number}: {sha[:7]} {verdict} -> {outcome or 'no outcome'} ({why})",
              flush=True)
        self.save()
        return True

    def _learn_bad(self, record: Record, verdict: str, category: str | None) -> bool:
        """The bad commit ran first: its verdict is the one that counts as bad."""
        sha = self.plan.bad[:7]
        if verdict in GREEN_VERDICTS:
            record.about["why"] = f"{verdict}: the bad commit is green here"
            return self._end("green", f"the bad commit {sha} {verdict} when run here: nothing "
                             "to bisect (was the red night's failure the machine's?)")
        if verdict not in RED or (verdict == Verdict.FAILED.value
                                           and category in (None, INFRASTRUCTURE)):
            record.about["why"] = "its failure says nothing of verl: run the bisect again to retry"
            why = "on the infrastructure" if category == INFRASTRUCTURE else "without a diagnosis"
            return self._end("failed", f"the bad commit {sha}'s own run failed {why}, so the "
                             f"verdict that counts as bad is unknown: {record.reason}")
        self.state.bad_night = BadNight(verdict, category if verdict == "failed" else None,
                                        "step", record.run_dir, record.reason)
        record.about.update(outcome=CommitOutcome.BAD.value,
                            why="the bad commit's own run: its verdict counts as bad")
        print(f"bisect: the bad commit {sha} {self.state.bad_night.verdict.describe()}: "
              "that is the verdict that counts as bad", flush=True)
        self.save()
        return True

    def _conclude(self, decision: Decision) -> None:
        if decision.first_bad is not None:
            sha = decision.first_bad
            try:
                facts: dict[str, Any] = self.plan.repo.facts(sha).to_json()
            except RepositoryError as exc:
                print(f"bisect: git show {sha[:12]} failed: {exc.message}", file=sys.stderr)
                facts = {"sha": sha, "subject": self.subjects.get(sha, "")}
            self.state.result = Result("found", f"the first bad commit is {sha[:12]} "
                                       f"{self.subjects.get(sha, '')}", facts)
            return
        shown = ", ".join(s[:7] for s in decision.one_of)
        self.state.result = Result("ambiguous", "only skipped commits are left to test: the "
                                   f"first bad commit is one of: {shown}",
                                   one_of=list(decision.one_of))

    def _stopped(self) -> bool:
        done = sum(1 for r in self.batch.records if r.about.get("outcome"))
        return self._end("stopped", f"stopped by the user after {done} step(s); run the same "
                         "command again to go on")

    def _end(self, status: str, message: str) -> bool:
        self.state.result = Result(status, message)
        return False

    def _remove(self, worktree: Path) -> None:
        try:
            self.plan.repo.remove(worktree)
        except (RepositoryError, OSError) as exc:
            message = exc.message if isinstance(exc, RepositoryError) else str(exc)
            print(f"bisect: could not remove the worktree {worktree}: {message}", file=sys.stderr)

    def clear_worktrees(self) -> None:
        """Remove every worktree left in the bisect directory (a killed bisect's too)."""
        folder = self.plan.directory / BISECT_WORKTREES_DIR
        if folder.is_dir():
            for left in sorted(folder.iterdir()):
                self._remove(left)
            try:
                folder.rmdir()
            except OSError:
                pass
        try:
            self.plan.repo.prune()
        except RepositoryError:
            pass

    def save(self) -> Path | None:
        """bisect.json, then the page from it; the page's path (None when it failed)."""
        self.batch.save()
        try:
            return write_bisect_page(self.plan.directory / BISECT_PAGE,
                                     self.batch.ledger.read(), self.plan.directory)
        except Exception as exc:  # noqa: BLE001 - the state stands; the page is reported missing
            print(f"bisect: the page could not be written: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            return None


__all__ = ["BisectOutcome", "run_bisect"]
