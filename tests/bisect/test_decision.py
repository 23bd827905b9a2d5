"""The arithmetic of a bisect, table-driven: outcomes -> next commit, result, ambiguity."""

from __future__ import annotations

import pytest

from workbook.bisect.decision import BadVerdict, CommitOutcome, Decision, classify, decide, states

G, B, S = CommitOutcome.GOOD, CommitOutcome.BAD, CommitOutcome.SKIP
EIGHT = [f"c{i}" for i in range(8)]  # c7 is the bad night's commit

DECISIONS = [
    # candidates, outcomes, what comes next
    ("nothing tested: the middle", EIGHT, {}, Decision(next="c3")),
    ("after a good middle: the upper half's middle", EIGHT, {"c3": G}, Decision(next="c5")),
    ("between a good and a bad", EIGHT, {"c3": G, "c5": B}, Decision(next="c4")),
    ("found: bad right after good", EIGHT, {"c3": G, "c5": B, "c4": G},
     Decision(first_bad="c5")),
    ("found: the earliest bad", EIGHT, {"c3": G, "c5": B, "c4": B}, Decision(first_bad="c4")),
    ("a skipped middle: the nearest, the later on a tie", EIGHT, {"c3": S}, Decision(next="c4")),
    ("two skips: the nearest untested", EIGHT, {"c3": S, "c4": S}, Decision(next="c2")),
    ("a skip next to the culprit: ambiguous", EIGHT, {"c3": G, "c5": B, "c4": S},
     Decision(one_of=("c4", "c5"))),
    ("every commit skipped: any of them", EIGHT, {f"c{i}": S for i in range(7)},
     Decision(one_of=tuple(EIGHT))),
    ("only the bad commit: it is the first bad", ["bad"], {}, Decision(first_bad="bad")),
    ("two commits: the one before bad", ["c0", "bad"], {}, Decision(next="c0")),
    ("the first candidate bad: GOOD is its parent", EIGHT, {"c0": B},
     Decision(first_bad="c0")),
    ("an even range: the later middle", ["c0", "c1", "c2", "c3", "bad"], {},
     Decision(next="c2")),
    ("an odd range: the middle", ["c0", "c1", "c2", "bad"], {}, Decision(next="c1")),
    ("a good after a bad is not the range", EIGHT, {"c2": B, "c5": G}, Decision(next="c1")),
    ("a skip outside the range does not count", EIGHT, {"c3": G, "c5": B, "c4": G, "c1": S},
     Decision(first_bad="c5")),
]


@pytest.mark.parametrize("case, candidates, outcomes, expected", DECISIONS,
                         ids=[d[0] for d in DECISIONS])
def test_each_next_commit_and_result_follows_from_the_outcomes(
        case: str, candidates: list[str], outcomes: dict[str, CommitOutcome],
        expected: Decision) -> None:
    assert decide(candidates, outcomes) == expected


def test_a_culprit_is_found_in_as_few_steps_as_halving_takes() -> None:
    candidates = [f"c{i}" for i in range(64)]
    for culprit in range(64):
        outcomes: dict[str, CommitOutcome] = {}
        steps = 0
        while not (decision := decide(candidates, outcomes)).done:
            steps += 1
            assert decision.next is not None
            outcomes[decision.next] = B if int(decision.next[1:]) >= culprit else G
        assert decision.first_bad == f"c{culprit}"
        assert steps <= 6


def test_a_skipped_midpoint_is_never_tested_again() -> None:
    outcomes = {"c3": S}
    seen = []
    while not (decision := decide(EIGHT, outcomes)).done:
        assert decision.next is not None
        seen.append(decision.next)
        outcomes[decision.next] = G if decision.next < "c6" else B
    assert "c3" not in seen
    assert decision.first_bad == "c6"


REGRESSED, FAILED_EXC = BadVerdict("regressed"), BadVerdict("failed", "python_exception")
CLASSIFIED = [
    # verdict, its diagnosis category, the bad night's verdict, outcome
    ("passed", None, REGRESSED, G),
    ("improved", None, REGRESSED, G),
    ("suspect", None, REGRESSED, G),
    ("passed", None, FAILED_EXC, G),
    ("regressed", "diverged", REGRESSED, B),
    ("failed", "python_exception", REGRESSED, S),
    ("failed", "infrastructure", REGRESSED, S),
    ("stopped", "stopped", REGRESSED, None),
    ("failed", "python_exception", FAILED_EXC, B),
    ("failed", "infrastructure", FAILED_EXC, S),
    ("failed", None, FAILED_EXC, S),
    ("failed", "import_error", FAILED_EXC, S),
    ("failed", "oom", BadVerdict("failed"), B),
    ("regressed", None, FAILED_EXC, S),
    ("", None, REGRESSED, S),
]


@pytest.mark.parametrize("verdict, category, bad, outcome", CLASSIFIED,
                         ids=[f"{c[0] or 'none'}-{c[1]}-vs-{c[2].describe()}" for c in CLASSIFIED])
def test_a_verdict_is_bad_only_when_it_is_the_bad_nights(
        verdict: str, category: str | None, bad: BadVerdict, outcome: CommitOutcome | None) -> None:
    found, why = classify(verdict, category, bad)

    assert found == outcome
    assert why


@pytest.mark.parametrize("bad", [REGRESSED, FAILED_EXC], ids=lambda b: b.describe())
def test_an_infrastructure_failure_is_skipped_and_says_so(bad: BadVerdict) -> None:
    found, why = classify("failed", "infrastructure", bad)

    assert found == S and "infrastructure" in why


def test_candidates_show_their_state() -> None:
    shown = states(EIGHT, {"c3": G, "c5": B, "c4": S})

    assert shown == ["not needed", "not needed", "not needed", "good", "skip", "bad",
                     "not needed", "bad"]
    assert states(EIGHT, {"c3": G})[4:7] == ["untested"] * 3
