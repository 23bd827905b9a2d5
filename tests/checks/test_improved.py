"""``improved``: a one-sided comparison beyond its band on the good side is news, not a pass and
not a failure: the row says by how much, the verdict exits 0 and proposes a baseline refresh."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.checks.handmade import evidence_of, steady
from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.junit import verdict_suite, write_junit
from workbook.checks.rows import STATUSES, CheckRow, StepBand
from workbook.checks.spec import CheckSpec
from workbook.checks.verdict import exit_code_of, judge_checks, refresh_hint
from workbook.cli import terminal
from workbook.core.status import FINISHED_VERDICTS, SHOWN, VERDICTS, Verdict

METRIC = "custom/latency"  # no default policy: the scenario's override is all there is
MEMORY, THROUGHPUT, STEP = "actor/perf/max_memory_allocated_gb", "perf/throughput", "timing_s/step"
SCENARIO = {"name": "gspo-handmade"}


def row_of(direction: str, value: float) -> CheckRow:
    """The window row of ``METRIC`` (baseline 10, band half-width 0.5) for a steady ``value``."""
    baseline = Baseline({METRIC: BaselineMetric(value=10.0, reduce="mean")})
    spec = CheckSpec(overrides={METRIC: {"direction": direction, "atol": 0.5}})
    verdict = judge_checks(evidence_of(steady({METRIC: value})), spec, baseline=baseline)
    return next(r for r in verdict.rows if r.name == f"{METRIC} vs baseline")


# --- window rows: each direction x where the value lies -------------------------------------

WINDOW_CASES = [
    # direction, value, status, good-side edge the row carries
    ("higher_is_worse", 10.2, "pass", 9.5),      # inside
    ("higher_is_worse", 10.5, "pass", 9.5),      # at the worse edge
    ("higher_is_worse", 10.6, "fail", 9.5),      # worse side
    ("higher_is_worse", 9.5, "pass", 9.5),       # exactly at the mirrored edge
    ("higher_is_worse", 9.4, "improved", 9.5),   # good side, beyond it
    ("lower_is_worse", 9.8, "pass", 10.5),
    ("lower_is_worse", 9.5, "pass", 10.5),
    ("lower_is_worse", 9.4, "fail", 10.5),
    ("lower_is_worse", 10.5, "pass", 10.5),
    ("lower_is_worse", 10.6, "improved", 10.5),
    ("both", 10.2, "pass", None),
    ("both", 10.6, "fail", None),
    ("both", 9.5, "pass", None),
    ("both", 9.4, "fail", None),                 # outside is outside: never improved
    ("both", 10.5, "pass", None),
]


@pytest.mark.parametrize("direction, value, status, edge", WINDOW_CASES,
                         ids=[f"{d}-{v}" for d, v, _, _ in WINDOW_CASES])
def test_a_window_row_is_improved_only_beyond_the_mirrored_edge_of_a_one_sided_band(
        direction: str, value: float, status: str, edge: float | None) -> None:
    row = row_of(direction, value)

    assert row.status == status, row.message
    assert row.improved_beyond == edge
    assert row.judged


def test_an_improved_row_says_its_value_the_baseline_and_the_edge() -> None:
    row = row_of("higher_is_worse", 9.0)

    assert row.status == "improved"
    assert row.message == ("mean over steps 5-14: 9, -1 (-10.00%) vs baseline 10; improved by 0.5 "
                           "beyond 9.5 (the band's edge 10.5 mirrored about the baseline)")
    assert (row.baseline, row.lower, row.upper, row.expected) == (10.0, None, 10.5, "<= 10.5")


def test_checks_json_keeps_the_edge_of_every_one_sided_row(tmp_path: Path) -> None:
    baseline = Baseline({METRIC: BaselineMetric(value=10.0, reduce="mean")})
    spec = CheckSpec(overrides={METRIC: {"direction": "lower_is_worse", "atol": 0.5}})
    verdict = judge_checks(evidence_of(steady({METRIC: 11.0})), spec, baseline=baseline)

    data = json.loads(verdict.write_json(tmp_path / "checks.json").read_text())

    row = next(r for r in data["rows"] if r["metric"] == METRIC)
    assert (row["status"], row["improved_beyond"], row["lower"]) == ("improved", 10.5, 9.5)
    assert data["verdict"]["counts"]["improved"] == 1
    assert data["verdict"]["status"] == "improved" and data["verdict"]["exit_code"] == 0


# --- per-step rows ---------------------------------------------------------------------------

WINDOW = (2, 5)


def step_row(direction: str, changed: dict[int, float]) -> CheckRow:
    """A per-step row of ``METRIC``: baseline 2.0 at every step, band ± 0.25 around each."""
    baseline = Baseline({METRIC: BaselineMetric(value=2.0, reduce="mean", window=WINDOW,
                                                series={s: 2.0 for s in range(1, 7)})})
    spec = CheckSpec(window=WINDOW, overrides={METRIC: {
        "direction": direction, "atol": 0.25, "compare_by": "steps"}})
    series = {METRIC: {s: changed.get(s, 2.0) for s in range(1, 7)}}
    verdict = judge_checks(evidence_of(series), spec, baseline=baseline)
    return next(r for r in verdict.rows if r.name == f"{METRIC} vs baseline")


STEP_CASES = [
    # direction, steps changed from the baseline's 2.0, status
    ("higher_is_worse", {}, "pass"),
    ("higher_is_worse", {3: 1.75}, "pass"),               # exactly at the mirrored edge
    ("higher_is_worse", {3: 1.7}, "improved"),
    ("higher_is_worse", {3: 1.7, 4: 2.3}, "fail"),        # a failing step wins
    ("higher_is_worse", {3: 2.3}, "fail"),
    ("higher_is_worse", {1: 1.0, 6: 1.0}, "pass"),        # outside the window: not judged
    ("lower_is_worse", {3: 2.3}, "improved"),
    ("lower_is_worse", {3: 2.25}, "pass"),
    ("lower_is_worse", {3: 1.7}, "fail"),
    ("both", {3: 1.7}, "fail"),
    ("both", {3: 2.3}, "fail"),
    ("both", {3: 2.2}, "pass"),
]


@pytest.mark.parametrize("direction, changed, status", STEP_CASES,
                         ids=[f"{d}-{c}" for d, c, _ in STEP_CASES])
def test_a_per_step_row_is_improved_when_no_step_fails_and_one_is_beyond_its_good_edge(
        direction: str, changed: dict[int, float], status: str) -> None:
    row = step_row(direction, changed)

    assert (row.compared_by, row.status) == ("steps", status), row.message


def test_an_improved_per_step_row_names_the_most_improved_step_and_keeps_each_edge() -> None:
    row = step_row("higher_is_worse", {3: 1.7, 4: 1.5})

    assert row.status == "improved" and row.value == pytest.approx(1.5)
    assert row.message.startswith("each step of steps 2-5: every step within its band, 2 of 4 "
                                  "improved beyond it; most improved: step 4: 1.5 vs baseline 2")
    assert "improved by 0.25 beyond 1.75 (the band's edge 2.25 mirrored" in row.message
    assert row.step_bands[4] == StepBand(1.5, 2.0, None, 2.25, None, 1.75)
    assert row.step_bands[4].improved and not row.step_bands[2].improved
    assert row.to_dict()["step_bands"]["4"]["improved_beyond"] == 1.75


def test_a_two_sided_step_band_writes_no_edge() -> None:
    row = step_row("both", {})

    assert "improved_beyond" not in row.to_dict()["step_bands"]["3"]
    assert row.step_bands[3].improved_beyond is None


def test_a_nan_step_is_never_improved() -> None:
    assert not StepBand(math.nan, 2.0, None, 2.25, None, 1.75).improved
    assert StepBand(1.7, 2.0, None, 2.25, None, 1.75).improved
    assert StepBand(2.3, 2.0, 1.75, None, None, 2.25).improved


# --- the verdict ------------------------------------------------------------------------------

def stale_baseline() -> Baseline:
    return Baseline({MEMORY: BaselineMetric(value=20.0, reduce="last"),
                     THROUGHPUT: BaselineMetric(value=100.0, reduce="mean", window=(5, 14)),
                     STEP: BaselineMetric(value=10.0, reduce="mean", window=(5, 14))})


def test_memory_down_15_and_throughput_up_6_percent_is_improved_and_exits_0() -> None:
    evidence = evidence_of(steady({MEMORY: 17.0, THROUGHPUT: 106.0, STEP: 10.0}),
                           expected_steps=15, scenario=SCENARIO)

    verdict = judge_checks(evidence, CheckSpec(), baseline=stale_baseline())

    assert (verdict.status, verdict.exit_code) == ("improved", 0)
    assert verdict.reason == (
        "2 metrics improved beyond their bands: propose a baseline refresh: workbook baseline "
        "propose gspo-handmade; improved: actor/perf/max_memory_allocated_gb, perf/throughput; all 5 checks passed or "
        "improved")
    counts = verdict.summary()["counts"]
    assert (counts["improved"], counts["pass"], counts["fail"]) == (2, 3, 0)


def test_one_improved_metric_is_said_in_the_singular_with_what_was_set_aside() -> None:
    evidence = evidence_of(steady({THROUGHPUT: 106.0, STEP: 10.0, MEMORY: 0.0}),
                           scenario=SCENARIO)

    verdict = judge_checks(evidence, CheckSpec(), baseline=stale_baseline())

    assert verdict.status == "improved"
    assert verdict.reason.startswith("1 metric improved beyond its band: propose a baseline "
                                     "refresh: workbook baseline propose gspo-handmade;")
    assert verdict.reason.endswith("; 1 not measured on this hardware")


def test_an_improved_row_beside_a_failed_one_is_a_regression() -> None:
    evidence = evidence_of(steady({MEMORY: 17.0, THROUGHPUT: 100.0, STEP: 11.0}),
                           scenario=SCENARIO)

    verdict = judge_checks(evidence, CheckSpec(), baseline=stale_baseline())

    assert (verdict.status, verdict.exit_code) == ("regressed", 1)
    assert verdict.reason.startswith("1 failed of 5 checks; first: timing_s/step vs baseline")
    assert verdict.count("improved") == 1


def test_a_failed_or_stopped_run_is_never_improved() -> None:
    stopped = {"status": "stopped", "category": "stopped", "summary": "Stopped by the user"}
    crashed = {"status": "failed", "category": "oom", "summary": "Out of memory"}
    series = steady({THROUGHPUT: 120.0})

    for diagnosis, word in ((stopped, "stopped"), (crashed, "failed")):
        verdict = judge_checks(evidence_of(series, diagnosis=diagnosis,
                                    run={"status": diagnosis["status"], "exit_code": 1}),
                        CheckSpec(), baseline=stale_baseline())
        assert verdict.status == word


def test_passed_stays_as_it_was_when_nothing_improved() -> None:
    evidence = evidence_of(steady({MEMORY: 20.0, THROUGHPUT: 104.0, STEP: 9.6}),
                           expected_steps=15)

    verdict = judge_checks(evidence, CheckSpec(), baseline=stale_baseline())

    assert (verdict.status, verdict.reason) == ("passed", "all 5 checks passed")
    assert verdict.count("improved") == 0


REFRESH = [
    ("gspo-tiny-1n1cpu-fsdp2-vllm", "workbook baseline propose gspo-tiny-1n1cpu-fsdp2-vllm"),
    ("my scenario", "workbook baseline propose 'my scenario'"),
    (None, "workbook baseline propose <scenario>"),
]


@pytest.mark.parametrize("scenario, command", REFRESH, ids=["name", "spaces", "unknown"])
def test_the_refresh_hint_is_one_command(scenario: str | None, command: str) -> None:
    assert refresh_hint(scenario) == command


def test_the_scenario_of_the_hint_is_the_runs_else_the_baselines() -> None:
    baseline = Baseline({THROUGHPUT: BaselineMetric(value=100.0, reduce="mean")},
                        scenario="from-the-baseline")
    series = steady({THROUGHPUT: 106.0})

    by_run = judge_checks(evidence_of(series, run={"status": "succeeded", "exit_code": 0,
                                            "scenario": "from-the-run"}),
                   CheckSpec(), baseline=baseline)
    by_baseline = judge_checks(evidence_of(series), CheckSpec(), baseline=baseline)

    assert by_run.status == by_baseline.status == "improved"
    assert refresh_hint("from-the-run") in by_run.reason
    assert refresh_hint("from-the-baseline") in by_baseline.reason


WORDS = [("passed", 0), ("improved", 0), ("regressed", 1), ("failed", 3), ("stopped", 3),
         ("no-such-word", 3), (None, 3)]


@pytest.mark.parametrize("word, code", WORDS, ids=[str(w) for w, _ in WORDS])
def test_every_verdict_word_has_its_exit_code(word: str | None, code: int) -> None:
    assert exit_code_of(word) == code


def test_improved_is_a_finished_verdict_shown_and_counted_apart_from_passes() -> None:
    assert Verdict.IMPROVED == "improved"
    assert "improved" in VERDICTS and "improved" in FINISHED_VERDICTS and "improved" in SHOWN
    assert STATUSES[:2] == ("pass", "improved")


# --- JUnit and the terminal -------------------------------------------------------------------

def test_junit_keeps_an_improved_row_a_passing_case_that_says_why(tmp_path: Path) -> None:
    evidence = evidence_of(steady({MEMORY: 17.0, THROUGHPUT: 100.0, STEP: 10.0}),
                           scenario=SCENARIO)
    verdict = judge_checks(evidence, CheckSpec(), baseline=stale_baseline())

    write_junit([verdict_suite(verdict, "handmade")], tmp_path / "checks.xml")

    suite = ET.parse(tmp_path / "checks.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "0", "0")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["verdict"] == "improved" and "propose a baseline refresh" in props["reason"]
    case = suite.find(f"testcase[@name='{MEMORY} vs baseline']")
    assert case is not None and [child.tag for child in case] == ["system-out"]
    out = case.findtext("system-out") or ""
    assert out.startswith("improved: value: 17.0") and "improved by 2 beyond 19" in out
    run = suite.find("testcase[@name='run']")
    assert run is not None and [child.tag for child in run] == ["system-out"]
    assert (run.findtext("system-out") or "").startswith("verdict: improved: 1 metric improved")


def test_the_terminal_colours_improved_apart_from_passed() -> None:
    line = terminal.verdict_line("improved", "1 metric improved beyond its band")
    table = terminal.table("checks", ("status", "check"), [("improved", "x"), ("pass", "y")],
                           status_column=0)
    cells = list(table.columns[0].cells)

    assert line.plain.startswith("verdict: IMPROVED - 1 metric improved")
    assert [span.style for span in line.spans] == ["bold cyan"]
    assert [(c.plain, c.style) for c in cells] == [("IMPROVED", "bold cyan"), ("PASS", "green")]
    assert terminal.STYLES["passed"] != terminal.STYLES["improved"]
    unknown = list(terminal.table("t", ("status",), [("odd_word",)], status_column=0)
                   .columns[0].cells)
    assert [(c.plain, c.style) for c in unknown] == [("ODD WORD", "")]  # as it is today
