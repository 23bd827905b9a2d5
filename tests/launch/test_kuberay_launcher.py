"""``launcher: kuberay``: KubeRay as a launcher like ``local`` and ``ray``, against a fake kubectl.

The fake ``kubectl`` (``fake_kubectl`` of test_kuberay) stands in for a Kubernetes cluster with
KubeRay: there is none here. One test runs the whole ``workbook run`` (its notebook through
papermill); the others drive the launcher and the run steps directly.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import get_args

import pytest

from tests.launch.test_kuberay import NPU_SCENARIO, VERL_LOG, fake_kubectl, validate
from workbook.cli import main
from workbook.core.layout import RAYJOB_FILE, RunDir
from workbook.core.serialization import load_yaml_text
from workbook.core.status import RunStatus, Verdict
from workbook.launch.kuberay.launcher import KubeRayLauncher, apply_deadline
from workbook.launch.launcher import Launcher
from workbook.launch.launchers import LAUNCHERS, launcher_of
from workbook.launch.local import LocalLauncher
from workbook.launch.outcome import request_stop
from workbook.launch.ray_job import RayJobLauncher
from workbook.params.schema import LauncherName
from workbook.run import life, steps
from workbook.scenario import load_scenario

__all__ = ["fake_kubectl"]  # the fixture, shared with test_kuberay
KUBERAY = "launcher=kuberay"
IMAGE = "verl:latest-vllm-910b-ubuntu"  # the NPU scenario's


def _cluster(monkeypatch: pytest.MonkeyPatch, job: str = "SUCCEEDED", *, log: bool = True) -> None:
    monkeypatch.setenv("FAKE_KUBE_JOB", job)
    monkeypatch.setenv("FAKE_KUBE_LOG", str(VERL_LOG) if log else "")
    monkeypatch.setenv("FAKE_KUBE_EXEC", "ok" if log else "forbidden")
    monkeypatch.setenv("FAKE_KUBE_VERSION", "v1.31.0")


def _calls(state: Path) -> list[list[str]]:
    path = state / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _prepared(tmp_path: Path, *sets: str) -> steps.Run:
    return steps.prepare(NPU_SCENARIO, overrides=[KUBERAY, *sets], run_root=tmp_path / "runs",
                         notebook="ppo_multinode", announce=False)


# ---------------------------------------------------------------- the protocol


@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_every_launcher_a_scenario_can_name_keeps_to_the_protocol(name: str) -> None:
    scenario = load_scenario(NPU_SCENARIO, [f"launcher={name}"], check_files=False)
    launcher = launcher_of(scenario, "20260101T000000Z-abcdef", "http://127.0.0.1:8265")
    assert isinstance(launcher, Launcher)
    expected = {"local": LocalLauncher, "ray": RayJobLauncher, "kuberay": KubeRayLauncher}[name]
    assert type(launcher) is expected and issubclass(expected, Launcher)
    # this machine's conditions are a local run's; a Ray job's once its nodes are seen to be here
    assert launcher.ran_here() is (name == "local")


def test_the_registry_knows_every_launcher_value_of_the_schema() -> None:
    assert set(LAUNCHERS) == set(get_args(LauncherName)) == {"local", "ray", "kuberay"}


@pytest.mark.parametrize(
    ("timeout_s", "apply_timeout_s", "deadline"),
    [(None, None, None), (3600.0, None, 3600.0 + 1800.0), (3600.0, 60.0, 60.0),
     (None, 60.0, 60.0)],
    ids=["neither", "timeout-plus-grace", "apply-timeout-wins", "apply-timeout-only"],
)
def test_the_job_is_followed_until_its_deadline(
    timeout_s: float | None, apply_timeout_s: float | None, deadline: float | None
) -> None:
    assert apply_deadline(timeout_s, apply_timeout_s) == deadline


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("sets", "code", "said"),
    [([KUBERAY], 0, "is valid (npu, kuberay, 2x4 devices"),
     ([KUBERAY, "kuberay.image=null"], 2, "- kuberay: needs an image with launcher: kuberay"),
     (["kuberay.image=null"], 0, "is valid (npu, ray,"),  # only a KubeRay run needs one
     ([KUBERAY, "ray.local_nodes=2"], 2, "- ray.local_nodes: starts a local Ray cluster"),
     (["launcher=kubernetes"], 2, "'local', 'ray' or 'kuberay'")],
    ids=["kuberay", "kuberay-no-image", "ray-no-image", "kuberay-local-cluster", "unknown"],
)
def test_workbook_validate_accepts_launcher_kuberay(
    capsys: pytest.CaptureFixture[str], sets: list[str], code: int, said: str
) -> None:
    args = [item for s in sets for item in ("-s", s)]
    assert main(["validate", str(NPU_SCENARIO), *args]) == code
    out = capsys.readouterr()
    assert said in (out.out if code == 0 else out.err)


# ---------------------------------------------------------------- prepare


def test_prepare_writes_the_pods_command_and_the_rayjob_and_submits_nothing(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _cluster(monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path / "submitter-home"))
    run = _prepared(tmp_path)
    rd = run.run_dir
    info = rd.read_json("run")
    name = info["rayjob"]["name"]
    assert info["launcher"] == "kuberay" and info["status"] == RunStatus.PREPARED.value
    assert name.endswith(rd.run_id[-6:]) and info["rayjob"]["namespace"] == "default"
    assert info["notebook"] == "ppo_multinode" and info["expected_steps"] == 1
    manifest = load_yaml_text((rd.path / RAYJOB_FILE).read_text())
    validate(manifest)
    assert manifest["metadata"]["name"] == name
    command = rd.read_json("command_json")  # the command and env as the pods get them
    assert command["argv"] == run.plan.argv and command["argv"][0] == "python3"
    assert command["env"]["VERL_FILE_LOGGER_PATH"] == f"/tmp/{name}.metrics.jsonl"
    pod_run = f"/tmp/verl-workbook/runs/{run.scenario.name}/{rd.run_id}"  # the pods' run folder
    assert run.plan.env["VERL_FILE_LOGGER_PATH"].startswith(pod_run)
    assert '"${HOME}"' in rd.file("command_sh").read_text() and str(tmp_path) not in (
        rd.file("command_sh").read_text())
    assert run.scenario.model_path == "${HOME}/.cache/models/Qwen/Qwen3-0.6B"
    assert load_yaml_text(rd.file("params").read_text())["launcher"] == "kuberay"
    assert [c[0] for c in _calls(fake_kubectl)] == ["version"]  # nothing submitted yet
    launcher = steps.launcher_for(run)
    assert isinstance(launcher, KubeRayLauncher) and launcher.name == name  # aimed at that job


def test_a_kuberay_run_records_which_machine_each_fact_is_about(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _cluster(monkeypatch)
    info = _prepared(tmp_path, "kuberay.namespace=rl").run_dir.read_json("run")
    machines = info["machines"]
    submitter, pods = machines["submitter"], machines["pods"]
    assert "submitted" in submitter["about"] and "verl ran there" in pods["about"]
    assert submitter["host"] == socket.gethostname() and submitter["python"].startswith("CPython")
    assert submitter["versions"]["kubectl"] == "v1.31.0"
    assert submitter["versions"]["verl-workbook"] == info["versions"]["verl-workbook"]
    assert pods["image"] == IMAGE and pods["namespace"] == "rl"
    assert pods["rayjob"] == info["rayjob"]["name"] and pods["worker_pods"] == 2
    assert pods["devices_per_pod"] == {"huawei.com/ascend-1980": "4"}
    # this machine's hardware and accelerator stack are not the run's: not recorded as its
    assert not {"hardware", "host", "npu_smi", "cann_version"} & set(info)
    assert set(info["versions"]) == {"verl-workbook"} and set(info["commits"]) <= {"workbook"}


def test_rayjob_apply_prepares_its_run_as_workbook_run_does(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    _cluster(monkeypatch)
    prepared = set(_prepared(tmp_path / "a").run_dir.read_json("run"))
    code = main(["rayjob", str(NPU_SCENARIO), "--apply", "--runs", str(tmp_path / "b")])
    out = capsys.readouterr()
    rd = RunDir(Path(out.out.strip().splitlines()[-1]))
    info = rd.read_json("run")
    assert code == 0 and prepared <= set(info)
    assert info["overrides"] == [KUBERAY] and info["machines"]["pods"]["image"] == IMAGE
    assert "workbook: run directory" not in out.err  # said once, on stdout


def test_rayjob_apply_is_workbook_run_with_launcher_kuberay(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Both commands hand the run to the one function that drives every run (its notebook),
    with the same arguments, and exit with what it says."""
    from workbook.run import driver

    calls: list[tuple] = []

    def execute(params: Path, sets: list[str], rd: RunDir, **how: object) -> driver.RunResult:
        calls.append((params, sets, rd.path.parent, how))
        return driver.RunResult(rd.path, "regressed", "a stand-in", 1, 0.0, None, [])

    monkeypatch.setattr(driver, "execute_run", execute)
    runs = str(tmp_path / "runs")
    applied = main(["rayjob", str(NPU_SCENARIO), "--apply", "--runs", runs, "--name", "nightly"])
    ran = main(["run", str(NPU_SCENARIO), "-s", "kuberay.name=nightly", "-s", KUBERAY,
                "--runs", runs])
    assert applied == ran == 1 and len(calls) == 2 and calls[0] == calls[1]
    assert calls[0][1][-1] == KUBERAY and calls[0][3]["launcher"] == "kuberay"


