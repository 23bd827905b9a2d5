"""A live rollout and the trainer agree on the same tokens' probabilities at every generated step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.checks.handmade import evidence_of, steady
from workbook.checks.health import (
    PROBS_DIFF_MAX,
    PROBS_DIFF_MEAN,
    ROLLOUT_CHECK,
    ROLLOUT_PROBS_DIFF_MAX_MAX,
    ROLLOUT_PROBS_DIFF_MEAN_MAX,
    health_rows,
    rollout_row,
)
from workbook.checks.rows import CheckRow
from workbook.checks.spec import DEFAULT_POLICIES, CheckSpec, parse_checks
from workbook.checks.verdict import judge_checks
from workbook.scenario import load_scenario

CPU = {"profile": "cpu"}
LIVE_MEAN = {1: 2.78e-5, 2: 2.81e-5, 3: 2.73e-5, 4: 2.69e-5}     # a live tiny GSPO run on CPU
LIVE_MAX = {1: 1.18e-4, 2: 1.42e-4, 3: 1.05e-4, 4: 1.21e-4}
REPLAYED_MEAN = {1: 2.7e-5, 2: 6.0e-5, 3: 1.0e-4, 4: 1.5e-4}  # drifts from the dump's policy
# the rollout sampling at twice the trainer's temperature (benchmarks/faults hot_sampling), live
HOT_MEAN = {1: 2.32e-4, 2: 2.319e-4, 3: 2.281e-4, 4: 2.35e-4}
HOT_MAX = {1: 1.7188e-3, 2: 1.8501e-3, 3: 2.1985e-3, 4: 1.9525e-3}


def row(series: dict[str, dict[int, float]], *, replayed: list[int] | None = None,
        scenario: dict[str, Any] | None = None) -> CheckRow | None:
    return rollout_row(evidence_of(series, replayed=replayed,
                                   scenario=CPU if scenario is None else scenario))


@pytest.mark.parametrize("series, replayed, status, value, steps", [
    pytest.param({PROBS_DIFF_MEAN: LIVE_MEAN, PROBS_DIFF_MAX: LIVE_MAX}, None, "pass", 2.81e-5,
                 [1, 2, 3, 4], id="live-run-passes"),
    pytest.param({PROBS_DIFF_MEAN: LIVE_MEAN}, None, "pass", 2.81e-5, [1, 2, 3, 4],
                 id="mean-only-logged"),
    pytest.param({PROBS_DIFF_MEAN: {**LIVE_MEAN, 3: 4.2e-3}}, None, "fail", 4.2e-3, [3],
                 id="off-at-step-3"),
    pytest.param({PROBS_DIFF_MEAN: HOT_MEAN, PROBS_DIFF_MAX: HOT_MAX}, None, "fail", 2.32e-4,
                 [1, 2, 3, 4], id="hot-sampling-as-measured"),
    pytest.param({PROBS_DIFF_MEAN: {s: 4.2e-3 for s in LIVE_MEAN}}, None, "fail", 4.2e-3,
                 [1, 2, 3, 4], id="every-step-off"),
    pytest.param({PROBS_DIFF_MEAN: {**LIVE_MEAN, 2: ROLLOUT_PROBS_DIFF_MEAN_MAX}}, None, "pass",
                 ROLLOUT_PROBS_DIFF_MEAN_MAX, [1, 2, 3, 4], id="at-the-bound-passes"),
    pytest.param({PROBS_DIFF_MEAN: {**LIVE_MEAN, 2: float("nan")}}, None, "fail", None, [2],
                 id="nan-fails"),
    pytest.param({PROBS_DIFF_MEAN: LIVE_MEAN, PROBS_DIFF_MAX: {**LIVE_MAX, 4: 2e-2}}, None,
                 "fail", 2e-2, [4], id="max-above-its-bound"),
    pytest.param({PROBS_DIFF_MEAN: {**LIVE_MEAN, 4: 3e-3}, PROBS_DIFF_MAX: {**LIVE_MAX, 4: 2e-2}},
                 None, "fail", 3e-3, [4], id="mean-named-first-when-both-fail"),
    pytest.param({PROBS_DIFF_MEAN: {**LIVE_MEAN, 3: 4.2e-3}}, [3], "pass", 2.81e-5, [1, 2, 4],
                 id="a-replayed-step-is-left-out"),
    pytest.param({PROBS_DIFF_MEAN: {1: 2.7e-5, 2: 2.8e-5, 3: 4.2e-3, 4: 5e-3}}, [3], "fail", 5e-3,
                 [4], id="a-generated-step-after-a-replayed-one-counts"),
])
def test_probabilities_are_judged_at_every_generated_step(
        series: dict[str, dict[int, float]], replayed: list[int] | None, status: str,
        value: float | None, steps: list[int]) -> None:
    found = row(series, replayed=replayed)

    assert found is not None and found.name == ROLLOUT_CHECK and found.kind == "bounds"
    assert found.status == status, found.message
    assert found.steps == steps
    if value is not None:
        assert found.value == pytest.approx(value)
    else:
        assert found.value != found.value  # NaN


@pytest.mark.parametrize("series, replayed, scenario", [
    pytest.param({"actor/pg_loss": {1: 0.1}}, None, CPU, id="never-logged"),
    pytest.param({PROBS_DIFF_MAX: LIVE_MAX}, None, CPU, id="only-the-max-logged"),
    pytest.param({PROBS_DIFF_MEAN: REPLAYED_MEAN}, [1, 2, 3, 4], CPU, id="every-step-replayed"),
    pytest.param({PROBS_DIFF_MEAN: {s: 4.5e-3 for s in range(1, 16)}}, None, {"profile": "npu"},
                 id="no-bound-measured-for-npu"),
    pytest.param({PROBS_DIFF_MEAN: {s: 4.5e-3 for s in range(1, 16)}}, None, {},
                 id="bare-log-without-a-profile"),
])
def test_no_row_where_nothing_can_be_judged(series: dict[str, dict[int, float]],
                                            replayed: list[int] | None,
                                            scenario: dict[str, Any]) -> None:
    assert row(series, replayed=replayed, scenario=scenario) is None


def test_the_failure_names_metric_step_bound_and_the_later_steps() -> None:
    found = row({PROBS_DIFF_MEAN: {1: 2.7e-5, 2: 4.2e-3, 3: 5e-3, 4: 2.7e-5}})

    assert found is not None and found.metric == PROBS_DIFF_MEAN
    assert found.message.startswith(f"{PROBS_DIFF_MEAN} is 0.0042 at step 2, above 0.0001")
    assert found.message.endswith("also at step(s) 3")
    assert (found.lower, found.upper) == (0.0, ROLLOUT_PROBS_DIFF_MEAN_MAX)


def test_the_expected_text_names_both_bounds_and_the_replayed_steps() -> None:
    found = row({PROBS_DIFF_MEAN: LIVE_MEAN, PROBS_DIFF_MAX: LIVE_MAX}, replayed=[1])

    assert found is not None
    assert found.expected == (f"{PROBS_DIFF_MEAN} <= 0.0001 and {PROBS_DIFF_MAX} <= 0.001 at "
                              "every generated step (replayed steps 1 left out)")


def test_the_bounds_sit_between_healthy_live_runs_and_a_hot_rollout() -> None:
    assert max(LIVE_MEAN.values()) * 3 < ROLLOUT_PROBS_DIFF_MEAN_MAX < min(HOT_MEAN.values())
    assert max(LIVE_MAX.values()) * 5 < ROLLOUT_PROBS_DIFF_MAX_MAX < min(HOT_MAX.values())


def test_a_live_run_that_disagrees_is_a_regression_not_a_failed_run() -> None:
    series = {**steady({"actor/pg_loss": 0.1}, range(1, 5)),
              PROBS_DIFF_MEAN: {**LIVE_MEAN, 4: 4.2e-3}}
    evidence = evidence_of(series, scenario=CPU, expected_steps=4)

    verdict = judge_checks(evidence, CheckSpec(), baseline=None)

    assert verdict.status == "regressed" and verdict.exit_code == 1
    assert [r.name for r in health_rows(evidence, None)][-1] == ROLLOUT_CHECK
    assert ROLLOUT_CHECK in verdict.reason


def test_a_replayed_run_passes_with_no_rollout_row() -> None:
    series = {**steady({"actor/pg_loss": 0.1}, range(1, 5)), PROBS_DIFF_MEAN: REPLAYED_MEAN}
    evidence = evidence_of(series, scenario=CPU, expected_steps=4, replayed=[1, 2, 3, 4])

    verdict = judge_checks(evidence, CheckSpec(), baseline=None)

    assert verdict.status == "passed"
    assert ROLLOUT_CHECK not in [r.name for r in verdict.rows]


def test_the_live_scenario_generates_and_checks_the_rollout_side_with_the_defaults() -> None:
    path = Path(__file__).parents[2] / "params" / "gspo-tiny-live-1n1cpu-fsdp2-vllm.yaml"
    scenario = load_scenario(path, check_files=False)
    spec, problems = parse_checks(scenario.model_dump().get("checks"), params_dir=path.parent)

    assert scenario.rollouts.replay is None and problems == []
    assert spec.baseline is not None and spec.baseline.name == "gspo-tiny-live-1n1cpu-fsdp2-vllm.cpu.json"
    for metric in ("timing_s/gen", "response_length/mean", "critic/score/mean", PROBS_DIFF_MEAN):
        policy = spec.policy(metric)
        assert policy is not None and policy.explicit, metric
        assert policy.reduce == DEFAULT_POLICIES[metric]["reduce"]
        assert policy.direction == DEFAULT_POLICIES[metric]["direction"]
        assert policy.window == (2, 4)


REPLAYING = {**CPU, "rollouts": {"replay": "baselines/rollouts/gspo-tiny-1n1cpu-fsdp2-vllm"}}


def test_a_replaying_run_whose_replays_nothing_records_is_not_comparable_not_failed() -> None:
    # the log lost its lines: a replayed step's drift must not read as a live rollout's
    found = row({PROBS_DIFF_MEAN: REPLAYED_MEAN}, replayed=[], scenario=REPLAYING)

    assert found is not None and found.status == "not_comparable"
    assert "which steps replayed" in found.message


def test_a_replaying_run_with_its_replayed_steps_known_is_judged_on_the_others() -> None:
    found = row({PROBS_DIFF_MEAN: REPLAYED_MEAN}, replayed=[2, 3, 4], scenario=REPLAYING)

    assert found is not None and found.status == "pass" and found.steps == [1]


@pytest.mark.parametrize("from_log, recorded, expected", [
    ([1, 2], None, [1, 2]),
    ([], [1, 2, 3, 4], [1, 2, 3, 4]),  # the log lost the lines it had when the run was closed
    ([2], [1, 2], [1, 2]),
    ([], [1, True, "3", 4.0], [1]),  # what is not a step number is not taken
])
def test_replayed_steps_are_the_logs_and_those_recorded_at_closing(
        from_log: list[int], recorded: Any, expected: list[int]) -> None:
    from workbook.checks.evidence import replayed_steps

    run = {} if recorded is None else {"diagnosis": {"replayed_steps": recorded}}
    assert replayed_steps({"replayed_steps": from_log}, run) == expected
