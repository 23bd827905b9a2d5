"""The recipe's store step, run as the runner runs it (bash, git, the real ``workbook``), against
a local bare repository standing in for GitHub: the first night creates the site branch, a
later slot keeps the earlier one's jobs, and a slot that lost the race to another merges into
what the other pushed instead of replacing it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.history.nights import SCENARIO, night
from workbook.history.ledger import record
from workbook.report.publish import publish

ROOT = Path(__file__).resolve().parents[2]
NIGHTLY = ROOT / "examples" / "ci" / "nightly-ascend.yml"
BRANCH = "gh-pages"
GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")


def store_script() -> str:
    steps = yaml.safe_load(NIGHTLY.read_text())["jobs"]["store"]["steps"]
    (script,) = [s["run"] for s in steps if "git push" in s.get("run", "")]
    return str(script)


def git(*args: str, cwd: Path) -> str:
    return subprocess.run([str(GIT), *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare repository with a default branch, as the workflow's repository is."""
    bare = tmp_path / "origin.git"
    git("init", "-q", "--bare", "-b", "main", str(bare), cwd=tmp_path)
    work = tmp_path / "seedwork"
    git("clone", "-q", str(bare), str(work), cwd=tmp_path)
    (work / "README.md").write_text("the workflow's repository\n")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "add", "README.md", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init",
        cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    return bare


def job_site(workspace: Path, day: int, hour: int, scenario: str) -> None:
    """One job's artifact as download-artifact lays it out: tonight/site-<job>/site."""
    root = workspace / "runners" / f"{scenario}-{day}-{hour}"
    run = night(root, day, hour=hour, folder=root / scenario)
    if scenario != SCENARIO:
        data = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**data, "scenario": scenario}))
    record(run, root)
    publish(root, workspace / "tonight" / f"site-{scenario}-{day}" / "site")


def workspace_with(tmp_path: Path, origin: Path, name: str, *jobs: tuple[int, int, str]) -> Path:
    """A store job's workspace: tonight's artifacts and this repository checked out at site/."""
    workspace = tmp_path / name
    for day, hour, scenario in jobs:
        job_site(workspace, day, hour, scenario)
    git("clone", "-q", str(origin), str(workspace / "site"), cwd=tmp_path)
    return workspace


def store(workspace: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SITE_BRANCH": BRANCH, "GITHUB_RUN_ID": workspace.name,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT)}
    return subprocess.run(["bash", "-c", store_script()], cwd=workspace / "site", env=env,
                          capture_output=True, text=True, timeout=600)


def branch_runs(origin: Path, tmp_path: Path) -> set[str]:
    """The scenarios of the runs the site branch holds, and its ledger files."""
    look = tmp_path / "look"
    shutil.rmtree(look, ignore_errors=True)
    git("clone", "-q", "--branch", BRANCH, str(origin), str(look), cwd=tmp_path)
    runs = {p.parent.parent.name for p in look.rglob("run.json")}
    return runs | {f"ledger/{p.name}" for p in (look / "ledger").glob("*.jsonl")}


def test_the_first_night_creates_the_branch_and_a_later_slot_keeps_its_jobs(
        tmp_path: Path, origin: Path) -> None:
    first = workspace_with(tmp_path, origin, "slot17", (1, 17, SCENARIO))
    done = store(first)
    assert done.returncode == 0, done.stderr
    later = workspace_with(tmp_path, origin, "slot18", (1, 18, "grpo-tiny"))

    done = store(later)

    assert done.returncode == 0, done.stderr
    assert branch_runs(origin, tmp_path) == {SCENARIO, "grpo-tiny", f"ledger/{SCENARIO}.cpu.jsonl",
                                             "ledger/grpo-tiny.cpu.jsonl"}
    log = git("log", "--format=%s", BRANCH, cwd=origin)
    assert log.splitlines() == ["verl-workbook nightly: run slot18"]  # no history of old pages


def test_a_slot_that_lost_the_race_merges_into_what_the_other_pushed(
        tmp_path: Path, origin: Path) -> None:
    assert store(workspace_with(tmp_path, origin, "night1", (1, 17, SCENARIO))).returncode == 0
    loser = workspace_with(tmp_path, origin, "slot18", (2, 18, "grpo-tiny"))
    winner = workspace_with(tmp_path, origin, "slot19", (2, 19, "ppo-tiny"))
    hook = loser / "site" / ".git" / "hooks" / "pre-push"
    # the other slot pushes between this one's read of the branch and its push, once
    hook.write_text(f"#!/bin/sh\n[ -e {tmp_path}/raced ] && exit 0\ntouch {tmp_path}/raced\n"
                    f"cd {winner / 'site'} && env -u GIT_DIR bash -c '{_quoted(store_script())}'\n")
    hook.chmod(0o755)

    done = store(loser)

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "raced").exists() and "[remote rejected]" in done.stderr, done.stderr
    assert branch_runs(origin, tmp_path) >= {SCENARIO, "grpo-tiny", "ppo-tiny"}


def _quoted(script: str) -> str:
    return script.replace("'", "'\\''")
