"""The default policy reproduces verl's nightly comparator (check_npu.py) on hand-made logs.

Each case moves one metric of an otherwise on-baseline 15-step console log just inside or just
outside its tolerance, in each direction, and asserts the row's status. Steps outside the 5-14
window carry wild values, so a result that depended on them would show.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.handmade import DATA, console_log
from workbook.checks.baseline import load_baseline
from workbook.checks.evidence import gather
from workbook.checks.spec import CheckSpec
from workbook.checks.verdict import judge_checks

ASCEND = DATA / "baseline_gspo_qwen3_8b_fsdp2_npu.txt"
MEM, TPUT, STEP = "actor/perf/max_memory_allocated_gb", "perf/throughput", "timing_s/step"
REWARD, PROBS = "critic/rewards/mean", "training/rollout_probs_diff_mean"


def nightly_log(tmp_path: Path, metric: str, value: float) -> Path:
    """A console log at baseline except ``metric``: its window mean (or last value) is ``value``."""
    base = load_baseline(ASCEND)
    series = {}
    for name in base.names():
        ref = base.value(name)
        target = value if name == metric else ref
        # wild outside the window: steps 1-4 and 15 for means, every step but the last for memory
        if name == MEM:
            series[name] = {s: (target if s == 15 else ref + 50.0) for s in range(1, 16)}
        else:
            window = {s: target + (0.3 if s % 2 else -0.3) * abs(ref) for s in range(5, 15)}
            series[name] = {**{s: ref * 10 for s in (1, 2, 3, 4, 15)}, **window}
    series["actor/pg_loss"] = {s: 0.01 for s in range(1, 16)}
    path = tmp_path / "nightly.log"
    path.write_text(console_log(series))
    return path


CASES = [
    # metric, factor or offset from the baseline, expected status (better than the baseline by
    # more than its tolerance: "improved", which passes as verl's one-sided check does)
    (MEM, ("+", 0.99), "pass"), (MEM, ("+", 1.01), "fail"), (MEM, ("+", -3.0), "improved"),
    (TPUT, ("*", 0.951), "pass"), (TPUT, ("*", 0.949), "fail"), (TPUT, ("*", 1.5), "improved"),
    (STEP, ("*", 1.049), "pass"), (STEP, ("*", 1.051), "fail"), (STEP, ("*", 0.5), "improved"),
    (REWARD, ("+", 0.049), "pass"), (REWARD, ("+", 0.051), "fail"),
    (REWARD, ("+", -0.049), "pass"), (REWARD, ("+", -0.051), "fail"),
    (PROBS, ("*", 1.049), "pass"), (PROBS, ("*", 1.051), "fail"),
    (PROBS, ("*", 0.951), "pass"), (PROBS, ("*", 0.949), "fail"),
]


@pytest.mark.parametrize("metric,change,expected", CASES,
                         ids=[f"{m}{c[0]}{c[1]}-{e}" for m, c, e in CASES])
def test_default_tolerance_edge_gives_verl_result(tmp_path: Path, metric: str,
                                                  change: tuple[str, float], expected: str) -> None:
    baseline = load_baseline(ASCEND)
    ref = baseline.value(metric)
    value = ref + change[1] if change[0] == "+" else ref * change[1]
    evidence = gather(nightly_log(tmp_path, metric, value))

    verdict = judge_checks(evidence, CheckSpec(), baseline=baseline)

    rows = {row.metric: row for row in verdict.rows if row.kind == "baseline"}
    assert set(rows) == set(baseline.names())
    assert rows[metric].status == expected, rows[metric].message
    assert rows[metric].value == pytest.approx(value, rel=1e-9)
    others = [r for m, r in rows.items() if m != metric]
    assert all(r.status == "pass" for r in others), [r.message for r in others]
    assert verdict.status == {"pass": "passed", "improved": "improved"}.get(expected, "regressed")
    assert verdict.exit_code == (1 if expected == "fail" else 0)


def test_defaults_apply_only_to_metrics_the_baseline_names(tmp_path: Path) -> None:
    log = console_log({"timing_s/gen": {s: 100.0 for s in range(1, 16)},
                       "actor/pg_clipfrac": {s: 0.9 for s in range(1, 16)},
                       STEP: {s: 83.0 for s in range(1, 16)}})
    (tmp_path / "run.log").write_text(log)
    verdict = judge_checks(gather(tmp_path / "run.log"), CheckSpec(),
                           baseline=load_baseline(ASCEND))

    compared = [row.metric for row in verdict.rows if row.kind == "baseline"]
    # the baseline names five metrics; this log lacks four, which become error rows
    assert sorted(compared) == sorted(load_baseline(ASCEND).names())
    assert "timing_s/gen" not in compared and "actor/pg_clipfrac" not in compared
    bounds = [row for row in verdict.rows if row.kind == "bounds"]
    assert [row.status for row in bounds] == ["pass"]  # clipfrac within [0, 1] still applies
    assert {r.metric for r in verdict.rows if r.status == "error"} == {MEM, TPUT, REWARD, PROBS}


def test_memory_is_read_at_the_runs_last_step_like_verl(tmp_path: Path) -> None:
    base = load_baseline(ASCEND)
    evidence = gather(nightly_log(tmp_path, MEM, base.value(MEM) + 0.5))

    rows = judge_checks(evidence, CheckSpec(), baseline=base).rows
    row = next(r for r in rows if r.metric == MEM)

    assert row.steps == [15] and row.reduce == "last"
    assert row.upper == pytest.approx(base.value(MEM) + 1.0) and row.lower is None


def test_imported_ascend_baseline_maps_the_old_memory_key(tmp_path: Path) -> None:
    text = ASCEND.read_text().replace(MEM, "perf/max_memory_allocated_gb")
    old = tmp_path / "a2" / "baseline_old.txt"
    old.parent.mkdir()
    old.write_text(text)

    baseline = load_baseline(old)

    assert baseline.value(MEM) == pytest.approx(20.825053)
    assert "perf/max_memory_allocated_gb" not in baseline.metrics
    assert baseline.hardware == "a2"
    assert baseline.metrics[TPUT].window == (5, 14) and baseline.metrics[MEM].reduce == "last"


def test_committed_imported_baseline_matches_its_text_source() -> None:
    imported = load_baseline(DATA / "gspo-qwen3-8b-1n8npu-fsdp2-vllm.a2.json")
    text = load_baseline(ASCEND)

    assert {n: imported.value(n) for n in imported.names()} == {
        n: text.value(n) for n in text.names()}
    assert imported.provenance["source"] == "verl-ascend-text"
