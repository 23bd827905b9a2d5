"""The alignment of two runs, computed from real verl output: errors, verdict, thresholds, tests."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.align.runs import NPU_GRPO, changed, records, scale_of, write_run
from workbook.align.compute import (
    ALIGNED,
    BEYOND,
    MISSING,
    NOT_ALIGNED,
    UNDEFINED,
    WITHIN,
    align_metric,
    parse_threshold,
)
from workbook.align.runs import NOT_DETERMINISTIC, Alignment, align_runs
from workbook.checks.signed_rank import paired_shift
from workbook.errors import InputError

LOSS, REWARD, GRAD = "actor/pg_loss", "critic/rewards/mean", "actor/grad_norm"


def pair(tmp_path: Path, b_rows: list, a_rows: list | None = None, **kwargs: object) -> Alignment:
    """Align run B (``b_rows``) with run A (real GSPO output unless given)."""
    a_rows = records() if a_rows is None else a_rows
    root = tmp_path / "runs"
    a = write_run(root, "A", a_rows, expected_steps=len(a_rows))
    b = write_run(root, "B", b_rows, expected_steps=len(a_rows))
    return align_runs(a, b, **kwargs)  # type: ignore[arg-type]


def row(alignment: Alignment, metric: str):  # type: ignore[no-untyped-def]
    return next(m for m in alignment.metrics if m.metric == metric)


def test_identical_runs_are_aligned_with_no_error(tmp_path: Path) -> None:
    alignment = pair(tmp_path, records())

    assert alignment.status == ALIGNED and alignment.judgement.exit_code == 0
    assert all(m.mae == 0 and m.max_error == 0 and m.first_beyond is None
               for m in alignment.metrics)
    assert alignment.throughput.ratio == 1 and alignment.throughput.steps == (1, 2, 3, 4)


def test_a_doubled_policy_loss_is_not_aligned_from_the_first_step(tmp_path: Path) -> None:
    alignment = pair(tmp_path, changed(records(), LOSS, lambda step, v: 2 * v))

    loss = row(alignment, LOSS)
    assert alignment.status == NOT_ALIGNED and alignment.judgement.exit_code == 1
    assert loss.status == BEYOND and loss.mae == pytest.approx(100) and loss.first_beyond == 1
    assert alignment.judgement.reason == "actor/pg_loss 100 % > 2 %, beyond it from step 1"
    assert row(alignment, REWARD).status == WITHIN


def test_a_zero_crossing_loss_keeps_a_small_error_where_a_per_step_share_explodes(
        tmp_path: Path) -> None:
    """GRPO's pg_loss on Ascend crosses zero (steps 1-7 negative, 8-9 positive, step 9 at 3e-7);
    B differs from it by noise of 1 % of the curve's scale."""
    npu = records(NPU_GRPO)
    noise = 0.01 * scale_of(npu, LOSS)
    noisy = changed(npu, LOSS, lambda step, v: v + (noise if step % 2 else -noise))

    loss = row(pair(tmp_path, noisy, npu), LOSS)

    signs = {math.copysign(1, r["data"][LOSS]) for r in npu}
    per_step = [abs(n["data"][LOSS] - r["data"][LOSS]) / abs(r["data"][LOSS]) * 100
                for n, r in zip(noisy, npu, strict=True)]
    assert signs == {-1.0, 1.0}
    assert loss.mae == pytest.approx(1.0) and loss.status == WITHIN
    assert max(per_step) > 15 and sum(per_step) / len(per_step) > 2  # a per-step |a| would fail


def test_a_run_short_of_the_reference_steps_is_not_aligned(tmp_path: Path) -> None:
    alignment = pair(tmp_path, records()[:2])

    assert alignment.status == NOT_ALIGNED
    assert alignment.judgement.problems == ("run B reached 2 of the 4 steps run A expected",)
    assert row(alignment, LOSS).steps == [1, 2]  # what both reached is still compared


def test_a_thresholded_metric_missing_from_a_run_is_not_aligned(tmp_path: Path) -> None:
    alignment = pair(tmp_path, changed(records(), REWARD, lambda step, v: None))

    assert alignment.status == NOT_ALIGNED
    assert row(alignment, REWARD).status == MISSING
    assert alignment.judgement.reason == "critic/rewards/mean: not logged by run B"


def test_a_metric_without_threshold_missing_from_both_runs_does_not_decide(tmp_path: Path) -> None:
    npu = records(NPU_GRPO)  # an Ascend run of verl without the rollout-vs-actor metric

    alignment = pair(tmp_path, npu, npu)

    assert row(alignment, "training/rollout_probs_diff_mean").status == MISSING
    assert alignment.status == ALIGNED


