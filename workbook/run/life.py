"""A run's life after its launch, in one place: record how it ended, judge, report, index.

:func:`close` is the one owner of that: the notebook's last cell (``pipeline.finish``), plain
papermill, ``workbook run`` after its notebook whatever became of it, ``workbook report``,
KubeRay runs and comparisons all come here. Each step runs even when an earlier one failed (its
traceback is kept in the run's ``workbook-error.log``), and each is done once: run.json's
``closed`` records, per step, a digest of the inputs it read, and a step whose inputs are
unchanged is skipped. So the notebook's judge cell and the closing never judge a run twice, and
a ``workbook report`` on a run nothing changed in re-renders nothing it need not.

A run is judged from one set of inputs, its directory: run.json, ``params.resolved.yaml`` (the
scenario as validated, every default filled in), the log, the metrics and the baseline file,
and the nights before it in its scenario's ledger (:mod:`workbook.history.judgement`, the one
judgement ``workbook check`` and a baseline proposal use too). Closing alone writes the verdict:
checks.json, run.json's ``verdict``, the report and the ledger, together.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from workbook.core.clock import now_iso
from workbook.core.layout import (
    ALIGNMENT_FILE,
    CLOSING_WRITES,
    COMPARISON_FILE,
    ERROR_LOG,
    RUN_FILES,
    RunDir,
    RunRef,
    default_root,
    file_signature,
    run_dir_of,
)
from workbook.core.status import ACTIVE, RunStatus
from workbook.launch.outcome import Outcome

if TYPE_CHECKING:
    from workbook.checks.verdict import RunVerdict

# run.json keys the closing itself writes (the verdict too): never an input of a closing step
CLOSING_KEYS = ("verdict", *CLOSING_WRITES)
DRIVEN = "WORKBOOK_DRIVEN"  # set by `workbook run` for the kernels it starts


def driven() -> bool:
    """Whether ``workbook run`` drives this kernel (it prints progress itself)."""
    return bool(os.environ.get(DRIVEN))


def record_outcome(rd: RunDir, outcome: Outcome, *, expected_steps: int | None = None,
                   conditions: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the outcome, the metrics reached, a diagnosis and the machine's ``conditions``
    while it ran into run.json (a run directory that never got as far as its log or its
    resolved params is recorded too)."""
    from workbook.metrics.reading import reading_of

    if expected_steps is None:
        expected_steps = rd.read_json("run").get("expected_steps")
    reading = reading_of(rd.path)
    diagnosis = reading.diagnose(exit_code=outcome.exit_code, expected_steps=expected_steps,
                                 status=outcome.status).to_dict()
    fields = outcome.to_dict()
    details = fields.pop("details", {})
    return rd.update_run(  # run.json is redacted inside its structure as it is written
        **fields,
        launch_details=details,
        steps_reached=reading.metrics.last_step,
        diagnosis=diagnosis,
        **({"conditions": conditions} if conditions else {}),
    )


def judge(run: RunRef) -> dict[str, Any]:
    """Judge the run (checks.json and the verdict in run.json) unless its inputs are unchanged
    since it was judged; the verdict either way. The notebook's judge cell (its closing, the
    last cell, renders the report and records the ledger from this verdict)."""
    rd = run_dir_of(run)
    _judge_step(rd)
    return _checks(rd)


def recorded(run: RunRef, verdict: RunVerdict) -> bool:
    """Whether the run's closing recorded ``verdict`` (a :class:`~workbook.checks.verdict.RunVerdict`)
    everywhere: checks.json holds it, run.json's verdict is its summary, the report was rendered
    from that checks.json and the ledger updated after it. ``workbook check`` closes the run
    again when not."""
    from workbook.core.redaction import dump_json

    rd = run_dir_of(run)
    written = json.loads(dump_json(verdict.to_dict()))  # as the writers' guard leaves it

    def same(a: Any, b: Any) -> bool:  # as text: a NaN equals itself
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)

    return (same(rd.json_object("checks"), written)
            and same(rd.json_object("run").get("verdict"), written["verdict"])
            and rd.file("report").is_file() and _recorded(rd, "report") == _inputs(rd, "report")
            and _recorded(rd, "ledger") is not None)


@dataclass
class Finished:
    """What closing did: the page written, the steps done, any step that failed."""

    run_dir: Path
    report: Path | None
    errors: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)

    def _repr_html_(self) -> str:
        import html

        report = f"<code>{html.escape(str(self.report))}</code>" if self.report else "not written"
        failed = "".join(f"<li>{html.escape(e)}</li>" for e in self.errors)
        return (f"<p data-finished>Report: {report}; run directory "
                f"<code>{html.escape(str(self.run_dir))}</code></p>"
                + (f"<p>Steps that failed:</p><ul>{failed}</ul>" if failed else ""))


