"""The nightly recipe's own steps, run as GitHub Actions would run them, on the CPU smoke suite.

The ``run:`` scripts of ``examples/ci/nightly-ascend.yml``'s night job (runs root, validate, run,
job summary, site) are taken from the workflow as they are and run by bash in order, with the
workbook from its own venv (as the install step leaves it), the runner's files (``$GITHUB_ENV``, ``$GITHUB_OUTPUT``, ``$GITHUB_STEP_SUMMARY``) and a scheduled
event. The runs root is the session's, where the smoke suite already ran tonight, so the
scheduled run resumes that night as a nightly would: the recipe's exit code, summary and site are
checked against a real verdict without another training run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, SuiteRun
from workbook.batch.suite import read_suite

pytestmark = pytest.mark.verl
WORKFLOW = REPO / "examples" / "ci" / "nightly-ascend.yml"
STEPS = ("Runs root on the runner's cache; a clean output folder",
         "Validate the scenario (nothing starts if it is invalid)",
         "Run, judge and report the scenario",
         "Job summary from the JUnit file",
         "Build the site (reports and redacted logs, index, trends)")
SCENARIO = "gspo-tiny-1n1cpu-fsdp2-vllm"


def _steps() -> dict[str, dict]:
    job = yaml.safe_load(WORKFLOW.read_text())["jobs"]["nightly"]
    return {step["name"]: step for step in job["steps"] if "name" in step}


def _github_env(path: Path) -> dict[str, str]:
    """What earlier steps appended to ``$GITHUB_ENV`` (``NAME=value`` lines)."""
    lines = path.read_text().splitlines() if path.exists() else []
    return dict(line.split("=", 1) for line in lines if "=" in line)


@pytest.fixture(scope="module")
def night(smoke: SuiteRun, session_env: dict[str, str], tmp_path_factory,  # type: ignore[no-untyped-def]
          workbook_venv: Path) -> dict:
    workspace = tmp_path_factory.mktemp("workspace")
    # what the recipe's install step leaves: the workbook's own venv, only its CLI on PATH, and
    # verl run with the training interpreter (here the tests' full environment)
    (workspace / "workbook-bin").mkdir()
    (workspace / "workbook-bin" / "workbook").symlink_to(workbook_venv / "bin" / "workbook")
    (workspace / "workbook").symlink_to(REPO)  # the recipe checks the workbook out there
    (workspace / "verl").mkdir()  # ... and the verl under test: here, the installed verl's sources
    (workspace / "verl" / "verl").symlink_to(Path(str(find_spec("verl").origin)).parent)
    files = {k: workspace / f".{k.lower()}" for k in ("GITHUB_ENV", "GITHUB_OUTPUT",
                                                       "GITHUB_STEP_SUMMARY")}
    env = dict(session_env, GITHUB_WORKSPACE=str(workspace), GITHUB_EVENT_NAME="schedule",
               SUITE="params/suites/smoke-cpu.txt", SCENARIO=SCENARIO,
               RUNS_ROOT=session_env["WORKBOOK_RUNS"], RUNNER_TOOL_CACHE=str(workspace / "cache"),
               PATH=f"{workspace / 'workbook-bin'}:{os.environ['PATH']}",
               WORKBOOK_VENV=str(workbook_venv), WORKBOOK_PYTHON=sys.executable,
               **{k: str(v) for k, v in files.items()})
    steps, codes = _steps(), {}
    before = set(smoke.directory.rglob("run.json"))
    for name in STEPS:
        step = steps[name]
        if name == "Job summary from the JUnit file":
            env["CODE"] = _github_env(files["GITHUB_OUTPUT"]).get("exit_code", "")
        cwd = workspace / step.get("working-directory", ".")
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=cwd, capture_output=True,
                              text=True, timeout=1800, env={**env, **_github_env(files["GITHUB_ENV"])})
        codes[name] = (done.returncode, done.stdout[-3000:] + done.stderr[-3000:])
    return {"codes": codes, "workspace": workspace, "files": files, "smoke": smoke,
            "new_runs": set(smoke.directory.rglob("run.json")) - before}


def test_each_step_of_the_recipe_succeeds_on_a_passed_night(night: dict) -> None:
    failed = {name: out for name, (code, out) in night["codes"].items() if code != 0}
    assert failed == {}
    assert _github_env(night["files"]["GITHUB_OUTPUT"])["exit_code"] == "0"


def test_the_scheduled_run_resumes_the_night_instead_of_training_again(night: dict) -> None:
    assert night["new_runs"] == set()
    record = json.loads((night["smoke"].directory / "suite.json").read_text())
    keys = [entry["key"] for entry in record["entries"]]
    suite = REPO / "params" / "suites" / "smoke-cpu.txt"
    entries = read_suite(suite)
    assert len(keys) == len(entries) >= 3  # running one entry alone keeps the others' records


def test_the_job_summary_shows_the_verdict_and_every_check(night: dict) -> None:
    summary = night["files"]["GITHUB_STEP_SUMMARY"].read_text()
    assert f"### {SCENARIO}: passed (exit 0)" in summary
    rows = [line for line in summary.splitlines() if line.startswith("| ") and "| passed |" in line]
    assert len(rows) >= 5, summary


def test_the_site_the_recipe_uploads_holds_the_report_and_no_raw_log_leaks(night: dict) -> None:
    site = night["workspace"] / "out" / "site"
    index = (site / "index.html").read_text()
    run_dir = Path(night["smoke"].entry("01-gspo").run_dir)
    assert f'data-run="{run_dir.name}"' in index and 'data-verdict="passed"' in index
    assert list(site.rglob("report.html"))
    assert not [p for p in site.rglob("*") if p.is_symlink()]
