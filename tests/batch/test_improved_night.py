"""An ``improved`` entry is a finished, green one: it exits 0, a night's worst-of stays green
beside passes, resuming keeps it, and the batch's JUnit file says ``improved``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.batch.fakes import FakeRun
from workbook.batch.junit import recorded_verdict, write_batch_junit
from workbook.batch.records import Record, resumed
from workbook.batch.suite import read_suite, run_suite
from workbook.checks.rows import CheckRow, StepBand
from workbook.checks.verdict import RunVerdict

IMPROVED = RunVerdict(
    "improved", "1 metric improved beyond its band: propose a baseline refresh: workbook "
    "baseline propose npu; improved: timing_s/step; all 2 checks passed or improved",
    rows=[CheckRow("run completed", "run", "pass"),
          CheckRow("timing_s/step vs baseline", "baseline", "improved", value=9.0,
                   expected="<= 10.5", message="improved by 0.5 beyond 9.5",
                   metric="timing_s/step", baseline=10.0, upper=10.5, improved_beyond=9.5,
                   window=(5, 14)),
          CheckRow("timing_s/gen vs baseline", "baseline", "pass", value=4.0,
                   metric="timing_s/gen", compared_by="steps",
                   step_bands={5: StepBand(4.0, 4.0, None, 4.2, 0.0, 3.8)})],
    last_step=15, required_step=15, run_status="succeeded")


def test_an_improved_entry_exits_0_and_is_recorded_as_improved(
        tmp_path: Path, scenario: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbook.batch.sweep import plan_sweep, run_sweep
    from workbook.run import notebook

    monkeypatch.setattr(notebook, "execute_comparison", lambda _p, folder: folder / "c.html")
    suite = tmp_path / "s.txt"
    suite.write_text(f"{scenario}\n")
    night = run_suite(suite, runs_root=tmp_path, execute=FakeRun(default="improved"))
    sweep = run_sweep(plan_sweep(scenario, ["seed=1"], [], replay_rollouts=False,
                                 runs_root=tmp_path), runs_root=tmp_path,
                      execute=FakeRun(default="improved"))

    (entry,) = json.loads((night.directory / "suite.json").read_text())["entries"]
    (point,) = json.loads((sweep.directory / "sweep.json").read_text())["points"]
    assert (entry["status"], entry["exit_code"]) == (point["status"], point["exit_code"]) == (
        "improved", 0)
    assert night.exit_code == sweep.exit_code == 0


NIGHTS = [
    # the other entry's verdict -> the night's exit code
    ("passed", 0),
    ("improved", 0),
    ("regressed", 1),
    ("failed", 3),
]


@pytest.mark.parametrize("other, code", NIGHTS, ids=[o for o, _ in NIGHTS])
def test_an_improved_entry_is_green_in_the_nights_worst_of(
        tmp_path: Path, scenario: Path, other: str, code: int) -> None:
    suite = tmp_path / "s.txt"
    suite.write_text(f"{scenario}\n{scenario} -s seed=7\n")
    first, second = (e.key for e in read_suite(suite))

    night = run_suite(suite, runs_root=tmp_path,
                      execute=FakeRun({first: "improved", second: other}))

    assert [r.status for r in night.entries] == ["improved", other]
    assert night.exit_code == code


def test_resuming_keeps_an_improved_entry(tmp_path: Path, scenario: Path) -> None:
    suite = tmp_path / "s.txt"
    suite.write_text(f"{scenario}\n")
    run_suite(suite, runs_root=tmp_path, execute=FakeRun(default="improved"))

    again = FakeRun()
    night = run_suite(suite, runs_root=tmp_path, execute=again)

    assert again.keys == [] and [r.status for r in night.entries] == ["improved"]
    assert night.exit_code == 0


def test_an_improved_record_read_back_is_finished_with_exit_0() -> None:
    record = resumed({"key": "k", "status": "improved", "exit_code": 1, "run_dir": "/r",
                      "reason": "1 metric improved"}, "k", "npu", {})

    assert (record.status, record.exit_code, record.finished) == ("improved", 0, True)
    ended = Record("k")
    ended.ended("improved", "1 metric improved", 2.0, None)
    assert (ended.status, ended.exit_code) == ("improved", 0)


def test_the_batch_junit_says_improved_and_reads_the_edges_back(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    IMPROVED.write_json(run_dir / "checks.json")

    assert recorded_verdict(run_dir).to_dict() == IMPROVED.to_dict()
    junit = write_batch_junit([Record("01-npu", "npu", status="improved", exit_code=0,
                                      run_dir=str(run_dir))], tmp_path / "junit.xml")

    (suite,) = ET.parse(junit).getroot().iter("testsuite")
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "0", "0")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["verdict"] == "improved"
    case = suite.find("testcase[@name='timing_s/step vs baseline']")
    assert case is not None
    assert (case.findtext("system-out") or "").startswith("improved: value: 9.0")
