"""A bisect end to end over a real git repository, each step's run a stand-in (FakeSteps, in
``execute_run``'s place behind the batch engine): the steps it takes, resuming, stopping, the
arguments it refuses and the state file it cannot read."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.bisect.repos import git, line_of
from tests.bisect.steps import FakeSteps, judged
from workbook.bisect.plan import BisectPlan, plan_bisect
from workbook.bisect.search import run_bisect
from workbook.bisect.state import StateError
from workbook.core.layout import BISECT_FILE, BISECT_PAGE, BISECT_WORKTREES_DIR
from workbook.errors import InputError
from workbook.history.ledger import read_ledger, record


@pytest.fixture()
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """c0 (the last green night) ... c8 (the red night): candidates c1..c8."""
    return line_of(tmp_path, 9)


def plan(tmp_path: Path, scenario: Path, repo: tuple[Path, list[str]], *,
         sets: list[str] | None = None, bad_run: Path | None = None,
         good: int = 0, bad: int = 8, directory: Path | None = None) -> BisectPlan:
    path, shas = repo
    return plan_bisect(scenario, sets or [], path, shas[good], shas[bad],
                       runs_root=tmp_path / "runs", bad_run=bad_run, directory=directory)


def state_of(p: BisectPlan) -> dict:
    return json.loads((p.directory / BISECT_FILE).read_text())


def red_run(tmp_path: Path, verdict: str = "regressed", category: str | None = None) -> Path:
    return judged(tmp_path / "nights" / "npu" / "20261202T020000Z-red001", verdict, category)


def test_the_first_bad_commit_is_found_by_halving(tmp_path: Path, scenario: Path, repo) -> None:
    p = plan(tmp_path, scenario, repo, bad_run=red_run(tmp_path))
    fake = FakeSteps({f"c{i}": "regressed" for i in range(5, 9)})

    outcome = run_bisect(p, runs_root=tmp_path / "runs", execute=fake)

    shas = repo[1]
    assert fake.tested == ["c4", "c6", "c5"]
    assert (outcome.status, outcome.exit_code) == ("found", 0)
    data = state_of(p)
    assert data["result"]["first_bad"]["sha"] == shas[5]
    assert data["result"]["first_bad"]["subject"] == "c5 change 5"
    assert data["result"]["first_bad"]["author"] == "Ada Tester"
    assert [(s["step"], s["sha"], s["status"], s["outcome"]) for s in data["steps"]] == [
        (1, shas[4], "passed", "good"), (2, shas[6], "regressed", "bad"),
        (3, shas[5], "regressed", "bad")]
    assert [Path(s["run_dir"]).parent.name for s in data["steps"]] == [
        f"1-{shas[4][:7]}", f"2-{shas[6][:7]}", f"3-{shas[5][:7]}"]
    assert data["bad_night"]["source"] == "--bad-run"
    assert (p.directory / BISECT_PAGE).is_file()
    assert not (p.directory / BISECT_WORKTREES_DIR).exists()
    assert git(repo[0], "worktree", "list").count("\n") == 0, "every worktree is gone"


def test_each_step_imports_verl_from_its_own_worktree(tmp_path: Path, scenario: Path,
                                                      repo) -> None:
    p = plan(tmp_path, scenario, repo, sets=["lr=2e-6"], bad_run=red_run(tmp_path))
    fake = FakeSteps({f"c{i}": "regressed" for i in range(5, 9)})

    run_bisect(p, runs_root=tmp_path / "runs", execute=fake)

    worktrees = p.directory / BISECT_WORKTREES_DIR
    assert fake.sets[0] == ["lr=2e-6", f"verl.path={worktrees / repo[1][4][:12]}"]


def test_without_a_known_bad_night_the_bad_commit_runs_first(tmp_path: Path, scenario: Path,
                                                             repo) -> None:
    p = plan(tmp_path, scenario, repo)
    fake = FakeSteps({f"c{i}": "failed:python_exception" for i in range(5, 9)})

    outcome = run_bisect(p, runs_root=tmp_path / "runs", execute=fake)

    assert fake.tested == ["c8", "c4", "c6", "c5"]
    assert outcome.status == "found"
    night = state_of(p)["bad_night"]
    assert (night["status"], night["category"], night["source"]) == (
        "failed", "python_exception", "step")


def test_the_bad_night_is_taken_from_the_ledger(tmp_path: Path, scenario: Path, repo) -> None:
    runs = tmp_path / "runs"
    night = judged(runs / "npu" / "20261202T020000Z-red001", "regressed", verl=repo[1][8])
    assert record(night, runs) is not None

    p = plan(tmp_path, scenario, repo)

    assert p.bad_night is not None
    assert (p.bad_night.source, p.bad_night.status, p.bad_night.run_dir) == (
        "ledger", "regressed", str(night))


def test_a_bad_commit_that_is_green_here_has_nothing_to_bisect(tmp_path: Path, scenario: Path,
                                                               repo) -> None:
    p = plan(tmp_path, scenario, repo)

    outcome = run_bisect(p, runs_root=tmp_path / "runs", execute=FakeSteps({}))

    assert (outcome.status, outcome.exit_code) == ("green", 2)
    assert "nothing to bisect" in outcome.message


def test_a_failed_run_beside_a_culprit_leaves_it_ambiguous(tmp_path: Path, scenario: Path,
                                                          repo) -> None:
    p = plan(tmp_path, scenario, repo, bad_run=red_run(tmp_path))
    fake = FakeSteps({"c5": "failed:import_error", **{f"c{i}": "regressed" for i in (6, 7, 8)}})

    outcome = run_bisect(p, runs_root=tmp_path / "runs", execute=fake)

    assert fake.tested == ["c4", "c6", "c5"]
    assert (outcome.status, outcome.exit_code) == ("ambiguous", 3)
    shas = repo[1]
    assert state_of(p)["result"]["one_of"] == [shas[5], shas[6]]
    assert f"one of: {shas[5][:7]}, {shas[6][:7]}" in outcome.message


def test_a_bisect_goes_on_from_its_state_and_runs_nothing_twice(tmp_path: Path, scenario: Path,
                                                                repo) -> None:
    p = plan(tmp_path, scenario, repo, bad_run=red_run(tmp_path))
    regressed = {f"c{i}": "regressed" for i in range(5, 9)}
    first = FakeSteps({**regressed, "c6": "stopped"})

    stopped = run_bisect(p, runs_root=tmp_path / "runs", execute=first)

    assert (stopped.status, stopped.exit_code) == ("stopped", 3)
    steps = state_of(p)["steps"]
    assert [(s["status"], s["outcome"]) for s in steps] == [("passed", "good"), ("stopped", None)]

    second = FakeSteps(regressed)
    outcome = run_bisect(p, runs_root=tmp_path / "runs", execute=second)

    assert second.tested == ["c6", "c5"], "the good step is kept, the stopped one runs again"
    assert outcome.status == "found"
    steps = state_of(p)["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3]
    assert len(steps[1]["runs"]) == 2, "the stopped step keeps both attempts"

    third = FakeSteps({})
    assert run_bisect(p, runs_root=tmp_path / "runs", execute=third).status == "found"
    assert third.tested == []


def test_a_signal_stops_the_running_step_and_the_bisect(tmp_path: Path, scenario: Path,
                                                        repo) -> None:
    p = plan(tmp_path, scenario, repo, bad_run=red_run(tmp_path))
    fake = FakeSteps({"c6": "wait", **{f"c{i}": "regressed" for i in (5, 7, 8)}},
                     on_start=lambda name: name == "c6" and os.kill(os.getpid(), signal.SIGINT))
    before = signal.getsignal(signal.SIGINT)  # a background job starts with SIGINT ignored

    outcome = run_bisect(p, runs_root=tmp_path / "runs", execute=fake)

    assert (outcome.status, outcome.exit_code) == ("stopped", 3)
    assert fake.tested == ["c4", "c6"]
    data = state_of(p)
    assert [s["status"] for s in data["steps"]] == ["passed", "stopped"]
    assert data["result"]["status"] == "stopped"
    assert (p.directory / BISECT_PAGE).is_file()
    assert not (p.directory / BISECT_WORKTREES_DIR).exists()
    assert signal.getsignal(signal.SIGINT) is before  # the engine gave the handler back


def test_the_same_directory_with_other_arguments_is_refused_unless_restarted(
        tmp_path: Path, scenario: Path, repo) -> None:
    bad = red_run(tmp_path)
    p = plan(tmp_path, scenario, repo, bad_run=bad)
    run_bisect(p, runs_root=tmp_path / "runs", execute=FakeSteps({"c4": "stopped"}))
    other = plan(tmp_path, scenario, repo, sets=["lr=2e-6"], bad_run=bad)
    assert other.directory == p.directory

    with pytest.raises(InputError, match="other sets") as caught:
        run_bisect(other, runs_root=tmp_path / "runs", execute=FakeSteps({}))
    assert caught.value.exit_code == 2

    fake = FakeSteps({f"c{i}": "regressed" for i in range(5, 9)})
    outcome = run_bisect(other, runs_root=tmp_path / "runs", restart=True, execute=fake)
    assert outcome.status == "found"
    assert fake.tested == ["c4", "c6", "c5"]
    assert state_of(other)["sets"] == ["lr=2e-6"]


CORRUPT = [
    # what is wrong, how the file is spoilt, the field named
    ("not JSON", lambda d: "{", "not JSON"),
    ("a list", lambda d: [], "expected a JSON object"),
    ("a step of no candidate", lambda d: _step(d, sha="f" * 40), "steps[0].sha"),
    ("a step out of order", lambda d: _step(d, step=7), "steps[0].step"),
    ("an outcome no bisect gives", lambda d: _step(d, outcome="maybe"), "steps[0].outcome"),
    ("an unknown result", lambda d: {**d, "result": {"status": "done"}}, "result.status"),
    ("a bad night that passed", lambda d: {**d, "bad_night": {"status": "passed",
                                                              "source": "ledger"}},
     "bad_night.status"),
    ("no candidates", lambda d: {**d, "candidates": []}, "candidates"),
    ("sets not a list", lambda d: {**d, "sets": "lr=1"}, "sets"),
]


def _step(data: dict, **change: object) -> dict:
    steps = [dict(data["steps"][0], **change)]
    return {**data, "steps": steps}


@pytest.mark.parametrize("case, spoil, field", CORRUPT, ids=[c[0] for c in CORRUPT])
def test_a_state_file_that_cannot_be_read_is_refused_naming_the_field(
        tmp_path: Path, scenario: Path, repo, case: str, spoil, field: str) -> None:
    p = plan(tmp_path, scenario, repo, bad_run=red_run(tmp_path))
    run_bisect(p, runs_root=tmp_path / "runs", execute=FakeSteps({"c4": "stopped"}))
    spoilt = spoil(state_of(p))
    (p.directory / BISECT_FILE).write_text(spoilt if isinstance(spoilt, str) else
                                           json.dumps(spoilt))
    fake = FakeSteps({})

    with pytest.raises(StateError, match=field.replace("[", r"\[").replace("]", r"\]")) as caught:
        run_bisect(p, runs_root=tmp_path / "runs", execute=fake)

    assert caught.value.exit_code == 2
    assert fake.tested == []


@pytest.mark.parametrize("inside", [True, False], ids=["under bisects/", "a --dir elsewhere"])
def test_a_steps_run_is_never_a_night_of_the_scenario(tmp_path: Path, scenario: Path, repo,
                                                      inside: bool) -> None:
    runs = tmp_path / "runs"
    p = plan(tmp_path, scenario, repo, bad_run=red_run(tmp_path),
             directory=None if inside else runs / "npu-hunt")
    run_bisect(p, runs_root=runs, execute=FakeSteps({f"c{i}": "regressed" for i in range(5, 9)}))
    step_run = Path(state_of(p)["steps"][0]["run_dir"])

    assert record(step_run, runs) is None
    assert read_ledger(runs, "npu", "npu") == []


BAD_INPUT = [
    ("good after bad", {"good": 8, "bad": 0}, "is not an ancestor"),
    ("the same commit", {"good": 3, "bad": 3}, "same commit"),
]


@pytest.mark.parametrize("case, revs, message", BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_a_range_with_nothing_to_bisect_is_refused(tmp_path: Path, scenario: Path, repo,
                                                   case: str, revs: dict, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        plan(tmp_path, scenario, repo, **revs)
    assert caught.value.exit_code == 2


def test_a_green_bad_run_is_refused(tmp_path: Path, scenario: Path, repo) -> None:
    with pytest.raises(InputError, match="nothing to bisect"):
        plan(tmp_path, scenario, repo, bad_run=red_run(tmp_path, "passed"))


def test_a_bad_night_that_failed_on_the_infrastructure_is_refused(tmp_path: Path,
                                                                  scenario: Path, repo) -> None:
    with pytest.raises(InputError, match="infrastructure"):
        plan(tmp_path, scenario, repo, bad_run=red_run(tmp_path, "failed", "infrastructure"))
