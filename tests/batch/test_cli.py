"""``workbook suite run`` and ``workbook sweep`` on the engine, with stand-in runs: what they
print, write and exit with, when everything runs and when they are stopped."""

from __future__ import annotations

import json
import os
import signal
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.batch.fakes import FakeRun
from workbook.cli import main


@pytest.fixture()
def runs(tmp_path: Path) -> Path:
    return tmp_path / "runs"


def test_a_sigterm_during_a_suite_still_writes_the_summary_and_the_junit_file(
        tmp_path: Path, scenario: Path, runs: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from workbook.run import driver

    fake = FakeRun(default="wait", on_start=lambda _key: os.kill(os.getpid(), signal.SIGTERM))
    monkeypatch.setattr(driver, "execute_run", fake)
    suite, junit = tmp_path / "night.txt", tmp_path / "junit.xml"
    suite.write_text(f"{scenario}\n{scenario} -s seed=7\n")

    code = main(["suite", "run", str(suite), "--runs", str(runs), "--junit", str(junit)])

    out = capsys.readouterr().out
    assert code == 3
    assert "suite: stopped by the user; entries after the stopped one did not run" in out
    assert "01-npu" in out and "02-npu-" in out  # the summary lists every entry
    assert len(fake.calls) == 1
    night = Path(out.strip().splitlines()[-1])
    entries = json.loads((night / "suite.json").read_text())["entries"]
    assert [e["status"] for e in entries] == ["stopped", "pending"]
    suites = {str(s.get("name"))[:3]: s for s in ET.parse(junit).getroot().iter("testsuite")}
    assert suites["02-"].get("skipped") == "1"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_suite_run_again_resumes_and_rerun_runs_everything(
        tmp_path: Path, scenario: Path, runs: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from workbook.run import driver

    fake = FakeRun({"01-npu": "regressed"}, default="stopped")
    monkeypatch.setattr(driver, "execute_run", fake)
    suite = tmp_path / "night.txt"
    suite.write_text(f"{scenario}\n{scenario} -s seed=7\n")
    args = ["suite", "run", str(suite), "--runs", str(runs)]

    assert main(args) == 3  # the second entry was stopped
    fake.default = "passed"
    assert main(args) == 1  # the stopped one ran again; the regressed one is kept
    assert main([*args, "--rerun"]) == 1

    assert [k[:3] for k in fake.keys] == ["01-", "02-", "02-", "01-", "02-"]
    out = capsys.readouterr().out
    night = Path(out.strip().splitlines()[-1])
    entries = json.loads((night / "suite.json").read_text())["entries"]
    assert [len(e["runs"]) for e in entries] == [2, 3]


def test_a_sweep_prints_its_table_and_comparison_and_exits_with_the_worst_verdict(
        scenario: Path, runs: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from workbook.run import driver, notebook

    fake = FakeRun({"02-seed2": "regressed"})
    monkeypatch.setattr(driver, "execute_run", fake)
    monkeypatch.setattr(notebook, "execute_comparison",
                        lambda _p, folder: folder / "comparison.html")

    code = main(["sweep", str(scenario), "--grid", "seed=1,2", "--runs", str(runs)])

    out = capsys.readouterr().out
    assert code == 1, out
    folder = Path(out.strip().splitlines()[-1])
    assert f"comparison: {folder / 'comparison.html'}" in out
    assert "sweep: point 01-seed1: seed=1 ->" in out
    data = json.loads((folder / "sweep.json").read_text())
    assert data["comparison"] == str(folder / "comparison.html")
    assert [(p["key"], p["values"], p["status"], p["exit_code"]) for p in data["points"]] == [
        ("01-seed1", {"seed": "1"}, "passed", 0), ("02-seed2", {"seed": "2"}, "regressed", 1)]
    assert all(Path(p["run_dir"]).parent.parent == folder for p in data["points"])


def test_a_sweep_replaying_rollouts_records_them_first_then_replays_them(
        scenario: Path, runs: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from workbook.core.layout import RunDir
    from workbook.run import driver, notebook
    from workbook.run.driver import RunResult

    fake = FakeRun()

    def dumping(params: Path, sets: list[str], rd: RunDir, **kwargs: Any) -> RunResult:
        (rd.path / "rollouts").mkdir()  # what verl's rollout dump leaves
        return fake(params, sets, rd, **kwargs)

    monkeypatch.setattr(driver, "execute_run", dumping)
    monkeypatch.setattr(notebook, "execute_comparison", lambda _p, folder: folder / "c.html")

    assert main(["sweep", str(scenario), "--grid", "seed=1,2,3", "--replay-rollouts",
                 "--runs", str(runs)]) == 0

    folder = Path(capsys.readouterr().out.strip().splitlines()[-1])
    first_run = json.loads((folder / "sweep.json").read_text())["points"][0]["run_dir"]
    assert [sets[-1] for _key, sets, _l in fake.calls] == [
        "rollouts.record=true", *[f"rollouts.replay={first_run}/rollouts"] * 2]
