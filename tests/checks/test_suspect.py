"""``suspect``: a noisy metric's failed comparison waits for the nights before it to confirm it
(``confirm_nights``): one night beyond the band is news in amber (exit 0), a second in a row a
regression; a suspect row never hides a real failure beside it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.checks.handmade import evidence_of, steady
from workbook.checks.baseline import Baseline, BaselineMetric
from workbook.checks.confirmation import decide
from workbook.checks.junit import verdict_suite, write_junit
from workbook.checks.runner import spec_of
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.checks.verdict import RunVerdict, exit_code_of, judge_checks
from workbook.cli import terminal
from workbook.core.status import FINISHED_VERDICTS, SHOWN
from workbook.errors import ParamsError
from workbook.report.palette import STATUS_COLOURS, VERDICT_COLOURS

NOISY, STEADY = "custom/latency", "custom/memory"  # no default policies: the overrides are all


def verdict_of(values: dict[str, float], confirm: int,
               previous: dict[str, Sequence[str | None]] | None) -> RunVerdict:
    """Both metrics against baseline 10 +- 0.5; only NOISY asks for ``confirm`` nights."""
    baseline = Baseline({m: BaselineMetric(value=10.0, reduce="mean") for m in (NOISY, STEADY)})
    spec = CheckSpec(overrides={NOISY: {"atol": 0.5, "confirm_nights": confirm},
                                STEADY: {"atol": 0.5}})
    return judge_checks(evidence_of(steady(values)), spec, baseline=baseline, previous=previous)


def status_of(verdict: RunVerdict, metric: str) -> str:
    return next(r.status for r in verdict.rows if r.name == f"{metric} vs baseline")


DECISIONS = [
    # confirm_nights, previous nights newest first, tonight's failure becomes
    (2, [], "suspect"),                               # no history: one night beyond
    (2, ["pass"], "suspect"),                         # 1 night beyond
    (2, ["fail"], "fail"),                            # 2 consecutive nights
    (2, ["suspect"], "fail"),                         # last night was the suspect one
    (2, [None, "fail"], "suspect"),                   # last night did not compare it
    (2, ["pass", "suspect"], "suspect"),              # beyond, within, beyond
    (3, ["suspect", "pass", "fail"], "suspect"),      # 2 of 3 in a row
    (3, ["fail", "suspect"], "fail"),                 # 3 in a row
    (3, ["fail"], "suspect"),                         # too few nights known
    (2, ["error"], "suspect"),                        # an error row is not a comparison that failed
    (1, [], "fail"),                                  # confirm 1: today's behaviour
    (1, ["pass"], "fail"),
]


@pytest.mark.parametrize("confirm, previous, expected", DECISIONS,
                         ids=[f"{c}-{'-'.join(map(str, p)) or 'none'}" for c, p, _ in DECISIONS])
def test_a_failure_is_confirmed_only_by_enough_failed_nights_in_a_row(
        confirm: int, previous: list[str | None], expected: str) -> None:
    assert decide(confirm, previous) == expected


ROWS = [
    # noisy value, previous of NOISY, steady value, row statuses, verdict
    (10.6, ["pass"], 10.0, ("suspect", "pass"), "suspect"),
    (10.6, ["fail"], 10.0, ("fail", "pass"), "regressed"),
    (10.6, ["suspect", "pass"], 10.0, ("fail", "pass"), "regressed"),
    (10.6, ["pass", "fail"], 10.0, ("suspect", "pass"), "suspect"),
    (10.6, ["pass"], 10.6, ("suspect", "fail"), "regressed"),   # never hides a real failure
    (10.2, [], 10.0, ("pass", "pass"), "passed"),               # within: nothing to confirm
]


@pytest.mark.parametrize("noisy, previous, other, statuses, word", ROWS)
def test_the_verdict_is_suspect_only_when_nothing_else_failed(
        noisy: float, previous: list[str], other: float, statuses: tuple[str, str],
        word: str) -> None:
    verdict = verdict_of({NOISY: noisy, STEADY: other}, 2, {NOISY: previous})

    assert (status_of(verdict, NOISY), status_of(verdict, STEADY)) == statuses
    assert verdict.status == word
    assert verdict.exit_code == (1 if word == "regressed" else 0)


def test_confirm_one_fails_at_once_as_before() -> None:
    verdict = verdict_of({NOISY: 10.6, STEADY: 10.0}, 1, None)

    assert status_of(verdict, NOISY) == "fail"
    assert verdict.status == "regressed"


def test_a_suspect_verdict_names_its_metrics_and_what_makes_it_regressed() -> None:
    verdict = verdict_of({NOISY: 10.6, STEADY: 10.0}, 2, {NOISY: ["pass"]})
    row = next(r for r in verdict.rows if r.metric == NOISY and r.kind == "baseline")

    assert verdict.status == "suspect" and exit_code_of("suspect") == 0
    assert f"suspect: {NOISY}" in verdict.reason
    assert "a second night in a row beyond the band" in verdict.reason
    assert "makes the run regressed" in verdict.reason
    assert "suspect: beyond its band 1 of the 2 nights in a row" in row.message
    assert verdict.summary()["counts"]["suspect"] == 1


def test_suspect_is_a_finished_verdict_shown_with_its_own_colours() -> None:
    assert "suspect" in FINISHED_VERDICTS and "suspect" in SHOWN
    assert VERDICT_COLOURS["suspect"] not in (VERDICT_COLOURS["regressed"],
                                              VERDICT_COLOURS["improved"])
    assert STATUS_COLOURS["suspect"] not in (STATUS_COLOURS["fail"], STATUS_COLOURS["error"])
    assert terminal.STYLES["suspect"] not in (terminal.STYLES["regressed"],
                                              terminal.STYLES["improved"])


def test_junit_shows_a_suspect_row_as_a_pass_that_says_so(tmp_path: Path) -> None:
    verdict = verdict_of({NOISY: 10.6, STEADY: 10.0}, 2, {})
    path = write_junit([verdict_suite(verdict, "gspo")], tmp_path / "junit.xml")
    case = next(c for c in ET.parse(path).iter("testcase") if c.get("name") == f"{NOISY} vs baseline")

    assert case.find("failure") is None and case.find("error") is None
    assert (case.findtext("system-out") or "").startswith("suspect: ")


SPEC_CASES = [
    # value, problem expected
    (1, False), (2, False), (30, False),
    (0, True), (31, True), (-1, True), (2.0, True), (True, True), ("2", True), (None, True),
]


@pytest.mark.parametrize("value, bad", SPEC_CASES, ids=[repr(v) for v, _ in SPEC_CASES])
def test_confirm_nights_is_an_integer_from_1_to_30(value: object, bad: bool,
                                                   tmp_path: Path) -> None:
    spec, problems = parse_checks({"metrics": {"perf/throughput": {"confirm_nights": value}}},
                                  params_dir=tmp_path)

    where = "checks.metrics.perf/throughput.confirm_nights"
    assert [p for p, _ in problems] == ([where] if bad else [])
    if not bad:
        policy = spec.policy("perf/throughput")
        assert policy is not None and policy.confirm_nights == value


def test_a_policy_confirms_at_once_by_default(tmp_path: Path) -> None:
    spec, _ = parse_checks({"metrics": {"perf/throughput": {"rtol": 0.1}}}, params_dir=tmp_path)

    policy = spec.policy("perf/throughput")
    assert policy is not None and policy.confirm_nights == 1


def test_an_invalid_confirm_nights_is_bad_input_naming_its_field(tmp_path: Path) -> None:
    with pytest.raises(ParamsError) as raised:
        spec_of({"checks": {"metrics": {"perf/throughput": {"confirm_nights": 0}}}}, tmp_path)

    assert raised.value.exit_code == 2
    assert "checks.metrics.perf/throughput.confirm_nights: must be an integer within [1, 30]" \
        in str(raised.value)
