"""Verdicts, diagnoses and reports of REAL runs of the tiny CPU scenario (issues 3, 4, 6).

Three session runs: unchanged (passed against the committed blessed baseline), with an
impossible expression check (regressed), and with a broken override (failed).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import CliRun, workbook_cli
from tests.report import report_assertions as ra

pytestmark = pytest.mark.verl


def checks(run: CliRun) -> dict:
    return run.json("checks.json")


def test_passed_run_exits_0_against_its_blessed_baseline(passed_run: CliRun) -> None:
    assert passed_run.exit_code == 0, passed_run.output[-3000:]
    data = checks(passed_run)
    assert data["verdict"]["status"] == "passed"
    assert data["baseline"]["path"].endswith("gspo-tiny-1n1cpu-fsdp2-vllm.cpu.json")
    compared = {r["metric"] for r in data["rows"] if r["kind"] == "baseline"}
    assert {"timing_s/step", "timing_s/gen", "actor/pg_clipfrac"} <= compared
    assert all(r["status"] == "pass" for r in data["rows"])


def test_impossible_threshold_regresses_with_exit_1_and_the_computed_value(regressed_run: CliRun) -> None:
    assert regressed_run.exit_code == 1, regressed_run.output[-3000:]
    data = checks(regressed_run)
    assert data["verdict"]["status"] == "regressed"
    (row,) = [r for r in data["rows"] if r["status"] == "fail"]
    steps = [json.loads(line) for line in (regressed_run.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert row["value"] == pytest.approx(max(s["data"]["timing_s/step"] for s in steps))
    assert "0.001" in row["message"]


def test_broken_override_fails_with_exit_3_and_a_config_error_diagnosis(failed_run: CliRun) -> None:
    assert failed_run.exit_code == 3, failed_run.output[-3000:]
    info = failed_run.json("run.json")
    assert info["status"] == "failed" and info["exit_code"] != 0
    diagnosis = info["diagnosis"]
    assert diagnosis["category"] == "config_error", diagnosis
    assert any("ppo_micro_batch_size" in line for line in diagnosis["evidence"]), diagnosis
    assert checks(failed_run)["verdict"]["status"] == "failed"


@pytest.mark.parametrize("fixture, code", [("passed_run", 0), ("regressed_run", 1), ("failed_run", 3)])
def test_workbook_check_on_the_run_directory_agrees(
    request: pytest.FixtureRequest, fixture: str, code: int, session_env: dict[str, str], tmp_path: Path
) -> None:
    run: CliRun = request.getfixturevalue(fixture)
    junit = tmp_path / "junit.xml"
    again = workbook_cli(["check", str(run.run_dir), "--junit", str(junit)], session_env, timeout=120)
    assert again.exit_code == code, again.output
    suite = ET.parse(junit).getroot()
    failures = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    assert (failures == 0) == (code == 0)


def test_check_rejects_a_hostile_expression_with_exit_2(passed_run: CliRun, session_env: dict[str, str]) -> None:
    out = workbook_cli(["check", str(passed_run.run_dir), "--expr", '__import__("os").system("true")'],
                       session_env, timeout=120)
    assert out.exit_code == 2 and "__import__" in out.output


def test_metrics_from_the_console_log_match_the_file_logger(passed_run: CliRun, session_env: dict[str, str]) -> None:
    from workbook.metrics.loading import load_metrics

    rd = passed_run.run_dir
    console, jsonl = load_metrics(rd / "run.log"), load_metrics(rd / "metrics.jsonl")
    assert console.step_numbers == jsonl.step_numbers == [1, 2, 3, 4]
    for name in ("actor/pg_loss", "actor/pg_clipfrac", "timing_s/gen", "critic/score/mean"):
        for step, value in jsonl.series(name).items():
            assert console.series(name)[step] == pytest.approx(value, abs=1e-3)
    printed = workbook_cli(["metrics", str(rd), "--format", "jsonl"], session_env, timeout=120)
    records = [json.loads(line) for line in printed.output.splitlines() if line.startswith("{")]
    assert [r["step"] for r in records] == [1, 2, 3, 4]


def test_diagnose_cli_on_the_failed_run(failed_run: CliRun, session_env: dict[str, str]) -> None:
    out = workbook_cli(["diagnose", str(failed_run.run_dir)], session_env, timeout=120)
    data = json.loads(out.output[out.output.index("{"):])
    assert data["status"] == "failed" and data["category"] == "config_error"


def test_reports_of_the_three_real_runs(passed_run: CliRun, regressed_run: CliRun, failed_run: CliRun) -> None:
    facts = ra.assert_report(passed_run.run_dir, verdict="passed")
    assert facts["scenario"] == "gspo-tiny-1n1cpu-fsdp2-vllm"
    page = ra.report_html(passed_run.run_dir)
    present = ra.panels(page)
    assert {"reward", "response_length", "throughput"} <= present
    assert "critic" not in present  # GSPO has no critic: the panel is left out, not drawn empty

    ra.assert_report(regressed_run.run_dir, verdict="regressed")
    regressed = ra.report_html(regressed_run.run_dir)
    assert "fail" in ra.check_rows(regressed).values()

    ra.assert_report(failed_run.run_dir, verdict="failed", has_metrics=False)
    failed = ra.report_html(failed_run.run_dir)
    assert "config_error" in failed or "Configuration error" in failed
    assert 0 < len(ra.log_tail(failed)) <= 50
