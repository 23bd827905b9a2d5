"""Verdicts, diagnoses and reports of REAL runs: faults loaded into verl, a broken override,
a worker killed mid-run, Ctrl-C, and the suite resuming (issues 9 and 11).

The ``variants`` suite: (1) the tiny GSPO scenario with a slower policy loss and, at step 4,
a doubled one inside verl, (2) with a broken override (and secrets planted in its environment),
(3) with the training worker killed at step 3 -- interrupted with Ctrl-C during (3), then run
again: it resumes with (3) -- and (4) the live-rollout scenario with its rewards halved.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import SECRETS, CliRun, SuiteRun, workbook_cli
from tests.report import report_assertions as ra

pytestmark = pytest.mark.verl


def test_a_loss_scaling_bug_inside_verl_turns_the_run_red(variants: SuiteRun) -> None:
    run = variants.entry("01-")
    assert run.exit_code == 1, run.output
    data = run.json("checks.json")
    failing = {r["metric"] for r in data["rows"] if r["status"] == "fail"}
    assert "actor/pg_loss" in failing, data["verdict"]
    assert data["verdict"]["status"] == "regressed"
    ra.assert_report(run.run_dir, verdict="regressed")
    assert "regression:actor/pg_loss" in ra.panels(ra.report_html(run.run_dir))


def test_a_broken_override_fails_with_a_config_error_diagnosis(variants: SuiteRun) -> None:
    run = variants.entry("02-")
    assert run.exit_code == 3, run.output
    info = run.json("run.json")
    assert info["status"] == "failed" and info["exit_code"] != 0
    assert info["diagnosis"]["category"] == "config_error", info["diagnosis"]
    assert any("ppo_micro_batch_size" in line for line in info["diagnosis"]["evidence"])
    ra.assert_report(run.run_dir, verdict="failed", has_metrics=False)
    assert 0 < len(ra.log_tail(ra.report_html(run.run_dir))) <= 50


def test_a_worker_killed_at_step_3_fails_with_its_steps_so_far(variants: SuiteRun) -> None:
    run = variants.entry("03-")
    assert run.exit_code == 3, run.output
    info, checks = run.json("run.json"), run.json("checks.json")
    assert checks["verdict"]["status"] == "failed"
    assert info["diagnosis"]["category"] in ("worker_died", "killed"), info["diagnosis"]
    assert checks["last_step"] == 2 and checks["required_step"] == 4
    assert [json.loads(line)["step"] for line in
            (run.run_dir / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    ra.assert_report(run.run_dir, verdict="failed")


def test_ctrl_c_stops_the_current_entry_and_leaves_a_complete_summary(variants: SuiteRun) -> None:
    first = variants.first
    assert first.exit_code == 3, first.output[-3000:]
    statuses = {e["key"][:3]: e["status"] for e in variants.interim["entries"]}
    assert statuses == {"01-": "regressed", "02-": "failed", "03-": "stopped", "04-": "pending"}
    assert "stopped by the user" in first.output
    for key in ("01-gspo", "02-gspo", "03-gspo", "04-gspo"):
        assert key in first.output  # the summary table lists every entry
    assert variants.leftovers == []


def test_the_stopped_entry_is_reported_as_stopped_not_failed(variants: SuiteRun) -> None:
    (entry,) = [e for e in variants.interim["entries"] if e["key"].startswith("03-")]
    stopped = Path(entry["run_dir"])
    info = json.loads((stopped / "run.json").read_text())
    assert info["status"] == "stopped" and info["diagnosis"]["category"] == "stopped"
    facts = ra.assert_report(stopped, verdict="stopped", has_metrics=False)
    assert "Stopped by the user" in facts["reason"]


def test_running_the_suite_again_resumes_with_the_interrupted_entry(variants: SuiteRun) -> None:
    again = variants.again
    assert again is not None and again.exit_code == 3, again.output[-3000:]
    assert "suite: entry 3:" in again.output
    assert "suite: entry 1:" not in again.output and "suite: entry 2:" not in again.output
    (record,) = [r for k, r in variants.records.items() if k.startswith("03-")]
    assert len(record["runs"]) == 2  # the interrupted attempt is kept beside the new one


def test_one_junit_file_has_a_suite_per_entry_and_a_case_per_check(variants: SuiteRun) -> None:
    root = ET.parse(variants.junit).getroot()
    suites = {s.get("name")[:3]: s for s in root.iter("testsuite")}
    assert set(suites) == {"01-", "02-", "03-", "04-"}
    assert int(suites["01-"].get("failures")) >= 2 and suites["01-"].get("errors") == "0"
    assert int(suites["02-"].get("errors")) >= 1 and int(suites["03-"].get("errors")) >= 1
    passed = [c for c in suites["01-"].iter("testcase") if len(c) == 0 or all(
        child.tag == "system-out" for child in c)]
    assert len(passed) >= 5  # health checks and untouched comparisons pass
    props = {p.get("name"): p.get("value") for p in suites["03-"].iter("property")}
    assert props["verdict"] == "failed" and props["report"].endswith("report.html")


def test_the_index_lists_the_suite_night_and_every_entry(variants: SuiteRun,
                                                              session_env: dict[str, str]) -> None:
    out = workbook_cli(["index", str(variants.directory.parent)], session_env, timeout=300)
    assert out.exit_code == 0, out.output
    page = (variants.directory.parent / "index.html").read_text()
    assert 'data-night="night"' in page
    for key in variants.records:
        assert f'data-entry="{key}"' in page


def test_planted_secrets_never_reach_reports_the_index_or_a_published_site(
        variants: SuiteRun, session_env: dict[str, str], tmp_path: Path) -> None:
    run = variants.entry("02-")
    assert run.run_dir is not None
    published = tmp_path / "site"
    out = workbook_cli(["publish", str(variants.directory.parent), str(published)], session_env,
                       timeout=300)
    assert out.exit_code == 0, out.output
    command = json.loads((run.run_dir / "command.json").read_text())
    assert command["env"]["HF_TOKEN"] == "[REDACTED]"
    files = [run.run_dir / n for n in ("report.html", "command.sh", "command.json", "run.json",
                                       "params.resolved.yaml", "notebook.ipynb", "checks.json")]
    files += [variants.directory / "suite.json", variants.directory.parent / "index.html"]
    files += [p for p in published.rglob("*") if p.is_file()]
    for path in files:
        text = path.read_text(errors="replace")
        for secret in SECRETS:
            assert secret not in text, f"{secret} in {path}"


@pytest.mark.parametrize("entry, code", [("01-", 1), ("02-", 3), ("03-", 3), ("04-", 1)])
def test_workbook_check_and_report_agree_with_the_run(
        variants: SuiteRun, session_env: dict[str, str], entry: str, code: int,
        tmp_path: Path) -> None:
    run = variants.entry(entry)
    junit = tmp_path / "junit.xml"
    again = workbook_cli(["check", str(run.run_dir), "--junit", str(junit)], session_env,
                         timeout=300)
    assert again.exit_code == code, again.output
    report = workbook_cli(["report", str(run.run_dir)], session_env, timeout=300)
    assert report.exit_code == code, report.output  # report exits with the verdict's code too
    assert ra.banner(ra.report_html(run.run_dir))["verdict"] == run.json(
        "checks.json")["verdict"]["status"]


def test_the_unchanged_run_passes_check_too(gspo_run: CliRun, session_env: dict[str, str]) -> None:
    out = workbook_cli(["check", str(gspo_run.run_dir)], session_env, timeout=300)
    assert out.exit_code == 0, out.output


def test_check_rejects_a_hostile_expression_with_exit_2(gspo_run: CliRun,
                                                       session_env: dict[str, str]) -> None:
    out = workbook_cli(["check", str(gspo_run.run_dir), "--expr", '__import__("os").system("true")'],
                       session_env, timeout=120)
    assert out.exit_code == 2 and "__import__" in out.output


def test_metrics_from_the_console_log_match_the_file_logger(gspo_run: CliRun,
                                                            session_env: dict[str, str]) -> None:
    from workbook.metrics.loading import load_metrics

    rd = gspo_run.run_dir
    console, jsonl = load_metrics(rd / "run.log"), load_metrics(rd / "metrics.jsonl")
    assert console.step_numbers == jsonl.step_numbers == [1, 2, 3, 4]
    for name in ("actor/pg_loss", "actor/pg_clipfrac", "timing_s/gen", "critic/score/mean"):
        for step, value in jsonl.series(name).items():
            assert console.series(name)[step] == pytest.approx(value, abs=1e-3)


def test_diagnose_cli_on_the_failed_run(variants: SuiteRun, session_env: dict[str, str]) -> None:
    out = workbook_cli(["diagnose", str(variants.entry("02-").run_dir)], session_env, timeout=120)
    data = json.loads(out.output[out.output.index("{"):])
    assert data["status"] == "failed" and data["category"] == "config_error"
