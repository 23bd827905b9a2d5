"""Verdicts: failed runs, early stops and uncovered windows never pass; JUnit and checks.json."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from tests.checks.handmade import steady
from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.expression import compile_expression
from workbook.checks.runner import judge_run_dir
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.checks.verdict import judge
from workbook.metrics.model import RunMetrics

BASE = Baseline({"timing_s/step": BaselineMetric(value=10.0, reduce="mean", window=(5, 14)),
                 "perf/throughput": BaselineMetric(value=100.0, reduce="mean", window=(5, 14))})


def metrics_of(series: dict[str, dict[int, float]]) -> RunMetrics:
    run = RunMetrics()
    for name, values in series.items():
        for step, value in values.items():
            run.put(step, name, value, "test")
    return run


def test_on_baseline_run_passes() -> None:
    run = metrics_of(steady({"timing_s/step": 10.0, "perf/throughput": 100.0}))

    verdict = judge(run, CheckSpec(), baseline=BASE, run={"status": "succeeded", "exit_code": 0})

    assert verdict.status == "passed" and verdict.exit_code == 0
    assert [r.name for r in verdict.rows] == [
        "run completed", "reached step 14", "perf/throughput vs baseline",
        "timing_s/step vs baseline"]


def test_run_stopped_before_the_window_fails_saying_so() -> None:
    run = metrics_of(steady({"timing_s/step": 10.0, "perf/throughput": 100.0}, range(1, 9)))

    verdict = judge(run, CheckSpec(), baseline=BASE)

    assert verdict.status == "failed" and verdict.exit_code == 3
    assert "stopped at step 8, before the required step 14" in verdict.reason
    window_rows = [r for r in verdict.rows if r.kind == "baseline"]
    assert {r.status for r in window_rows} == {"error"}
    assert "window steps 5-14 does not fit the run" in window_rows[0].message


def test_explicit_min_steps_lets_an_uncovered_window_be_an_error_row(tmp_path: Path) -> None:
    spec, _ = parse_checks({"min_steps": 8}, params_dir=tmp_path)
    run = metrics_of(steady({"timing_s/step": 10.0, "perf/throughput": 100.0}, range(1, 11)))

    verdict = judge(run, spec, baseline=BASE)

    assert verdict.status == "regressed"
    assert verdict.count("error") == 2 and verdict.count("fail") == 0
    assert "could not be computed" in verdict.reason


def test_short_run_fails_min_steps_even_when_checks_pass(tmp_path: Path) -> None:
    spec, _ = parse_checks({"min_steps": 20, "expressions": ['data["x"][-1] > 0']},
                           params_dir=tmp_path)

    verdict = judge(metrics_of(steady({"x": 1.0})), spec, baseline=None)

    assert verdict.status == "failed"
    assert verdict.reason.startswith("run stopped at step 15, before the required step 20")


def test_crashed_run_fails_with_its_diagnosis() -> None:
    diagnosis = {"status": "failed", "category": "oom",
                 "summary": "CUDA out of memory in update_actor"}

    verdict = judge(metrics_of(steady({"timing_s/step": 10.0})), CheckSpec(), baseline=None,
                    run={"status": "failed", "exit_code": 1}, diagnosis=diagnosis)

    assert verdict.status == "failed"
    assert verdict.reason == "run failed with exit code 1: CUDA out of memory in update_actor"
    assert verdict.to_dict()["diagnosis"]["category"] == "oom"


def test_timeout_and_stop_fail_too() -> None:
    for status in ("timeout", "stopped"):
        verdict = judge(metrics_of(steady({"x": 1.0})), CheckSpec(), baseline=None,
                        run={"status": status, "exit_code": None})
        assert verdict.status == "failed" and status in verdict.reason


def test_no_metrics_fails_with_diagnosis_from_run_json() -> None:
    run = {"status": "failed", "exit_code": 1,
           "diagnosis": {"category": "config_error", "summary": "Could not override 'x.y'"}}

    verdict = judge(RunMetrics(), CheckSpec(), baseline=BASE, run=run)

    assert verdict.status == "failed"
    assert "no metrics were produced" in verdict.reason
    assert "Could not override 'x.y'" in verdict.reason


def test_missing_metric_in_expression_is_an_error_not_a_pass() -> None:
    spec = CheckSpec(expressions=(compile_expression('mean(data["absent"]) < 1'),))

    verdict = judge(metrics_of(steady({"x": 1.0})), spec, baseline=None)

    assert verdict.status == "regressed"
    last = verdict.rows[-1]
    assert last.status == "error" and "'absent' was not logged" in last.message


def test_non_finite_loss_regresses() -> None:
    series = steady({"actor/pg_loss": 0.1})
    series["actor/pg_loss"][7] = float("nan")

    verdict = judge(metrics_of(series), CheckSpec(), baseline=None)

    row = next(r for r in verdict.rows if r.name == "actor/pg_loss finite")
    assert row.status == "fail" and row.message == "not finite at step(s) 7"
    assert json.loads(json.dumps(verdict.to_dict()))["verdict"]["status"] == "regressed"


def test_junit_counts_failures_and_errors(tmp_path: Path) -> None:
    spec = CheckSpec(min_steps=1, expressions=(
        compile_expression('data["x"][1] > 5'), compile_expression('data["x"][1] > 0'),
        compile_expression('data["nope"][1] > 0')))
    verdict = judge(metrics_of(steady({"x": 1.0, "timing_s/step": 12.0})), spec, baseline=BASE)

    xml = ET.parse(verdict.write_junit(tmp_path / "checks.xml")).getroot()

    suite = xml.find("testsuite")
    assert (suite.get("failures"), suite.get("errors")) == ("2", "2")  # step time +20%, x > 5
    assert len(suite.findall("testcase")) == len(verdict.rows) == 6
    assert len(suite.findall("testcase/failure")) == 2
    assert suite.find("properties/property[@name='verdict']").get("value") == "regressed"


def test_checks_json_holds_rows_and_plot_data(tmp_path: Path) -> None:
    run = metrics_of(steady({"timing_s/step": 11.0, "perf/throughput": 100.0}))
    verdict = judge(run, CheckSpec(), baseline=BASE)

    data = json.loads(verdict.write_json(tmp_path / "checks.json").read_text())

    row = next(r for r in data["rows"] if r["metric"] == "timing_s/step")
    assert data["verdict"]["status"] == "regressed" and data["verdict"]["exit_code"] == 1
    assert row["status"] == "fail" and row["baseline"] == 10.0
    assert row["upper"] == 10.5 and row["lower"] is None and row["window"] == [5, 14]
    assert row["steps"] == list(range(5, 15))


def test_judging_a_run_dir_writes_checks_json_and_run_json(make_run: Callable[..., Path]) -> None:
    run = make_run(steady({"actor/pg_loss": 0.1}), checks={"expressions": [
        'data["actor/pg_loss"][-1] < 1']})

    verdict = judge_run_dir(run)

    assert verdict.status == "passed"
    assert json.loads((run / "checks.json").read_text())["rows"][-1]["source"] == (
        'data["actor/pg_loss"][-1] < 1')
    assert json.loads((run / "run.json").read_text())["verdict"]["status"] == "passed"


def test_judging_with_the_validated_scenario_uses_its_checks(make_run: Callable[..., Path],
                                                            tmp_path: Path) -> None:
    run = make_run(steady({"actor/pg_loss": 0.1}))  # its params.resolved.yaml has no checks
    scenario = SimpleNamespace(checks={"expressions": ['data["actor/pg_loss"][-1] > 1']})

    verdict = judge_run_dir(run, scenario=scenario, params_dir=tmp_path)

    assert verdict.status == "regressed" and verdict.rows[-1].status == "fail"
