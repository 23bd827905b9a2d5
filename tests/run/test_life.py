"""A run's life after its launch: closed in one place, each step once, the log read once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from workbook.cli import main
from workbook.core.layout import RunDir
from workbook.launch.outcome import Outcome
from workbook.metrics import reading
from workbook.run import life

DATA = Path(__file__).resolve().parents[1] / "profiles" / "data"
LOG = DATA / "gspo_cpu_run.log"  # a real run of the tiny GSPO scenario (verl 0.9.1, CPU)


def finished_run(root: Path) -> RunDir:
    """A run directory as the launcher leaves it: its log, and run.json up to the outcome."""
    rd = RunDir.create(root, "gspo-tiny-1n1cpu-fsdp2-vllm")
    shutil.copyfile(LOG, rd.file("log"))
    rd.update_run(run_id=rd.run_id, scenario="gspo-tiny-1n1cpu-fsdp2-vllm", status="running",
                  expected_steps=4, runs_root=str(root), notebook="gspo")
    life.record_outcome(rd, Outcome("succeeded", 0, "2026-12-01T10:00:00Z",
                                    "2026-12-01T10:03:00Z", 180.0), expected_steps=4)
    return rd


def times(rd: RunDir, step: str) -> int:
    return int(rd.read_json("run").get("closed", {}).get(step, {}).get("times", 0))


def test_a_run_is_judged_once_by_its_judge_cell_and_every_close_after_it(tmp_path: Path) -> None:
    rd = finished_run(tmp_path / "runs")

    verdict = life.judge(rd)  # the notebook's judge cell
    first = life.close(rd, announce=False)  # its last cell
    again = life.close(rd, announce=False)  # `workbook run` after the notebook, a report later

    assert verdict["verdict"]["status"] == rd.verdict()["status"] == "passed"
    assert times(rd, "judge") == 1 and times(rd, "report") == 1
    assert first.done == ["report", "index"] and again.done == [] and not again.errors
    assert first.report == again.report == rd.file("report")


def test_a_changed_input_is_judged_again(tmp_path: Path) -> None:
    rd = finished_run(tmp_path / "runs")
    life.close(rd, announce=False)
    with open(rd.file("log"), "a", encoding="utf-8") as log:
        log.write("Traceback (most recent call last):\nRuntimeError: the trainer died late\n")

    done = life.close(rd, announce=False)

    assert times(rd, "judge") == 2 and times(rd, "report") == 2
    assert done.done == ["judge", "report", "index"]


def test_a_changed_baseline_is_judged_again(tmp_path: Path) -> None:
    rd = finished_run(tmp_path / "runs")
    baseline = tmp_path / "tiny.baseline"
    shutil.copyfile(Path(__file__).resolve().parents[2] / "params" / "baselines"
                    / "gspo-tiny-1n1cpu-fsdp2-vllm.cpu.json", baseline)
    rd.file("params").write_text(f"profile: cpu\ntotal_training_steps: 4\nchecks:\n"
                                 f"  baseline: {baseline}\n", encoding="utf-8")
    life.judge(rd)
    life.judge(rd)
    assert times(rd, "judge") == 1
    baseline.write_text(baseline.read_text(encoding="utf-8") + "\n", encoding="utf-8")

    life.judge(rd)

    assert times(rd, "judge") == 2


def test_after_a_run_its_log_is_read_once(tmp_path: Path) -> None:
    before = reading.READS["logs"]
    rd = finished_run(tmp_path / "runs")  # the outcome is recorded: metrics and diagnosis

    life.judge(rd)
    life.close(rd, announce=False)  # judge (skipped), every report section, the index

    assert reading.READS["logs"] - before == 1
    assert rd.file("report").is_file()


def test_a_run_still_running_is_not_judged(tmp_path: Path) -> None:
    rd = RunDir.create(tmp_path / "runs", "x")
    rd.update_run(run_id=rd.run_id, status="running", runs_root=str(tmp_path / "runs"))
    rd.file("log").write_text("step:1 - actor/pg_loss:0.1\n")

    assert life.judge(rd) == {} and not rd.file("checks").exists()


def test_workbook_report_re_renders_but_does_not_re_judge(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rd = finished_run(tmp_path / "runs")
    life.close(rd, announce=False)

    assert main(["report", str(rd.path)]) == 0

    assert times(rd, "judge") == 1 and times(rd, "report") == 2
    assert capsys.readouterr().out.strip().endswith("report.html")