@pytest.mark.parametrize(("b_value", "status", "mae"), [
    (0.0, WITHIN, 0.0),
    (0.01, UNDEFINED, math.inf),
])
def test_a_metric_identically_zero_in_the_reference_has_no_scale(
        tmp_path: Path, b_value: float, status: str, mae: float) -> None:
    """pg_clipfrac_lower is 0 at every step of the real GSPO run."""
    metric = "actor/pg_clipfrac_lower"
    b_rows = changed(records(), metric, lambda step, v: b_value)

    alignment = pair(tmp_path, b_rows, thresholds={metric: 5})

    assert row(alignment, metric).status == status and row(alignment, metric).mae == mae
    assert (alignment.status == ALIGNED) == (status == WITHIN)
    if status == UNDEFINED:
        assert "run A is 0 at every compared step and run B is not" in alignment.judgement.reason


def test_a_value_that_is_not_finite_makes_the_error_undefined() -> None:
    found = align_metric(LOSS, {1: 0.5, 2: 0.4}, {1: 0.5, 2: math.nan}, 2.0)

    assert found.status == UNDEFINED and found.why == "not finite in run B at step 2"
    assert found.first_beyond == 2 and not found.holds


@pytest.mark.parametrize(("text", "expected"), [
    ("actor/pg_loss=2", ("actor/pg_loss", 2.0)),
    ("actor/pg_loss=2%", ("actor/pg_loss", 2.0)),
    (" critic/rewards/mean = 0 ", ("critic/rewards/mean", 0.0)),
    ("a=1e-1", ("a", 0.1)),
])
def test_a_threshold_is_a_metric_and_a_percentage(text: str, expected: tuple[str, float]) -> None:
    assert parse_threshold(text) == expected


@pytest.mark.parametrize(("text", "says"), [
    ("x=", "is not a number"),
    ("=2", "expected METRIC=PCT"),
    ("a=nan", "finite number >= 0"),
    ("a=inf", "finite number >= 0"),
    ("a=-1", "finite number >= 0"),
    ("a=abc", "'abc' is not a number"),
    ("actor/pg_loss", "expected METRIC=PCT"),
])
def test_a_malformed_threshold_is_refused(text: str, says: str) -> None:
    with pytest.raises(InputError, match=says):
        parse_threshold(text)


def test_the_reference_scenario_section_sets_thresholds_and_the_command_line_wins(
        tmp_path: Path) -> None:
    root = tmp_path / "runs"
    section = {"alignment": {"thresholds": {GRAD: 1}, "metrics": ["critic/score/mean"]}}
    a = write_run(root, "A", records(), params=section)
    b = write_run(root, "B", changed(records(), GRAD, lambda step, v: v * 1.05))

    from_scenario = align_runs(a, b)
    from_cli = align_runs(a, b, thresholds={GRAD: 10})

    assert from_scenario.status == NOT_ALIGNED and row(from_scenario, GRAD).threshold == 1
    assert row(from_scenario, "critic/score/mean").threshold is None  # reported, not judged
    assert from_cli.status == ALIGNED and row(from_cli, GRAD).threshold == 10
    assert row(from_cli, LOSS).threshold == 2  # the defaults stay under both


def test_a_hand_edited_threshold_in_the_resolved_params_is_refused_with_its_file(
        tmp_path: Path) -> None:
    root = tmp_path / "runs"
    a = write_run(root, "A", records(), params={"alignment": {"thresholds": {GRAD: -3}}})
    b = write_run(root, "B", records())

    with pytest.raises(InputError, match=r"params.resolved.yaml: alignment.thresholds"):
        align_runs(a, b)


