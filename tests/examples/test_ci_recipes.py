"""The CI recipes in examples/ci stay valid: YAML that parses, workflows GitHub can schedule, and
every ``workbook ...`` command they show accepted by the real CLI parser.

Commands are collected from ``run:`` blocks of the workflows and from fenced code blocks of the
Markdown files, each read the way the shell would hand it to ``workbook`` (``tests/shell.py``).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.shell import PLACEHOLDER, script_lines, workbook_argv
from workbook.batch.suite import read_suite
from workbook.cli import parser
from workbook.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / "examples" / "ci"
YAML_FILES = sorted([*CI.glob("*.yml"), *CI.glob("*.yaml")])
MARKDOWN_FILES = sorted(CI.glob("*.md"))
NIGHTLY = CI / "nightly-ascend.yml"
SYNC = CI / "nightly-sync.yml"
KUBERAY = CI / "nightly-kuberay.yml"
SUITES = {"params/suites/nightly-npu-a2.txt": "linux-aarch64-a2b3-8",
          "params/suites/nightly-npu-a3.txt": "linux-aarch64-a3-16"}
# Current majors (all on node24 or composite), read from each action's repository.
CURRENT_MAJORS = {"actions/checkout": "v7", "actions/upload-artifact": "v7",
                  "actions/download-artifact": "v8", "actions/upload-pages-artifact": "v5",
                  "actions/deploy-pages": "v5", "actions/setup-python": "v7"}
ACTIONLINT = (shutil.which("actionlint", path=str(Path(sys.executable).parent))
              or shutil.which("actionlint"))
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)


def _rel(path: Path) -> str:
    return str(path.relative_to(CI))


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    """``on:`` (PyYAML reads an unquoted ``on`` key as ``True``, YAML 1.1's boolean)."""
    found = workflow.get("on", workflow.get(True))
    return found if isinstance(found, dict) else {}


def _is_workflow(data: Any) -> bool:
    return isinstance(data, dict) and "jobs" in data and bool(_triggers(data) or "on" in data)


def _values(data: Any, name: str) -> Iterator[str]:
    """Every text value of the key ``name`` anywhere in a workflow (or a snippet of one)."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == name and isinstance(value, str):
                yield value
            else:
                yield from _values(value, name)
    elif isinstance(data, list):
        for item in data:
            yield from _values(item, name)


def _run_blocks(data: Any) -> Iterator[str]:
    """Every ``run:`` value anywhere in a workflow (or a snippet of one)."""
    return _values(data, "run")


def _commands() -> list[Any]:
    """One ``pytest.param`` per ``workbook`` command, with an id naming its file and place."""
    found: list[Any] = []
    for path in [*YAML_FILES, *MARKDOWN_FILES]:
        if path.suffix == ".md":
            blocks = _FENCE.findall(path.read_text(encoding="utf-8"))
        else:
            blocks = list(_run_blocks(_load(path)))
        lines = [line for block in blocks for line in script_lines(block)]
        argvs = [a for a in (workbook_argv(_shell_part(line)) for line in lines) if a is not None]
        found += [pytest.param(argv, id=f"{_rel(path)}#{n}:workbook {' '.join(argv[:2])}")
                  for n, argv in enumerate(argvs, 1)]
    return found


def _shell_part(line: str) -> str:
    """A YAML ``run: cmd`` line of a guide's snippet as the command alone; comments as nothing."""
    stripped = line.strip()
    if stripped.startswith("#"):
        return ""
    return re.sub(r"^(?:-\s+)?run:\s*", "", stripped)


COMMANDS = _commands()


@pytest.mark.parametrize("path", YAML_FILES, ids=_rel)
def test_every_recipe_is_valid_yaml(path: Path) -> None:
    assert _load(path) is not None


@pytest.mark.parametrize("path", [p for p in YAML_FILES if _is_workflow(_load(p))], ids=_rel)
def test_every_workflow_runs_nightly_and_on_demand_with_a_timeout(path: Path) -> None:
    workflow = _load(path)
    triggers = _triggers(workflow)
    assert triggers.get("schedule") and all("cron" in s for s in triggers["schedule"])
    assert "workflow_dispatch" in triggers
    assert workflow["jobs"]
    for name, job in workflow["jobs"].items():
        assert isinstance(job.get("timeout-minutes"), int), f"job {name} has no timeout-minutes"


@pytest.mark.parametrize("path", YAML_FILES, ids=_rel)
def test_every_run_step_fails_on_the_first_error(path: Path) -> None:
    for block in _run_blocks(_load(path)):
        assert block.lstrip().startswith("set -euo pipefail"), block


@pytest.mark.parametrize("path", YAML_FILES, ids=_rel)
def test_workflows_assume_no_home_of_root(path: Path) -> None:
    assert "/root" not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", MARKDOWN_FILES, ids=_rel)
def test_yaml_blocks_in_the_guides_parse(path: Path) -> None:
    blocks = re.findall(r"^```ya?ml\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S)
    for block in blocks:
        assert yaml.safe_load(block) is not None


def test_the_recipes_show_each_path_of_the_issue() -> None:
    shown = [p.values[0] for p in COMMANDS]

    def has(command: str, *options: str) -> bool:
        return any(a[: len(command.split())] == command.split() and set(options) <= set(a)
                   for a in shown)

    assert has("suite run", "--junit")
    assert has("publish")
    assert has("run")
    assert has("check", "--baseline", "--junit")
    assert has("check", "--scenario")
    assert has("report")
    assert has("rayjob", "--apply")
    assert has("nightly sync", "--verl", "--recipe", "--write")
    assert has("seed", "--from")
    assert has("publish", "--keep-nights")


@pytest.mark.parametrize("argv", COMMANDS)
def test_every_workbook_command_parses(argv: list[str]) -> None:
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse's way of rejecting a command line
        pytest.fail(f"`workbook {shlex.join(argv)}` does not parse (exit {exc.code})")
    assert callable(args.handler)


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        ("workbook check run.log --junit junit.xml", ["check", "run.log", "--junit", "junit.xml"]),
        ('workbook rayjob "$P" -s "kuberay.image=$IMAGE" > rayjob.yaml',
         ["rayjob", PLACEHOLDER, "-s", f"kuberay.image={PLACEHOLDER}"]),
        ("workbook suite run x.txt 2>&1 | tee out || code=$?", ["suite", "run", "x.txt"]),
        ("workbook publish ${{ env.RUNS }} site && echo done", ["publish", PLACEHOLDER, "site"]),
        ("echo workbook run x", None),
        ("python3 -m pip install -e .", None),
    ],
)
def test_command_lines_are_read_as_the_shell_would(line: str, argv: list[str] | None) -> None:
    assert workbook_argv(line) == argv


