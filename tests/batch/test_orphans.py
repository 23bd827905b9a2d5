"""Clearing what crashed workbook runs left running: done before each item, never silent.

A failure while clearing does not stop the batch, and it is not swallowed either: it is printed,
kept under ``leftovers`` in the batch's file and its traceback appended to the orphaned run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.batch.fakes import FakeRun
from workbook.batch.engine import Batch, Engine, Item
from workbook.batch.orphans import clear_orphans
from workbook.batch.records import BatchFile


def orphan(runs: Path, name: str = "dead") -> Path:
    """A run marked running whose driving process is gone (this PID, another start time)."""
    run_dir = runs / "gspo" / name
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({
        "status": "running", "owner_pid": os.getpid(), "owner_started": 1.0,
        "started_at": "2026-11-30T00:00:00+00:00"}))
    return run_dir


def fail_with(exc: Exception) -> Callable[..., None]:
    def raising(*_args: object, **_kwargs: object) -> None:
        raise exc

    return raising


FAILURES = [
    # what fails, the words kept in the entry's error
    ("end_run", ["could not end what it left running", "PermissionError: not yours"]),
    ("record_outcome", ["could not record its outcome in full", "RuntimeError: half a run"]),
    ("both", ["could not end", "could not record"]),
]


@pytest.mark.parametrize("failing, words", FAILURES, ids=[f[0] for f in FAILURES])
def test_a_failure_while_clearing_is_printed_and_kept_and_the_batch_goes_on(
        tmp_path: Path, scenario: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], failing: str, words: list[str]) -> None:
    from workbook.launch import leftovers
    from workbook.run import life

    runs = tmp_path / "runs"
    dead = orphan(runs)
    if failing in ("end_run", "both"):
        monkeypatch.setattr(leftovers, "end_run", fail_with(PermissionError("not yours")))
    else:
        monkeypatch.setattr(leftovers, "end_run", lambda _info, _dir: 0)
    if failing in ("record_outcome", "both"):
        monkeypatch.setattr(life, "record_outcome", fail_with(RuntimeError("half a run")))
    night = runs / "suites" / "s" / "night"
    batch = Batch("suite", night, [Item("a", scenario, [], label="a", title="entry 1: a")],
                  BatchFile(night / "suite.json", "entries"), lambda: {"suite": "s"})
    fake = FakeRun()

    with Engine(batch, runs_root=runs, execute=fake) as engine:
        engine.run(batch.items)

    assert fake.keys == ["a"]  # the entry still ran
    data = json.loads((night / "suite.json").read_text())
    (entry,) = data["leftovers"]
    assert entry["run_dir"] == str(dead)
    for word in words:
        assert word in entry["error"]
    err = capsys.readouterr().err
    assert str(dead) in err and words[0] in err
    assert "Traceback" in (dead / "workbook-error.log").read_text()
    info = json.loads((dead / "run.json").read_text())
    assert info["status"] == "failed"  # never "cleared" again before the next item
    assert data["entries"][0]["status"] == "passed"


def test_a_cleared_run_is_recorded_failed_and_listed(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from workbook.launch import leftovers

    monkeypatch.setattr(leftovers, "end_run", lambda _info, _dir: 2)
    dead = orphan(tmp_path)

    (entry,) = clear_orphans(tmp_path, kind="sweep")

    assert entry["run_dir"] == str(dead) and entry["killed"] == 2 and "error" not in entry
    info = json.loads((dead / "run.json").read_text())
    assert info["status"] == "failed" and "ended by a later sweep" in info["message"]
    assert "sweep: cleared a run left running" in capsys.readouterr().out


def test_the_runs_the_batch_drives_now_are_never_cleared(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from workbook.launch import leftovers

    ended: list[str] = []

    def end_run(_info: object, run_dir: Path) -> int:
        ended.append(run_dir.name)
        return 0

    monkeypatch.setattr(leftovers, "end_run", end_run)
    ours, theirs = orphan(tmp_path, "ours"), orphan(tmp_path, "theirs")

    cleared = clear_orphans(tmp_path, kind="sweep", skip=[ours])

    assert [e["run_dir"] for e in cleared] == [str(theirs)] and ended == ["theirs"]


def test_a_runs_root_that_cannot_be_searched_is_reported(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from workbook.launch import leftovers

    monkeypatch.setattr(leftovers, "orphaned_runs", fail_with(PermissionError("no entry")))
    (entry,) = clear_orphans(tmp_path, kind="suite")
    assert "could not look for leftovers: PermissionError: no entry" == entry["error"]
