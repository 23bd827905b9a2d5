"""The batch engine suites and sweeps share: resuming, records, validation, stopping, leftovers.

The per-item run is a stand-in (:class:`tests.batch.fakes.FakeRun`); the real runs are the e2e
suites'.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest

from tests.batch.fakes import FakeRun
from workbook.batch.engine import Batch, Engine, Item, validate_items
from workbook.batch.lanes import Lanes
from workbook.batch.records import BatchFile, resumed
from workbook.errors import ParamsError


def item(scenario: Path, key: str, sets: list[str] | None = None) -> Item:
    return Item(key, scenario, list(sets or []), label=f"item {key}", title=f"item {key}")


def batch_of(tmp_path: Path, scenario: Path, keys: list[str], *,
             recorded: list[dict] | None = None) -> Batch:
    folder = tmp_path / "night"
    folder.mkdir(exist_ok=True)
    ledger = BatchFile(folder / "suite.json", "entries", keep_others=True)
    if recorded is not None:
        ledger.path.write_text(json.dumps({"suite": "t", "entries": recorded}))
    return Batch("suite", folder, [item(scenario, k) for k in keys], ledger,
                 lambda: {"suite": "t"})


def saved(batch: Batch) -> dict[str, dict]:
    data = json.loads(batch.ledger.path.read_text())
    return {e["key"]: e for e in data["entries"]}


RESUME = [
    # status in the file, runs again, status after the invocation
    ("passed", False, "passed"),
    ("regressed", False, "regressed"),
    ("failed", False, "failed"),
    ("stopped", True, "passed"),
    ("running", True, "passed"),   # its workbook died during it
    ("pending", True, "passed"),
    ("no-such-word", True, "passed"),
]


@pytest.mark.parametrize("status, runs_again, after", RESUME, ids=[r[0] for r in RESUME])
def test_resuming_keeps_finished_verdicts_and_runs_the_rest_again(
        tmp_path: Path, scenario: Path, status: str, runs_again: bool, after: str) -> None:
    earlier = str(tmp_path / "night" / "a" / "earlier")
    batch = batch_of(tmp_path, scenario, ["a"], recorded=[
        {"key": "a", "status": status, "run_dir": earlier, "runs": [earlier]}])
    fake = FakeRun()

    with Engine(batch, runs_root=tmp_path / "runs", execute=fake) as engine:
        engine.run(batch.items)

    assert fake.keys == (["a"] if runs_again else [])
    record = saved(batch)["a"]
    assert record["status"] == after
    assert record["runs"][0] == earlier  # an earlier attempt is kept beside a new one
    assert len(record["runs"]) == (2 if runs_again else 1)


@pytest.mark.parametrize("status", ["passed", "regressed", "failed", "stopped"])
def test_rerun_runs_every_item_whatever_it_recorded(tmp_path: Path, scenario: Path,
                                                    status: str) -> None:
    batch = batch_of(tmp_path, scenario, ["a"], recorded=[{"key": "a", "status": status}])
    fake = FakeRun()
    with Engine(batch, runs_root=tmp_path, execute=fake) as engine:
        engine.run(batch.items, rerun=True)
    assert fake.keys == ["a"] and saved(batch)["a"]["status"] == "passed"


RECORDS = [
    # a sweep point: the exit code is the verdict's, whatever the file says
    ({"key": "k", "values": {"x": "1"}, "status": "passed", "run_dir": "/r", "runs": ["/r"],
      "exit_code": 0, "reason": "all 5 checks passed", "duration_s": 12.5,
      "report": "/r/report.html"},
     {"status": "passed", "exit_code": 0, "runs": ["/r"], "report": "/r/report.html",
      "duration_s": 12.5, "reason": "all 5 checks passed"}),
    ({"key": "k", "status": "failed", "run_dir": "/r", "runs": ["/r"], "exit_code": 1},
     {"status": "failed", "exit_code": 3, "runs": ["/r"]}),
    ({"key": "k", "status": "stopped", "run_dir": "/r", "runs": ["/r"], "exit_code": -2},
     {"status": "stopped", "exit_code": 3, "runs": ["/r"]}),
    ({"key": "k", "status": "running", "run_dir": "/r", "runs": ["/r"], "exit_code": None},
     {"status": "pending", "exit_code": None, "runs": ["/r"]}),
    # a suite entry
    ({"key": "k", "line": "a.yaml", "scenario": "a", "status": "regressed", "exit_code": 1,
      "reason": "1 failed", "run_dir": "/r2", "runs": ["/r1", "/r2"]},
     {"status": "regressed", "exit_code": 1, "runs": ["/r1", "/r2"], "scenario": "a"}),
    ("not a record", {"status": "pending", "exit_code": None, "runs": []}),
]


@pytest.mark.parametrize("saved, expected", RECORDS)
def test_a_saved_record_is_taken_over_with_its_verdicts_exit_code(saved: object,
                                                                  expected: dict) -> None:
    record = resumed(saved, "k", "npu", {"values": {"x": "1"}})
    assert {k: getattr(record, k) for k in expected} == expected


def test_a_sweep_file_resumes_with_the_verdicts_exit_code_not_the_saved_one(
        tmp_path: Path, scenario: Path) -> None:
    from workbook.batch.sweep import plan_sweep

    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / "sweep.json").write_text(json.dumps({"params": str(scenario), "points": [
        {"key": "01-seed1", "values": {"seed": "1"}, "status": "regressed", "run_dir": "/r1",
         "runs": ["/r1"], "exit_code": 1, "reason": "", "duration_s": 3.0, "report": None},
        {"key": "02-seed2", "values": {"seed": "2"}, "status": "failed", "run_dir": "/r2",
         "runs": ["/r2"], "exit_code": 0, "reason": "", "duration_s": None, "report": None}]}))

    sweep = plan_sweep(scenario, ["seed=1,2"], [], replay_rollouts=False, runs_root=tmp_path,
                       directory=folder)

    assert [(p.record.status, p.record.exit_code) for p in sweep.points] == [
        ("regressed", 1), ("failed", 3)]
    assert sweep.exit_code == 3


def test_validation_lists_every_problem_of_every_item_at_once(scenario: Path) -> None:
    items = [item(scenario, "good"), item(scenario, "two", ["lr=nan", "seed=-5"]),
             item(scenario, "unknown", ["no_such_field=1"]), item(scenario, "good2", ["seed=3"])]

    with pytest.raises(ParamsError) as raised:
        validate_items(items, source="suite", problems=[("s.txt:9", "unreadable line")])

    where = [f for f, _ in raised.value.problems]
    assert where[0] == "s.txt:9"  # problems found before come first
    assert "item two: lr" in where and "item two: seed" in where
    assert any(w.startswith("item unknown") for w in where)
    assert not any(w.startswith(("item good:", "item good2")) for w in where)
    assert raised.value.source == "suite"


VERDICTS = [("passed", 0), ("regressed", 1), ("failed", 3), ("stopped", 3)]


@pytest.mark.parametrize("verdict, code", VERDICTS, ids=[v for v, _ in VERDICTS])
def test_exit_code_is_the_verdicts_in_a_suite_and_in_a_sweep_alike(
        tmp_path: Path, scenario: Path, monkeypatch: pytest.MonkeyPatch, verdict: str,
        code: int) -> None:
    from workbook.batch.suite import run_suite
    from workbook.batch.sweep import plan_sweep, run_sweep
    from workbook.run import notebook

    monkeypatch.setattr(notebook, "execute_comparison", lambda _p, folder: folder / "c.html")
    suite = tmp_path / "s.txt"
    suite.write_text(f"{scenario}\n")
    night = run_suite(suite, runs_root=tmp_path, execute=FakeRun(default=verdict))
    sweep = run_sweep(plan_sweep(scenario, ["seed=1"], [], replay_rollouts=False,
                                 runs_root=tmp_path), runs_root=tmp_path,
                      execute=FakeRun(default=verdict))

    (entry,) = json.loads((night.directory / "suite.json").read_text())["entries"]
    (point,) = json.loads((sweep.directory / "sweep.json").read_text())["points"]
    fields = ("status", "exit_code", "reason", "duration_s")
    assert [entry[f] for f in fields] == [point[f] for f in fields] == [
        verdict, code, f"it {verdict}", 1.2]  # never the run process's return code
    assert night.exit_code == sweep.exit_code == code
    assert entry["run_dir"] == entry["runs"][-1] and point["run_dir"] == point["runs"][-1]
    assert entry["line"] == str(scenario) and point["values"] == {"seed": "1"}


def test_sigterm_stops_launching_stops_what_runs_and_records_it(
        tmp_path: Path, scenario: Path) -> None:
    """CI's SIGTERM reaches only the batch's process; its running items must still stop."""
    both = threading.Barrier(2, action=lambda: os.kill(os.getpid(), signal.SIGTERM))
    fake = FakeRun(default="wait", on_start=lambda _key: both.wait(timeout=30))
    batch = batch_of(tmp_path, scenario, ["a", "b", "c"])

    with Engine(batch, runs_root=tmp_path, lanes=Lanes(batch.directory, 2),
                execute=fake) as engine:
        engine.run(batch.items)

    assert engine.stopping == ["SIGTERM"] and engine.interrupted
    assert sorted(fake.keys) == ["a", "b"]  # nothing new started after the signal
    records = saved(batch)
    assert [records[k]["status"] for k in "abc"] == ["stopped", "stopped", "pending"]
    for key in "ab":
        assert records[key]["reason"] == "stopped by the user (SIGTERM)"
        assert records[key]["exit_code"] == 3
    assert batch.exit_code == 3
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back


def test_an_item_that_raises_is_recorded_failed_and_the_others_go_on(
        tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batch = batch_of(tmp_path, scenario, ["a", "b"])
    fake = FakeRun(raising={"a": RuntimeError("kernel gone")})

    with Engine(batch, runs_root=tmp_path, execute=fake) as engine:
        engine.run(batch.items)

    records = saved(batch)
    assert (records["a"]["status"], records["a"]["exit_code"]) == ("failed", 3)
    assert "RuntimeError: kernel gone" in records["a"]["reason"]
    assert "kernel gone" in capsys.readouterr().err
    assert "RuntimeError" in (Path(records["a"]["run_dir"]) / "workbook-error.log").read_text()
    assert records["b"]["status"] == "passed"


def test_an_item_stopped_by_the_user_stops_the_batch(tmp_path: Path, scenario: Path) -> None:
    batch = batch_of(tmp_path, scenario, ["a", "b", "c"])
    fake = FakeRun({"b": "stopped"})

    with Engine(batch, runs_root=tmp_path, execute=fake) as engine:
        engine.run(batch.items)

    assert fake.keys == ["a", "b"] and engine.interrupted
    assert [saved(batch)[k]["status"] for k in "abc"] == ["passed", "stopped", "pending"]


def test_an_item_that_cannot_start_is_recorded_failed(tmp_path: Path, scenario: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from workbook.errors import LaunchError

    def no_cluster(self: Lanes, lane: int, scenario: object) -> list[str]:
        raise LaunchError("the local cluster did not come up within 120 s")

    monkeypatch.setattr(Lanes, "overrides", no_cluster)
    batch = batch_of(tmp_path, scenario, ["a"])
    fake = FakeRun()
    with Engine(batch, runs_root=tmp_path, execute=fake) as engine:
        engine.run(batch.items)

    record = saved(batch)["a"]
    assert fake.keys == [] and (record["status"], record["exit_code"]) == ("failed", 3)
    assert record["reason"] == "could not start: the local cluster did not come up within 120 s"


def test_the_records_of_keys_another_invocation_ran_stay_in_the_file(
        tmp_path: Path, scenario: Path) -> None:
    other = {"key": "z", "status": "regressed", "exit_code": 1}
    batch = batch_of(tmp_path, scenario, ["a"], recorded=[other])
    with Engine(batch, runs_root=tmp_path, execute=FakeRun()) as engine:
        engine.run(batch.items)
    assert list(saved(batch)) == ["z", "a"] and saved(batch)["z"] == other