# ---------------------------------------------------------------- running


def test_the_fetched_log_goes_to_run_log_and_on_line_line_by_line(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _cluster(monkeypatch)
    run = _prepared(tmp_path)
    lines: list[str] = []
    outcome = steps.launcher_for(run).run(run.plan, run.run_dir, on_line=lines.append,
                                          timeout_s=run.scenario.timeout_s)
    assert outcome.status == RunStatus.SUCCEEDED.value and outcome.exit_code == 0
    assert run.run_dir.file("log").read_text() == VERL_LOG.read_text()
    assert lines == VERL_LOG.read_text().splitlines()
    info = run.run_dir.read_json("run")
    assert info["status"] == RunStatus.RUNNING.value and info["owner_pid"]  # until recorded
    applied = json.loads((fake_kubectl / "applied.json").read_text())
    assert applied == load_yaml_text((run.run_dir.path / RAYJOB_FILE).read_text())
    assert applied["spec"]["activeDeadlineSeconds"] == 3600


@pytest.mark.parametrize(
    ("how", "log", "stop"),
    [("delete", True, "delete"), ("suspend", True, "patch"), ("delete", False, "delete")],
    ids=["delete", "suspend", "delete-log-gone"],
)
def test_a_stop_request_stops_the_job_and_the_run_ends_stopped(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    how: str, log: bool, stop: str,
) -> None:
    _cluster(monkeypatch, "RUNNING", log=log)  # a job that never ends by itself
    run = _prepared(tmp_path, f"kuberay.on_interrupt={how}")
    request_stop(run.run_dir.path, "stopped by the user (SIGINT)")

    outcome = steps.launcher_for(run).run(run.plan, run.run_dir,
                                          timeout_s=run.scenario.timeout_s)
    life.record_outcome(run.run_dir, outcome, expected_steps=run.scenario.total_training_steps)
    done = life.close(run.run_dir, announce=False)

    name = run.run_dir.read_json("run")["rayjob"]["name"]
    (stopped,) = [json.loads(x) for x in (fake_kubectl / "stopped.jsonl").read_text().splitlines()]
    assert stopped[:3] == [stop, "rayjob", name]
    info = run.run_dir.read_json("run")
    assert info["status"] == RunStatus.STOPPED.value and "stopped on request" in info["message"]
    assert info["verdict"]["status"] == Verdict.STOPPED.value
    assert done.report is not None and done.report.is_file()
    if log:
        assert run.run_dir.file("log").read_text() == VERL_LOG.read_text()
    else:
        assert "no log of RayJob" in info["message"]


# ---------------------------------------------------------------- workbook run


def test_workbook_run_follows_a_kuberay_scenario_to_a_judged_run_with_its_report(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The one test here that runs a notebook (ppo_multinode, through papermill)."""
    _cluster(monkeypatch)
    code = main(["run", str(NPU_SCENARIO), "-s", KUBERAY, "--runs", str(tmp_path / "runs"),
                 "--quiet"])
    out = capsys.readouterr().out.strip().splitlines()
    rd = RunDir(Path(out[-1]))
    assert code == 0, out
    assert rd.read_json("checks")["verdict"]["status"] == Verdict.PASSED.value
    assert rd.file("report").is_file() and rd.file("notebook").is_file()
    info = rd.read_json("run")
    assert info["launcher"] == "kuberay" and info["status"] == RunStatus.SUCCEEDED.value
    assert info["steps_reached"] == 104 and info["machines"]["pods"]["image"] == IMAGE
    assert rd.file("log").read_text() == VERL_LOG.read_text()
    applied = json.loads((fake_kubectl / "applied.json").read_text())
    assert applied["metadata"]["name"] == info["rayjob"]["name"]
    assert [c[0] for c in _calls(fake_kubectl) if c[0] in ("create", "exec")] == ["create", "exec"]
    assert info["launch_details"]["rayjob"]["jobDeploymentStatus"] == "Complete"  # followed
    page = rd.file("report").read_text()  # the pods' hardware and facts, not this machine's
    assert f"KubeRay pods (2 x 4 npu), image {IMAGE}" in page and "pods: namespace" in page
    assert info["machines"]["submitter"]["host"] not in page.split("data-fact=\"hardware\"")[1][:200]
