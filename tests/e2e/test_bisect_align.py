"""From a red night to the commit that caused it, and from one run to another (issue 19), on
REAL runs: the session's nights (tests/e2e/test_nights.py) and a bisect over a local verl
history made from the installed verl (tests/verl_history.py).

The bisect starts from what the red night's report offers: the last green night's verl commit
and tonight's. Its first midpoint fails on the machine (the disk quota, once: an infrastructure
failure) and is skipped; it is stopped with Ctrl-C during its second step and run again, which
continues; it names the commit that planted the loss-scaling bug.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import (
    FAULTS,
    CliRun,
    HeavyLock,
    Nights,
    SuiteRun,
    interrupted,
    workbook_cli,
)
from tests.verl_history import VerlHistory

pytestmark = pytest.mark.verl


def _json_after(output: str) -> dict:
    return json.loads(output[output.index("{"):])


@pytest.fixture(scope="module")
def bisect(nights: Nights, verl_history: VerlHistory, session_env: dict[str, str],
           tmp_path_factory: pytest.TempPathFactory) -> tuple[CliRun, CliRun, Path]:
    marker = tmp_path_factory.mktemp("quota") / "quota.hit"
    args = ["bisect", "gspo-tiny-1n1cpu-fsdp2-vllm", "--verl-repo", str(verl_history.root),
            "--good", verl_history.commits[1], "--bad", verl_history.bad,
            "-s", f"env.PYTHONPATH={FAULTS}", "-s", "env.VERL_USE_EXTERNAL_MODULES=verl_faults",
            "-s", "env.WORKBOOK_FAULT=quota_once", "-s", f"env.WORKBOOK_FAULT_MARKER={marker}"]
    with HeavyLock():
        first = interrupted(args, session_env, when="bisect: step 2:", after_s=8.0)
        again = workbook_cli(args, session_env, timeout=2400)
    state = next(Path(session_env["WORKBOOK_RUNS"]).glob("bisects/*/*/bisect.json"))
    return first, again, state


def test_the_red_nights_report_offers_the_bisect_command(
        nights: Nights, verl_history: VerlHistory) -> None:
    assert nights.regressed.run_dir is not None
    report = (nights.regressed.run_dir / "report.html").read_text()
    assert "workbook bisect" in report
    assert verl_history.commits[1] in report and verl_history.bad in report


def test_bisect_names_the_commit_that_planted_the_bug(
        bisect: tuple[CliRun, CliRun, Path], verl_history: VerlHistory) -> None:
    _, again, state = bisect
    assert again.exit_code == 0, again.output[-4000:]
    data = json.loads(state.read_text())
    assert data["result"]["first_bad"]["sha"] == verl_history.culprit, data["result"]
    page = (state.parent / "bisect.html").read_text()
    assert verl_history.culprit[:12] in page
    assert verl_history.subjects[verl_history.commits.index(verl_history.culprit)] in page
    assert "verl/trainer/ppo/core_algos.py" in page  # the files it changed


def test_an_infrastructure_failure_on_a_midpoint_is_skipped_not_blamed(
        bisect: tuple[CliRun, CliRun, Path]) -> None:
    _, _, state = bisect
    steps = json.loads(state.read_text())["steps"]
    skipped = [s for s in steps if s["outcome"] == "skip"]
    assert len(skipped) == 1, steps
    info = json.loads((Path(skipped[0]["run_dir"]) / "run.json").read_text())
    assert info["diagnosis"]["category"] == "infrastructure", info["diagnosis"]


def test_ctrl_c_stops_the_bisect_and_running_it_again_continues(
        bisect: tuple[CliRun, CliRun, Path]) -> None:
    first, again, state = bisect
    assert first.exit_code == 3, first.output[-3000:]
    steps = json.loads(state.read_text())["steps"]
    outcomes = [s["outcome"] for s in steps]
    assert outcomes.count("skip") == 1 and outcomes[-1] == "bad", outcomes
    # the skipped midpoint ran once: the second invocation did not try it again
    skipped = next(s for s in steps if s["outcome"] == "skip")
    assert len(list(Path(skipped["run_dir"]).parent.glob("*/run.json"))) == 1
    for step in steps:  # every step keeps its run directory and report
        assert (Path(step["run_dir"]) / "report.html").is_file(), step


def test_two_runs_that_differ_only_in_numerics_are_aligned(nights: Nights) -> None:
    run = nights.improved
    assert run.exit_code == 0, run.output[-4000:]
    page = next(Path(line.strip()) for line in reversed(run.stdout.splitlines())
                if line.strip().endswith("alignment.html"))
    data = json.loads((page.parent / "alignment.json").read_text())
    assert data["verdict"]["status"] == "aligned", data["verdict"]
    loss = next(m for m in data["metrics"] if m["metric"] == "actor/pg_loss")
    assert loss["mae_pct"] < 2, loss  # the same training: only the entropy kernel changed
    # the speed is compared, never judged: torch.compile off ran 1.1-2.6x A's speed here
    assert 0.5 < data["throughput"]["ratio"] < 5, data["throughput"]


def test_a_run_with_the_loss_bug_is_not_aligned_from_step_1(
        nights: Nights, smoke: SuiteRun, session_env: dict[str, str], tmp_path: Path) -> None:
    good = smoke.entry("01-gspo-tiny").run_dir
    assert good is not None and nights.regressed.run_dir is not None
    junit = tmp_path / "align.xml"
    done = workbook_cli(["align", str(good), str(nights.regressed.run_dir), "--out",
                         str(tmp_path / "page"), "--junit", str(junit)], session_env, timeout=600)
    assert done.exit_code == 1, done.output[-4000:]
    data = json.loads((tmp_path / "page" / "alignment.json").read_text())
    assert data["verdict"]["status"] == "not aligned"
    loss = next(m for m in data["metrics"] if m["metric"] == "actor/pg_loss")
    assert loss["first_step_beyond"] == 1 and loss["mae_pct"] > 50
    assert "actor/pg_loss" in junit.read_text()