class Paged(Protocol):
    """A comparison or an alignment (``compare.prepare``, ``alignment.prepare``): a folder whose
    page closing renders."""

    @property
    def folder(self) -> Path: ...


def close(run: RunRef | Paged, *, announce: bool = True, rerender: bool = False,
          rejudge: bool = False) -> Finished:
    """Close a run: record how it ended, judge it, render ``report.html``, update the ledger
    (:mod:`workbook.history.ledger`) and the index.

    ``run`` is a prepared ``Run``, a run directory, a comparison (its folder holds
    ``comparison.json``) or an alignment (``alignment.json``): of those two the page is rendered
    and the index updated. A run still marked running whose owner (the process driving it) is
    another live process is rendered as it stands and never ended here; one whose owner died,
    or is this process, is recorded as failed and whatever it left running (its tagged
    processes) is ended first. ``rerender`` renders the page even when nothing it shows changed
    (a new workbook version's page); ``rejudge`` judges the run even when its inputs did not
    change (the nights before it did: ``workbook check``). ``announce`` prints the page's path
    to the terminal the run was started from (papermill shows no cell output there).
    """
    folder = getattr(run, "folder", None)
    where = Path(folder) if folder is not None else Path(run) if isinstance(run, (str, Path)) else None
    if where is not None and (where / ALIGNMENT_FILE).is_file():
        return _close_page(where, "alignment", announce=announce)
    if where is not None and (folder is not None or (where / COMPARISON_FILE).is_file()):
        return _close_page(where, "comparison", announce=announce)
    rd = run_dir_of(cast(RunRef, run))  # not a page: a run
    done = Finished(rd.path, None)
    step = _stepper(rd, done)
    live = step("record the outcome", lambda: _record_unfinished(rd))
    if step("judge", lambda: _judge_step(rd, again=rejudge)):
        done.done.append("judge")
    report = rd.file("report")
    inputs = _inputs(rd, "report")
    if rerender or not report.is_file() or _recorded(rd, "report") != inputs or done.done:
        from workbook.report.render import render_report

        if step("render the report", lambda: render_report(rd.path)):
            done.done.append("report")
            step("record the report", lambda: _mark(rd, "report", inputs))
    done.report = report if report.is_file() else None
    if done.done or _recorded(rd, "ledger") is None:  # before the index, which shows it
        step("update the ledger", lambda: _ledger_step(rd))
    if done.done or _recorded(rd, "index") is None:
        from workbook.report.index import write_index

        root = rd.read_json("run").get("runs_root")
        if step("update the index", lambda: write_index(Path(root) if root else rd.path.parents[1])):
            done.done.append("index")
            step("record the index", lambda: _mark(rd, "index", "indexed"))
    if not live:  # a run its owner still drives has not ended
        step("record the end", lambda: rd.update_run(finished_at=now_iso(),
                                                     finish_errors=done.errors))
    if announce and not driven():
        print(f"workbook: report {done.report or 'not written'} (run {rd.path})",
              file=sys.__stderr__, flush=True)
    return done


finish = close  # the notebook's last cell: ``pipeline.finish(run)``


def _comparison_steps() -> tuple[Callable[[Path], Any], Callable[[Path], Any],
                                  Callable[[Any], Path | None]]:
    from workbook.report import compare
    from workbook.report.render import render_comparison

    return render_comparison, compare.load, compare.runs_root_of


def _alignment_steps() -> tuple[Callable[[Path], Any], Callable[[Path], Any],
                                 Callable[[Any], Path | None]]:
    from workbook.report import alignment
    from workbook.report.render import render_alignment

    return render_alignment, alignment.load, lambda record: alignment.runs_root_of(
        record.alignment)


# a page of several runs: how its closing renders it, reads its record and finds its runs root
PAGE_STEPS = {"comparison": _comparison_steps, "alignment": _alignment_steps}


def _close_page(folder: Path, what: str, *, announce: bool) -> Finished:
    """A page of several runs (a comparison, an alignment): rendered, then the index of the
    runs root its runs share (the one runs root when they do not say)."""
    from workbook.report.index import write_index

    render, load, root_of = PAGE_STEPS[what]()
    folder = folder.resolve()
    done = Finished(folder, None)
    step = _stepper(RunDir(folder), done)
    done.report = step(f"render the {what}", lambda: render(folder))
    if done.report is not None:
        done.done.append("report")
    record = step(f"read the {what}", lambda: load(folder))
    root = (root_of(record) if record is not None else None) or default_root()
    if step("update the index", lambda: write_index(root)):
        done.done.append("index")
    if announce:
        print(f"workbook: {what} {done.report or 'not written'}", file=sys.__stderr__,
              flush=True)
    return done