def test_runs_of_different_scenarios_are_refused_with_both_names(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    a = write_run(root, "A", records(), scenario="gspo-tiny-1n1cpu-fsdp2-vllm")
    b = write_run(root, "B", records(), scenario="ppo-tiny-2n1cpu-fsdp2-vllm-ray")

    with pytest.raises(InputError, match="'gspo-tiny-1n1cpu-fsdp2-vllm'.*'ppo-tiny-2n1cpu"):
        align_runs(a, b)


def test_a_run_without_a_training_step_is_bad_input(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    a = write_run(root, "A", records())
    b = write_run(root, "B", [])

    with pytest.raises(InputError, match="run B: .* logged no training step"):
        align_runs(a, b)


@pytest.mark.parametrize(("a_det", "b_det", "warned"), [
    (True, True, []), (True, None, ["B"]), (False, True, ["A"]), (None, None, ["A", "B"]),
])
def test_a_run_not_made_deterministic_is_a_warning_not_a_verdict(
        tmp_path: Path, a_det: bool | None, b_det: bool | None, warned: list[str]) -> None:
    root = tmp_path / "runs"
    a = write_run(root, "A", records(), deterministic=a_det)
    b = write_run(root, "B", records(), deterministic=b_det)

    alignment = align_runs(a, b)

    assert alignment.status == ALIGNED
    said = [w for w in alignment.judgement.warnings if "deterministic" in w]
    assert said == [NOT_DETERMINISTIC.format(side=side) for side in warned]


@pytest.mark.parametrize(("minimum", "status"), [(None, ALIGNED), (0.4, ALIGNED),
                                                 (0.8, NOT_ALIGNED)])
def test_the_throughput_ratio_is_judged_only_when_asked(
        tmp_path: Path, minimum: float | None, status: str) -> None:
    slower = changed(records(), "perf/throughput", lambda step, v: v / 2)

    alignment = pair(tmp_path, slower, min_throughput_ratio=minimum)

    assert alignment.throughput.ratio == pytest.approx(0.5)
    assert alignment.status == status
    if status == NOT_ALIGNED:
        assert alignment.judgement.reason == "throughput ratio B/A 0.5 < 0.8"


def test_a_systematic_shift_is_one_sided_and_noise_is_not() -> None:
    """On the 9 steps of the Ascend run: B 0.5 % of the scale above A at every step, or
    alternating above and below by the same amount."""
    npu = records(NPU_GRPO)
    delta = 0.005 * scale_of(npu, LOSS)
    a = {r["step"]: r["data"][LOSS] for r in npu}

    shifted = align_metric(LOSS, a, {s: v + delta for s, v in a.items()}, 2.0)
    noisy = align_metric(LOSS, a, {s: v + (delta if s % 2 else -delta) for s, v in a.items()},
                         2.0)

    assert shifted.paired and (shifted.paired.above, shifted.paired.below) == (9, 0)
    assert "consistently above" in shifted.paired.note
    assert noisy.paired and (noisy.paired.above, noisy.paired.below) == (5, 4)
    assert shifted.status == WITHIN  # the signs inform; the threshold decides


def test_the_signs_leave_out_equal_and_non_finite_steps() -> None:
    found = paired_shift([0.1, -0.2, 0.0, float("nan")])

    assert (found.steps, found.above, found.below) == (3, 1, 1)
    assert paired_shift([]).note.startswith("no step")


def test_the_record_reads_back_as_written(tmp_path: Path) -> None:
    b_rows = changed(records(), "actor/pg_clipfrac_lower", lambda step, v: 0.5)
    alignment = pair(tmp_path, changed(b_rows, LOSS, lambda step, v: 2 * v),
                     thresholds={"actor/pg_clipfrac_lower": 1})

    text = json.dumps(alignment.to_dict(), allow_nan=False)  # valid JSON: no Infinity

    assert Alignment.from_dict(json.loads(text)) == alignment


MINIMAL = {"name": "s", "profile": "cpu", "model_path": "m", "train_files": "t", "val_files": "v"}


@pytest.mark.parametrize(("section", "problem"), [
    ({"thresholds": {LOSS: 3, GRAD: 0}, "metrics": [REWARD], "min_throughput_ratio": 0.8}, None),
    ({"thresholds": {LOSS: -1}}, ("alignment.thresholds.actor/pg_loss", ">= 0")),
    ({"thresholds": {LOSS: "nan"}}, ("alignment.thresholds.actor/pg_loss", "finite")),
    ({"thresholds": {"": 2}}, ("alignment.thresholds.", "at least 1 character")),
    ({"min_throughput_ratio": 0}, ("alignment.min_throughput_ratio", "> 0")),
    ({"threshold": {LOSS: 2}}, ("alignment.threshold", "unknown key")),
])
def test_the_scenario_alignment_section_is_validated_with_the_scenario(
        section: dict, problem: tuple[str, str] | None) -> None:
    from workbook.params.schema import parse_scenario

    scenario, problems = parse_scenario({**MINIMAL, "alignment": section})

    if problem is None:
        assert problems == [] and scenario and scenario.alignment.thresholds[LOSS] == 3
    else:
        assert [p for p in problems if p[0].startswith(problem[0]) and problem[1] in p[1]], problems
