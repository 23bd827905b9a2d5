"""What the comparisons see in REAL runs (issue 16): a slower trainer, a change at one step of the
window, and a broken reward path on live rollouts.

Each reuses a run of the ``variants`` suite (tests/conftest.py): entry 1 loads ``slow_update``
(every policy-loss evaluation slower) and ``pg_loss_x2@4`` (the loss doubled at step 4 only)
into verl; entry 4 runs the live-rollout scenario with every reward halved where verl scores.
A night beside a busy process is in tests/e2e/test_nights.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ROLLOUT_FAULT, SuiteRun
from tests.e2e.rows import baseline_rows, timings_judged_here
from tests.report import report_assertions as ra

pytestmark = pytest.mark.verl


ROLLOUT_SIDE = ("timing_s/gen", "response_length/mean", "critic/score/mean",
                "training/rollout_probs_diff_mean")


def rows_of(variants: SuiteRun, entry: str) -> dict[str, dict[str, Any]]:
    return baseline_rows(variants.entry(entry))


def test_the_live_smoke_entry_passes_with_its_rollout_side_compared(smoke: SuiteRun) -> None:
    run = smoke.entry("03-gspo-tiny-live")
    assert run.exit_code == 0, run.output[-3000:]
    assert run.json("run.json")["diagnosis"]["replayed_steps"] == []
    rows = baseline_rows(run)
    (health,) = [r for r in run.json("checks.json")["rows"]
                 if r["name"] == "rollout and training probabilities agree"]
    assert health["status"] == "pass" and health["steps"] == [1, 2, 3, 4]
    for metric in ROLLOUT_SIDE:  # compared with the live baseline, not "not comparable"
        if metric == "timing_s/gen":
            continue
        assert rows[metric]["status"] == "pass", rows[metric]
    timings_judged_here(rows["timing_s/gen"])
    assert rows["timing_s/gen"]["status"] == "pass", rows["timing_s/gen"]


def test_a_slower_trainer_is_regressed_on_its_timings(variants: SuiteRun) -> None:
    rows = rows_of(variants, "01-")
    assert variants.entry("01-").exit_code == 1
    for metric in ("timing_s/update_actor", "timing_s/step"):
        timings_judged_here(rows[metric])
        assert rows[metric]["status"] == "fail", rows[metric]
        assert rows[metric]["value"] > rows[metric]["upper"]
    conditions = variants.entry("01-").json("run.json")["conditions"]
    assert conditions["others_cores"] < 0.5, conditions  # judged on an idle machine


def test_a_change_at_one_step_fails_that_step_of_the_per_step_comparison(
        variants: SuiteRun) -> None:
    row = rows_of(variants, "01-")["actor/pg_loss"]
    assert row["compared_by"] == "steps" and row["status"] == "fail", row
    holds = {int(step): (band["lower"] is None or band["value"] >= band["lower"]) and (
        band["upper"] is None or band["value"] <= band["upper"])
        for step, band in row["step_bands"].items()}
    assert holds == {2: True, 3: True, 4: False}, row["step_bands"]
    assert "1 of 3 steps outside their bands; worst step 4" in row["message"]


def test_a_rollout_side_fault_on_live_rollouts_is_regressed(variants: SuiteRun) -> None:
    run = variants.entry("04-")
    assert run.exit_code == 1, run.output[-3000:]
    info = run.json("run.json")
    assert info["diagnosis"]["replayed_steps"] == []  # every rollout was generated
    assert f"WORKBOOK_FAULT={ROLLOUT_FAULT}" in (run.run_dir / "command.sh").read_text()
    rows = rows_of(variants, "04-")
    failing = {m for m, r in rows.items() if r["status"] == "fail"}
    assert {"critic/score/mean", "critic/rewards/mean"} & failing, failing
    ra.assert_report(run.run_dir, verdict="regressed")
