"""``workbook bisect`` refuses bad input with exit 2, naming it, before anything starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bisect.repos import line_of
from tests.bisect.steps import FakeSteps, judged
from workbook.bisect.plan import plan_bisect
from workbook.bisect.search import run_bisect
from workbook.cli import main
from workbook.core.layout import BISECT_FILE, BISECTS_DIR


@pytest.fixture()
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    return line_of(tmp_path, 4)


def bisect(tmp_path: Path, scenario: Path, repo_path: Path, good: str, bad: str,
           *more: str) -> list[str]:
    return ["bisect", str(scenario), "--verl-repo", str(repo_path), "--good", good, "--bad", bad,
            "--runs-root", str(tmp_path / "runs"), *more]


CASES = [
    # what is wrong, the arguments' change, what stderr names
    ("not a repository", {"repo": "plain"}, "is not a git repository"),
    ("an unknown good", {"good": "v9.9.9"}, "--good 'v9.9.9': no such commit"),
    ("an unknown bad", {"bad": "nope"}, "--bad 'nope': no such commit"),
    ("good after bad", {"good": 3, "bad": 0}, "is not an ancestor of --bad"),
    ("an empty range", {"good": 2, "bad": 2}, "same commit"),
    ("an invalid scenario", {"more": ["-s", "lr=nan"]}, "lr"),
    ("a bad run that is no run", {"more": ["--bad-run", "plain"]}, "not a run directory"),
    ("a zero timeout", {"more": ["--timeout-per-step", "0"]}, "--timeout-per-step 0"),
]


@pytest.mark.parametrize("case, change, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_with_exit_2_and_named(
        tmp_path: Path, scenario: Path, repo, capsys: pytest.CaptureFixture[str],
        case: str, change: dict, message: str) -> None:
    path, shas = repo
    (tmp_path / "plain").mkdir()

    def rev(key: str, default: int) -> str:
        given = change.get(key, default)
        return shas[given] if isinstance(given, int) else given

    where = tmp_path / "plain" if change.get("repo") == "plain" else path
    more = [str(tmp_path / m) if m == "plain" else m for m in change.get("more", [])]

    code = main(bisect(tmp_path, scenario, where, rev("good", 0), rev("bad", 3), *more))

    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "runs" / BISECTS_DIR).exists(), "nothing was started"


def test_an_unreadable_state_file_is_refused_with_exit_2(
        tmp_path: Path, scenario: Path, repo, capsys: pytest.CaptureFixture[str]) -> None:
    path, shas = repo
    plan = plan_bisect(scenario, [], path, shas[0], shas[3], runs_root=tmp_path / "runs")
    plan.directory.mkdir(parents=True)
    (plan.directory / BISECT_FILE).write_text(json.dumps({"format": 1, "scenario": "npu"}))

    code = main(bisect(tmp_path, scenario, path, shas[0], shas[3]))

    assert code == 2
    assert "params: expected a non-empty string" in capsys.readouterr().err


def test_the_same_bisect_with_other_overrides_is_refused_with_exit_2(
        tmp_path: Path, scenario: Path, repo, capsys: pytest.CaptureFixture[str]) -> None:
    path, shas = repo
    red = judged(tmp_path / "red" / "npu" / "run1", "regressed")
    plan = plan_bisect(scenario, [], path, shas[0], shas[3], runs_root=tmp_path / "runs",
                       bad_run=red)
    run_bisect(plan, runs_root=tmp_path / "runs", execute=FakeSteps({"c2": "stopped"}))

    code = main(bisect(tmp_path, scenario, path, shas[0], shas[3], "--bad-run", str(red),
                       "-s", "lr=3e-6"))

    assert code == 2
    assert "--restart" in capsys.readouterr().err