def _stepper(rd: RunDir, done: Finished) -> Callable[[str, Callable[[], Any]], Any]:
    def step(name: str, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except Exception as exc:  # noqa: BLE001 - every closing step must get its turn
            done.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            with open(rd.path / ERROR_LOG, "a", encoding="utf-8") as log:
                log.write(f"--- {name}\n{traceback.format_exc()}\n")
            return None

    return step


def _judge_step(rd: RunDir, *, again: bool = False) -> bool:
    """Judge (with the nights before the run) and write checks.json and run.json's verdict when
    the inputs changed since the last judgement, checks.json is not the one it wrote, there was
    none, or ``again``."""
    from workbook.history.judgement import judge_night

    inputs = _inputs(rd, "judge")
    closed = rd.json_object("run").get("closed")
    mark = closed.get("judge") if isinstance(closed, dict) else None
    written = mark.get("checks") if isinstance(mark, dict) else None
    if (not again and rd.file("checks").is_file() and _recorded(rd, "judge") == inputs
            and written == file_signature(rd.file("checks"))):
        return False
    if rd.read_json("run").get("status") in ACTIVE:
        return False  # still running: there is nothing to judge yet
    verdict = judge_night(rd.path)
    verdict.write_json(rd.file("checks"))
    if rd.file("run").exists():
        rd.update_run(verdict=verdict.summary())
    baseline = (verdict.baseline or {}).get("path")
    # the baseline the checks read is an input of the next judgement too; checks.json as
    # written tells a file replaced since (by hand, by an older workbook's check) from it
    _mark(rd, "judge", _inputs(rd, "judge", baseline=baseline), baseline=baseline,
          checks=file_signature(rd.file("checks")))
    return True


def _ledger_step(rd: RunDir) -> None:
    """Put the run in its scenario's ledger (``workbook.history``), and record the baseline
    file's digest as it was when the run was judged: a ledger rebuilt later reads it here."""
    from workbook.history.ledger import record

    root = rd.read_json("run").get("runs_root")
    entry = record(rd.path, Path(root) if root else rd.path.parents[1])
    baseline = entry.baseline if entry is not None else {}
    _mark(rd, "ledger", "recorded" if entry is not None else "not a night",
          baseline=baseline.get("path"), baseline_sha256=baseline.get("sha256"))


def _checks(rd: RunDir) -> dict[str, Any]:
    return rd.json_object("checks")


def _recorded(rd: RunDir, step: str) -> str | None:
    closed = rd.read_json("run").get("closed") or {}
    entry = closed.get(step) if isinstance(closed, dict) else None
    return entry.get("inputs") if isinstance(entry, dict) else None


def _mark(rd: RunDir, step: str, inputs: str, **extra: Any) -> None:
    """Record that ``step`` ran on ``inputs`` (and how many times it has run)."""
    closed = rd.read_json("run").get("closed") or {}
    closed = dict(closed) if isinstance(closed, dict) else {}
    before = closed.get(step)
    before = before if isinstance(before, dict) else {}
    closed[step] = {"inputs": inputs, "at": now_iso(), "times": int(before.get("times", 0)) + 1,
                    **extra}
    rd.update_run(closed=closed)


def _inputs(rd: RunDir, step: str, *, baseline: str | None = None) -> str:
    """A digest of what ``step`` reads: run.json (less what closing writes), the run's files
    by size and modification time, the baseline, and the workbook's own version."""
    run = {k: v for k, v in rd.read_json("run").items() if k not in CLOSING_KEYS}
    if baseline is None and step == "judge":
        closed = rd.read_json("run").get("closed") or {}
        judged = closed.get("judge") if isinstance(closed, dict) else None
        baseline = judged.get("baseline") if isinstance(judged, dict) else None
    files = ["log", "metrics", "params"] + (["checks"] if step == "report" else [])
    stats = [file_signature(rd.file(key)) for key in files]
    if baseline:
        stats.append(file_signature(Path(baseline)))
    text = json.dumps({"run": run, "files": stats, "baseline": baseline,
                       "workbook": _version()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _version() -> str:
    try:
        return metadata.version("verl-workbook")
    except metadata.PackageNotFoundError:
        return "source"


def _record_unfinished(rd: RunDir) -> bool:
    """A run whose notebook died leaves 'prepared'/'running': end what it started (the processes
    carrying its tag), record it failed. True when another live process still drives it: that
    owner's run is left as it is."""
    from workbook.launch.leftovers import end_run, owned_elsewhere

    info = rd.read_json("run")
    if info.get("status") not in (None, *ACTIVE):
        return False
    if owned_elsewhere(info):
        return True
    try:
        end_run(info, rd.path)
    finally:  # recorded even when something it left could not be ended (the error is kept)
        message = "the notebook stopped before the run finished"
        record_outcome(rd, Outcome(RunStatus.FAILED.value, None, info.get("started_at", ""),
                                   now_iso(), 0.0, message))
    return False


__all__ = ["DRIVEN", "Finished", "close", "driven", "finish", "judge", "record_outcome",
           "recorded", "run_dir_of", "RUN_FILES"]