def _workflows() -> list[Path]:
    return [p for p in YAML_FILES if _is_workflow(_load(p))]


def _jobs_table() -> list[dict[str, Any]]:
    table: list[dict[str, Any]] = json.loads(_load(NIGHTLY)["env"]["JOBS"])
    return table




def _actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    assert ACTIONLINT is not None, "actionlint is missing: the test extra installs it"
    return subprocess.run([ACTIONLINT, "-no-color", "-config-file", str(CI / "actionlint.yaml"),
                           str(path)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("path", _workflows(), ids=_rel)
def test_actionlint_finds_nothing_in_the_workflow(path: Path) -> None:
    done = _actionlint(path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", _workflows(), ids=_rel)
def test_actionlint_flags_a_workflow_with_a_mistake(path: Path, tmp_path: Path) -> None:
    # The same workflow with one misspelt action input: the lint must see it, or it checks nothing.
    text = path.read_text()
    assert "uses: actions/checkout@" in text
    broken = text.replace("uses: actions/checkout@v7", "uses: actions/checkout@v7\n        with: {fetch-dept: 1}", 1)
    (tmp_path / path.name).write_text(broken)
    done = _actionlint(tmp_path / path.name)
    assert done.returncode == 1 and 'input "fetch-dept" is not defined' in done.stdout, done.stdout


@pytest.mark.parametrize("path", _workflows(), ids=_rel)
def test_every_action_is_at_its_current_major(path: Path) -> None:
    for ref in _values(_load(path), "uses"):
        action, _, version = ref.partition("@")
        assert action in CURRENT_MAJORS, f"{ref}: not an action these recipes are checked against"
        assert version == CURRENT_MAJORS[action], f"{ref}: the current major is {CURRENT_MAJORS[action]}"


def test_the_nightly_has_one_job_per_npu_scenario_on_its_suites_runner() -> None:
    table = _jobs_table()
    scenarios = [row["scenario"] for row in table]
    assert len(scenarios) == len(set(scenarios)) == 13
    expected = {}
    for suite, runner in SUITES.items():
        for entry in read_suite(ROOT / suite):
            if load_scenario(entry.params, check_files=False).launcher != "ray":
                expected[entry.params.stem] = (suite, runner)
    assert {row["scenario"]: (row["suite"], row["runner"]) for row in table} == expected


def test_the_nightly_jobs_keep_verls_job_names_and_cron_slots() -> None:
    facts = ROOT / "params" / "nightly"
    crons = {c["cron"] for c in _triggers(_load(NIGHTLY))["schedule"]}
    for row in _jobs_table():
        assert json.loads((facts / f"{row['scenario']}.script.json").read_text())["job"] == row["job"]
        assert f"0 {row['slot']} * * *" in crons


def test_the_nightly_job_outlives_its_step_which_outlives_the_scenario() -> None:
    job = _load(NIGHTLY)["jobs"]["nightly"]
    step = next(s for s in job["steps"] if s.get("id") == "run")
    longest = max(load_scenario(ROOT / "params" / f"{row['scenario']}.yaml", check_files=False).timeout_s or 0
                  for row in _jobs_table())
    assert job["timeout-minutes"] > step["timeout-minutes"] > longest / 60


def test_container_jobs_use_the_containers_paths_and_a_runs_root_that_survives() -> None:
    job = _load(NIGHTLY)["jobs"]["nightly"]
    assert "container" in job
    for block in _run_blocks(job):
        assert "runner.temp" not in block and "/github/home" not in block
    setup = "\n".join(_run_blocks(job))
    assert "WORKBOOK_RUNS=${RUNS_ROOT:-$RUNNER_TOOL_CACHE/" in setup
    assert all("runner.temp" not in str(step.get("with", {})) for step in job["steps"])


def test_a_manual_run_reruns_and_a_scheduled_one_resumes() -> None:
    step = next(s for s in _load(NIGHTLY)["jobs"]["nightly"]["steps"] if s.get("id") == "run")
    lines = step["run"].splitlines()
    runs = [(n, a) for n, a in enumerate(map(workbook_argv, lines)) if a]
    (first, manual), (_, scheduled) = runs
    assert "--rerun" in manual and "--rerun" not in scheduled
    assert '"$GITHUB_EVENT_NAME" = workflow_dispatch ]' in lines[first - 1]


@pytest.mark.parametrize("path", _workflows(), ids=_rel)
def test_artifacts_hold_only_published_sites_and_junit(path: Path) -> None:
    for job in _load(path)["jobs"].values():
        for step in job.get("steps", []):
            if str(step.get("uses", "")).startswith("actions/upload-artifact@"):
                for item in str(step["with"]["path"]).splitlines():
                    assert item.rstrip("/").endswith(("site", "junit.xml", "out")), item
                publish = [a for b in _run_blocks(job) for a in map(workbook_argv, script_lines(b))
                           if a and a[0] == "publish"]
                assert publish, "an artifact without `workbook publish` before it"


def test_pages_deploy_from_a_job_without_a_container_after_every_night_job() -> None:
    jobs = _load(NIGHTLY)["jobs"]
    store, pages = jobs["store"], jobs["pages"]
    assert "container" not in store and set(store["needs"]) == {"nightly", "ray"}
    assert "container" not in pages and pages["needs"] == "store"
    assert any(str(u).startswith("actions/deploy-pages@") for u in _values(pages, "uses"))
    assert not any(str(u).startswith("actions/upload-pages-artifact@") for u in _values(jobs["nightly"], "uses"))


def _step_index(steps: list[dict[str, Any]], predicate: Any) -> int:
    return next(n for n, step in enumerate(steps) if predicate(step))


@pytest.mark.parametrize("name", ["nightly", "ray"])
def test_every_job_seeds_its_runs_root_from_the_site_branch_before_it_runs(name: str) -> None:
    workflow = _load(NIGHTLY)
    steps = workflow["jobs"][name]["steps"]
    site = _step_index(steps, lambda s: s.get("with", {}).get("ref") == "${{ env.SITE_BRANCH }}")
    assert steps[site]["continue-on-error"] is True  # no branch before the first night
    seeding = _step_index(steps, lambda s: any(
        (a or [""])[0] == "seed" for a in map(workbook_argv, script_lines(s.get("run", "")))))
    running = _step_index(steps, lambda s: any(
        (a or [""])[:2] == ["suite", "run"] for a in map(workbook_argv, script_lines(s.get("run", "")))))
    assert site < seeding < running
    assert steps[seeding]["if"] == f"steps.{steps[site]['id']}.outcome == 'success'"
    assert workflow["env"]["SITE_BRANCH"] == "${{ vars.WORKBOOK_SITE_BRANCH || 'gh-pages' }}"


def test_the_store_merges_tonights_sites_into_the_branch_and_pushes_only_over_what_it_read() -> None:
    store = _load(NIGHTLY)["jobs"]["store"]
    assert store["permissions"] == {"contents": "write"} and "concurrency" not in store
    script = next(s["run"] for s in store["steps"] if "git push" in s.get("run", ""))
    (argv,) = [a for a in map(workbook_argv, script_lines(script)) if a]
    assert argv[0] == "publish" and "--keep-nights" in argv
    assert '--force-with-lease="refs/heads/$SITE_BRANCH:$base"' in script
    assert "for attempt in" in script and "git clean -f -d -x" in script


def test_one_deployment_at_a_time_of_the_branch_as_it_is_now() -> None:
    pages = _load(NIGHTLY)["jobs"]["pages"]
    assert pages["concurrency"] == {"group": "verl-workbook-pages", "cancel-in-progress": False}
    assert pages["if"] == "${{ !cancelled() && needs.store.result == 'success' }}"
    checkout = next(s for s in pages["steps"] if str(s.get("uses", "")).startswith("actions/checkout@"))
    upload = next(s for s in pages["steps"]
                  if str(s.get("uses", "")).startswith("actions/upload-pages-artifact@"))
    assert checkout["with"]["ref"] == "${{ env.SITE_BRANCH }}"
    assert upload["with"] == {"path": checkout["with"]["path"]}  # hidden files (.git) left out


def test_ray_entries_run_only_where_a_ray_address_is_set() -> None:
    jobs = _load(NIGHTLY)["jobs"]
    assert "vars.RAY_ADDRESS != ''" in jobs["ray"]["if"]
    assert jobs["ray"]["env"]["RAY_ADDRESS"] == "${{ vars.RAY_ADDRESS }}"
    ray = {e["scenario"] for e in jobs["ray"]["strategy"]["matrix"]["include"]}
    assert ray == {e.params.stem for suite in SUITES for e in read_suite(ROOT / suite)
                   if load_scenario(e.params, check_files=False).launcher == "ray"}


def test_the_kuberay_guide_waits_for_success_and_failure_alike() -> None:
    text = (CI / "kuberay-multinode.md").read_text(encoding="utf-8")
    assert "case \"$state\" in Complete|Failed) break" in text
    assert "--for=jsonpath='{.status.jobDeploymentStatus}'=Complete --timeout" not in text


def test_the_before_of_the_guide_is_verls_real_job() -> None:
    text = (CI / "verl-nightly-job.md").read_text(encoding="utf-8")
    before = text.split("## Before", 1)[1].split("## After", 1)[0]
    assert "bash tests/special_npu/nightly_ci_ascend/run_gspo_qwen3_8b_fsdp2_npu.sh\n" in before
    assert "cd /root/.cache/nightly_log/" in before
    assert "--base run_gspo_qwen3_8b_fsdp2_npu/baseline_gspo_qwen3_8b_fsdp2_npu.txt" in before


def test_the_sync_opens_a_pull_request_on_drift_alone_from_what_it_wrote() -> None:
    workflow = _load(SYNC)
    assert workflow["permissions"] == {"contents": "write", "pull-requests": "write"}
    steps = workflow["jobs"]["sync"]["steps"]
    sync = next(s for s in steps if s.get("id") == "sync")
    (argv,) = [a for a in map(workbook_argv, script_lines(sync["run"])) if a]
    assert argv[:2] == ["nightly", "sync"] and {"--verl", "--recipe", "--write"} <= set(argv)
    assert 'exit "$code"' in sync["run"]  # bad input (2) fails the job, opens nothing
    (pr,) = [s for s in steps if "gh pr create" in s.get("run", "")]
    assert pr["if"] == "steps.sync.outputs.exit_code == '1'"
    assert "git add params/nightly params/baselines" in pr["run"]
    assert "--body-file \"$REPORT\"" in pr["run"]


def _install_lines(path: Path) -> list[str]:
    """Shell lines of a recipe (workflow or guide) that pip-install the workbook's checkout."""
    if path.suffix == ".md":
        blocks = _FENCE.findall(path.read_text(encoding="utf-8"))
    else:
        blocks = list(_run_blocks(_load(path)))
    found = []
    for line in (line for block in blocks for line in script_lines(block)):
        words = [w.strip("'\"") for w in line.split("#", 1)[0].split()]
        if "install" in words and "pip" in " ".join(words[:words.index("install")]):
            targets = words[words.index("install") + 1:]
            if any(t in (".", "./workbook") or t.startswith((".[", "./workbook[")) for t in targets):
                found.append(line.strip())
    return found


@pytest.mark.parametrize("path", [*YAML_FILES, *MARKDOWN_FILES], ids=_rel)
def test_the_workbook_is_installed_into_a_venv_of_its_own_never_the_images_python(
        path: Path) -> None:
    for line in _install_lines(path):
        program = line.split()[0].strip("'\"")
        assert re.fullmatch(r"\S*venv\S*/bin/(python3?|pip3?)", program), line


def test_the_install_check_sees_an_install_into_the_images_python() -> None:
    bad = CI / "bad.md"
    try:
        bad.write_text("```yaml\n      - run: python3 -m pip install -e ./workbook\n```\n")
        assert _install_lines(bad) == ["- run: python3 -m pip install -e ./workbook"]
    finally:
        bad.unlink()


def test_the_container_job_runs_verl_with_the_images_python3_beside_the_workbook() -> None:
    job = _load(NIGHTLY)["jobs"]["nightly"]
    setup = "\n".join(_run_blocks(job))
    assert 'echo "WORKBOOK_PYTHON=$(command -v python3)"' in setup
    # only the workbook's CLI goes on PATH: a venv's bin dir would shadow the image's python3
    for line in setup.splitlines():
        if "GITHUB_PATH" in line:
            assert "workbook-bin" in line and "venv" not in line, line
