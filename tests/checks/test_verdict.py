"""Verdicts: no failed run passes, every check can fail, neutral rows are never passes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.checks.handmade import evidence_of, steady
from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.expression import compile_expression
from workbook.checks.junit import verdict_suite, write_junit
from workbook.checks.runner import judge_run_dir
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.checks.verdict import judge_checks

BASE = Baseline({"timing_s/step": BaselineMetric(value=10.0, reduce="mean", window=(5, 14)),
                 "perf/throughput": BaselineMetric(value=100.0, reduce="mean", window=(5, 14))})
CPU = {"profile": "cpu", "device": "Test CPU", "count": 2}
RUN_ON_CPU = {"status": "succeeded", "exit_code": 0, "profile": "cpu",
              "hardware": {"cpu": "Test CPU", "cpus": 2}}


def blessed(**metrics: tuple[float, float]) -> Baseline:
    """A baseline blessed from 3 runs: metric -> (mean, sigma) over the window 5-14."""
    return Baseline({m: BaselineMetric(value=v, reduce="mean", window=(5, 14), sigma=s, n=3)
                     for m, (v, s) in metrics.items()}, hardware_key=CPU,
                    settings={"lr": 1e-4, "clip_ratio_high": 4e-4})


def test_on_baseline_run_passes_and_the_reason_counts_every_row() -> None:
    evidence = evidence_of(steady({"timing_s/step": 10.0, "perf/throughput": 100.0}),
                           expected_steps=15)

    verdict = judge_checks(evidence, CheckSpec(), baseline=BASE)

    assert verdict.status == "passed" and verdict.exit_code == 0
    assert [r.name for r in verdict.rows] == [
        "run completed", "reached step 15", "perf/throughput vs baseline",
        "timing_s/step vs baseline"]
    assert verdict.reason == "all 4 checks passed"


def test_a_run_short_of_its_expected_steps_fails_saying_so() -> None:
    evidence = evidence_of(steady({"timing_s/step": 10.0, "perf/throughput": 100.0}, range(1, 9)),
                           expected_steps=15)

    verdict = judge_checks(evidence, CheckSpec(), baseline=BASE)

    assert verdict.status == "failed" and verdict.exit_code == 3
    assert "the run stopped at step 8, before step 15" in verdict.reason
    window_rows = [r for r in verdict.rows if r.kind == "baseline"]
    assert {r.status for r in window_rows} == {"error"}
    assert "window steps 5-14 does not fit the run" in window_rows[0].message


def test_min_steps_decides_the_required_step(tmp_path: Path) -> None:
    spec, _ = parse_checks({"min_steps": 8}, params_dir=tmp_path)
    evidence = evidence_of(steady({"timing_s/step": 10.0, "perf/throughput": 100.0},
                                  range(1, 11)), expected_steps=15)

    verdict = judge_checks(evidence, spec, baseline=BASE)

    assert verdict.status == "regressed"  # reached min_steps; the window 5-14 is not covered
    assert verdict.count("error") == 2 and verdict.count("fail") == 0
    assert "could not be computed" in verdict.reason


def test_a_crashed_run_fails_with_its_diagnosis() -> None:
    diagnosis = {"status": "failed", "category": "oom",
                 "summary": "Out of memory: CUDA out of memory in update_actor; last step 15"}

    verdict = judge_checks(evidence_of(steady({"timing_s/step": 10.0}), diagnosis=diagnosis,
                                run={"status": "failed", "exit_code": 1}),
                    CheckSpec(), baseline=None)

    assert verdict.status == "failed"
    assert verdict.reason == "Out of memory: CUDA out of memory in update_actor; last step 15"
    assert verdict.to_dict()["diagnosis"]["category"] == "oom"


def test_a_fatal_error_in_a_bare_log_fails_without_any_exit_code() -> None:
    diagnosis = {"status": "failed", "category": "collective_timeout",
                 "summary": "Collective communication failed or timed out: Watchdog caught "
                            "collective operation timeout; last step 1"}

    verdict = judge_checks(evidence_of(steady({"actor/pg_loss": 0.1}, range(1, 2)), run={},
                                diagnosis=diagnosis), CheckSpec(), baseline=None)

    assert verdict.status == "failed" and "Watchdog" in verdict.reason


def test_a_bare_log_that_states_no_total_and_no_error_passes() -> None:
    diagnosis = {"status": "incomplete", "category": "none", "summary": "No exit status"}

    verdict = judge_checks(evidence_of(steady({"actor/pg_loss": 0.1}), run={}, diagnosis=diagnosis),
                    CheckSpec(), baseline=None)

    assert verdict.status == "passed"
    assert "does not state how many steps" in verdict.rows[0].message


def test_a_stopped_run_is_stopped_and_exits_3_and_a_timeout_fails() -> None:
    stopped = {"status": "stopped", "category": "stopped",
               "summary": "Stopped by the user; last step 6"}
    verdict = judge_checks(evidence_of(steady({"x": 1.0}, range(1, 7)), diagnosis=stopped,
                                run={"status": "stopped", "exit_code": -15},
                                expected_steps=15), CheckSpec(), baseline=None)
    assert (verdict.status, verdict.exit_code) == ("stopped", 3)
    assert verdict.reason.startswith("Stopped by the user; last step 6")

    timeout = {"status": "failed", "category": "timeout", "summary": "Timed out; last step 6"}
    verdict = judge_checks(evidence_of(steady({"x": 1.0}), diagnosis=timeout,
                                run={"status": "timeout", "exit_code": -15}),
                    CheckSpec(), baseline=None)
    assert verdict.status == "failed" and "Timed out" in verdict.reason


def test_no_metrics_fails_with_the_diagnosis() -> None:
    diagnosis = {"status": "failed", "category": "config_error",
                 "summary": "Configuration error: Could not override 'x.y'; no step completed"}

    evidence = evidence_of({}, diagnosis=diagnosis, run={"status": "failed", "exit_code": 1},
                           expected_steps=4)
    verdict = judge_checks(evidence, CheckSpec(), baseline=BASE)

    assert verdict.status == "failed"
    assert "Could not override 'x.y'" in verdict.reason and "no step completed" in verdict.reason


def test_missing_metric_in_expression_is_an_error_not_a_pass() -> None:
    spec = CheckSpec(expressions=(compile_expression('mean(data["absent"]) < 1'),))

    verdict = judge_checks(evidence_of(steady({"x": 1.0})), spec, baseline=None)

    assert verdict.status == "regressed"
    last = verdict.rows[-1]
    assert last.status == "error" and "'absent' was not logged" in last.message


@pytest.mark.parametrize("metric", ["actor/pg_loss", "critic/vf_loss", "actor/ppo_kl",
                                    "actor/grad_norm", "actor/entropy"])
def test_a_nan_loss_regresses_with_a_diverged_diagnosis_naming_step_and_metric(
        metric: str) -> None:
    series = steady({metric: 0.1, "actor/pg_clipfrac": 0.1})
    series[metric][7] = float("nan")
    series[metric][9] = float("inf")

    verdict = judge_checks(evidence_of(series, expected_steps=15), CheckSpec(), baseline=None)

    row = next(r for r in verdict.rows if r.kind == "finite")
    assert row.status == "fail" and row.message == f"{metric} is nan at step 7 (first non-finite value)"
    assert verdict.status == "regressed" and verdict.exit_code == 1
    assert verdict.diagnosis is not None and verdict.diagnosis["category"] == "diverged"
    assert "step 7" in verdict.diagnosis["summary"]


def test_a_clip_fraction_outside_zero_one_regresses() -> None:
    series = steady({"actor/pg_clipfrac": 0.2})
    series["actor/pg_clipfrac"][4] = 1.5

    verdict = judge_checks(evidence_of(series), CheckSpec(), baseline=None)

    row = next(r for r in verdict.rows if r.name == "clip fractions within [0, 1]")
    assert row.status == "fail" and "at step 4" in row.message
    assert verdict.status == "regressed"


def test_device_memory_on_cpu_is_not_measured_and_never_counted_as_a_pass() -> None:
    memory = "actor/perf/max_memory_allocated_gb"
    baseline = Baseline({memory: BaselineMetric(value=0.0, reduce="last")}, hardware_key=CPU)
    evidence = evidence_of(steady({memory: 0.0}), run=RUN_ON_CPU, scenario={"profile": "cpu"})

    verdict = judge_checks(evidence, CheckSpec(), baseline=baseline)

    row = next(r for r in verdict.rows if r.metric == memory)
    assert row.status == "not_measured" and not row.judged
    assert verdict.status == "passed" and verdict.count("pass") == 1  # run completed only
    assert verdict.reason == "all 1 checks passed; 1 not measured on this hardware"


def test_zero_device_memory_is_not_measured_on_any_hardware() -> None:
    memory = "actor/perf/max_memory_allocated_gb"
    baseline = Baseline({memory: BaselineMetric(value=20.8, reduce="last")})

    verdict = judge_checks(evidence_of(steady({memory: 0.0})), CheckSpec(), baseline=baseline)

    assert next(r for r in verdict.rows if r.metric == memory).status == "not_measured"


def test_time_against_a_baseline_from_other_hardware_is_not_comparable() -> None:
    baseline = blessed(**{"timing_s/step": (10.0, 0.5), "actor/pg_loss": (0.1, 0.0)})
    other = {**RUN_ON_CPU, "hardware": {"cpu": "Other CPU", "cpus": 64}}
    evidence = evidence_of(steady({"timing_s/step": 30.0, "actor/pg_loss": 0.1}), run=other,
                           scenario={"profile": "cpu", "lr": 1e-4, "clip_ratio_high": 4e-4})

    verdict = judge_checks(evidence, CheckSpec(), baseline=baseline)

    rows = {r.metric: r for r in verdict.rows if r.kind == "baseline"}
    assert rows["timing_s/step"].status == "not_comparable"
    assert "Test CPU" in rows["timing_s/step"].message and "Other CPU" in rows["timing_s/step"].message
    assert rows["actor/pg_loss"].status == "pass"  # the training side still compares
    assert verdict.status == "passed"


def test_a_run_with_other_settings_says_baseline_not_comparable_instead_of_regressing() -> None:
    baseline = blessed(**{"actor/pg_clipfrac": (0.2, 0.01), "actor/pg_loss": (0.1, 0.0)})
    evidence = evidence_of(steady({"actor/pg_clipfrac": 0.6, "actor/pg_loss": 0.5}),
                           run=RUN_ON_CPU,
                           scenario={"profile": "cpu", "lr": 1e-4, "clip_ratio_high": 6e-4})

    verdict = judge_checks(evidence, CheckSpec(), baseline=baseline)

    compared = [r for r in verdict.rows if r.kind == "baseline"]
    assert {r.status for r in compared} == {"not_comparable"}
    assert "baseline not comparable: clip_ratio_high 0.0004 -> 0.0006" in compared[0].message
    assert verdict.status == "passed" and "not comparable" in verdict.reason


def test_environment_and_paths_do_not_make_a_baseline_not_comparable() -> None:
    baseline = blessed(**{"actor/pg_loss": (0.1, 0.0)})
    baseline.settings = {"model_path": "Qwen3-8B", "lr": 1e-4}
    scenario = {"profile": "cpu", "lr": 1e-4, "model_path": "/other/disk/Qwen/Qwen3-8B",
                "env": {"HF_HOME": "/somewhere"}}

    verdict = judge_checks(evidence_of(steady({"actor/pg_loss": 0.1}), run=RUN_ON_CPU,
                                scenario=scenario), CheckSpec(), baseline=baseline)

    assert next(r for r in verdict.rows if r.kind == "baseline").status == "pass"


def test_generation_time_of_replayed_steps_is_left_out() -> None:
    baseline = blessed(**{"timing_s/gen": (4.0, 0.2)})
    series = steady({"timing_s/gen": 0.04})
    all_replayed = evidence_of(series, run=RUN_ON_CPU, replayed=list(range(1, 16)),
                               scenario={"profile": "cpu", "lr": 1e-4, "clip_ratio_high": 4e-4})
    row = next(r for r in judge_checks(all_replayed, CheckSpec(), baseline=baseline).rows
               if r.kind == "baseline")
    assert row.status == "not_comparable" and "replayed" in row.message

    series["timing_s/gen"].update({s: 4.1 for s in (10, 11, 12)})  # generated, not replayed
    partly = evidence_of(series, run=RUN_ON_CPU, replayed=[s for s in range(1, 16)
                                                          if s not in (10, 11, 12)],
                         scenario={"profile": "cpu", "lr": 1e-4, "clip_ratio_high": 4e-4})
    row = next(r for r in judge_checks(partly, CheckSpec(), baseline=baseline).rows
               if r.kind == "baseline")
    assert row.status == "pass" and row.steps == [10, 11, 12] and "left out" in row.message


def test_junit_has_a_case_for_the_run_and_one_per_check(tmp_path: Path) -> None:
    spec = CheckSpec(min_steps=1, expressions=(
        compile_expression('data["x"][1] > 5'), compile_expression('data["x"][1] > 0'),
        compile_expression('data["nope"][1] > 0')))
    verdict = judge_checks(evidence_of(steady({"x": 1.0, "timing_s/step": 12.0})), spec,
                          baseline=BASE)

    write_junit([verdict_suite(verdict, "handmade", properties={"report": "r.html"})],
                tmp_path / "checks.xml")

    suite = ET.parse(tmp_path / "checks.xml").getroot().find("testsuite")
    assert suite is not None
    # run (regressed) + step time +20% + x > 5 fail; throughput missing + "nope" are errors
    assert (suite.get("failures"), suite.get("errors")) == ("3", "2")
    assert len(suite.findall("testcase")) == len(verdict.rows) + 1
    assert suite.find("properties/property[@name='verdict']").get("value") == "regressed"
    assert suite.find("properties/property[@name='report']").get("value") == "r.html"


def test_checks_json_holds_rows_and_plot_data(tmp_path: Path) -> None:
    verdict = judge_checks(evidence_of(steady({"timing_s/step": 11.0, "perf/throughput": 100.0})),
                    CheckSpec(), baseline=BASE)

    data = json.loads(verdict.write_json(tmp_path / "checks.json").read_text())

    row = next(r for r in data["rows"] if r["metric"] == "timing_s/step")
    assert data["verdict"]["status"] == "regressed" and data["verdict"]["exit_code"] == 1
    assert row["status"] == "fail" and row["baseline"] == 10.0
    assert row["upper"] == 10.5 and row["lower"] is None and row["window"] == [5, 14]
    assert row["steps"] == list(range(5, 15)) and row["band"] == "tolerance 5%"


def test_judging_a_run_dir_writes_nothing_into_it(make_run: Callable[..., Path]) -> None:
    run = make_run(steady({"actor/pg_loss": 0.1}), checks={"expressions": [
        'data["actor/pg_loss"][-1] < 1']})
    before = {p.name: p.read_bytes() for p in run.iterdir()}

    verdict = judge_run_dir(run, previous=None)

    assert verdict.status == "passed" and verdict.rows[-1].source == 'data["actor/pg_loss"][-1] < 1'
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before  # closing records it


def test_judging_with_the_validated_scenario_uses_its_checks(make_run: Callable[..., Path],
                                                            tmp_path: Path) -> None:
    run = make_run(steady({"actor/pg_loss": 0.1}))  # its params.resolved.yaml has no checks
    scenario = {"name": "handmade", "checks": {"expressions": ['data["actor/pg_loss"][-1] > 1']}}

    verdict = judge_run_dir(run, scenario=scenario, params_dir=tmp_path, previous=None)

    assert verdict.status == "regressed" and verdict.rows[-1].status == "fail"
