"""The default scenario end to end with the real verl 0.9.1 trainer on CPU (issue 2)."""

from __future__ import annotations

import json
import math
import re

import psutil
import pytest

from tests.conftest import CliRun

pytestmark = pytest.mark.verl


def records(run: CliRun) -> list[dict]:
    assert run.run_dir is not None, run.output[-3000:]
    lines = (run.run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_default_scenario_trains_the_configured_steps_and_passes(passed_run: CliRun) -> None:
    assert passed_run.exit_code == 0, passed_run.output[-4000:]
    steps = records(passed_run)
    assert [r["step"] for r in steps] == [1, 2, 3, 4]
    assert all(math.isfinite(r["data"]["actor/pg_loss"]) for r in steps)
    clipfrac = [r["data"]["actor/pg_clipfrac"] for r in steps]
    assert all(0.0 <= c <= 1.0 for c in clipfrac)
    assert any(c > 0 for c in clipfrac), "several updates per step must clip something"
    assert all(r["data"]["timing_s/gen"] > 0 for r in steps)


def test_run_directory_holds_every_artifact(passed_run: CliRun) -> None:
    rd = passed_run.run_dir
    assert rd is not None
    for name in ("params.resolved.yaml", "command.json", "command.sh", "run.log", "metrics.jsonl",
                 "run.json", "checks.json", "notebook.ipynb", "report.html"):
        assert (rd / name).is_file(), name
    info = passed_run.json("run.json")
    assert info["status"] == "succeeded" and info["exit_code"] == 0
    assert info["wall_time_s"] > 0 and info["started_at"] < info["ended_at"]
    assert info["versions"]["verl"] == "0.9.1"
    command = passed_run.json("command.json")
    assert command["argv"][1:3] == ["-m", "verl.trainer.main_ppo"]
    assert command["env"]["VERL_FILE_LOGGER_PATH"] == str(rd / "metrics.jsonl")
    assert "step:4 " in (rd / "run.log").read_text()


def test_cli_prints_the_run_directory_last(passed_run: CliRun) -> None:
    assert passed_run.stdout.strip().splitlines()[-1] == str(passed_run.run_dir)


def test_report_is_self_contained_with_the_three_plots(passed_run: CliRun) -> None:
    assert passed_run.run_dir is not None
    html = (passed_run.run_dir / "report.html").read_text()
    assert len(re.findall(r'<img[^>]+src="data:image/png;base64,', html)) >= 3
    assert 'src="http' not in html
    assert not re.search(r'<link[^>]+href="http', html)


def test_interrupted_run_leaves_no_process_and_a_stopped_report(stopped_run: CliRun) -> None:
    assert stopped_run.exit_code == 3, stopped_run.output[-3000:]
    rd = stopped_run.run_dir
    assert rd is not None
    info = json.loads((rd / "run.json").read_text())
    assert info["status"] == "stopped"
    marker = f"/tmp/wb-{rd.name[-6:]}"
    leftovers = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or ())
        if marker in cmd or str(rd) in cmd:
            leftovers.append(cmd[:200])
    assert leftovers == []
    assert (rd / "report.html").is_file()
    assert "stopped" in (rd / "report.html").read_text().lower()
