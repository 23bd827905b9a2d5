"""The KubeRay RayJob manifest, validated against the RayJob schema in tests/launch/data.

``data/rayjob.schema.json`` is the project's own JSON Schema written from KubeRay's documented
RayJob/RayCluster API fields (no registry package ships the CRD); see its description.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from workbook.cli import rayjob as rayjob_cli
from workbook.command import build_plan
from workbook.command.plan import Plan
from workbook.core.layout import RunDir
from workbook.core.serialization import load_yaml_text
from workbook.errors import EXIT_RUN_FAILED, InputError, LaunchError
from workbook.launch.kuberay import kubectl
from workbook.launch.kuberay import manifest as kuberay_manifest
from workbook.launch.kuberay import pods as kuberay_pods
from workbook.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
NPU_SCENARIO = ROOT / "params" / "ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob.yaml"
SCHEMA = json.loads((Path(__file__).parent / "data" / "rayjob.schema.json").read_text())


def validate(manifest: dict) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(manifest)


def run_on_kuberay(runs: Path, *sets: str) -> tuple[int, RunDir]:
    """The NPU scenario run as ``workbook run -s launcher=kuberay`` (and so ``rayjob --apply``)
    runs it, its notebook's steps called in this process (where the fake kubectl's waits are
    cut): the exit code ``workbook run`` gives, and the run directory."""
    from workbook.checks.verdict import exit_code_of
    from workbook.run import life, steps

    run = steps.prepare(NPU_SCENARIO, overrides=["launcher=kuberay", *sets], run_root=runs,
                        notebook="ppo_multinode", announce=False)
    steps.launch(run, live=False)
    done = life.close(run.run_dir, announce=False)
    code = exit_code_of(str(run.run_dir.verdict().get("status")))
    return (max(code, EXIT_RUN_FAILED) if done.errors else code), run.run_dir


@pytest.fixture(scope="module")
def npu_plan_and_manifest() -> tuple:
    scenario = load_scenario(NPU_SCENARIO, check_files=False, variables={"HOME": "${HOME}"})
    plan = build_plan(scenario, Path("/tmp/verl-workbook/runs/x/run"), on_existing_cluster=True)
    manifest = kuberay_manifest.rayjob_manifest(
        plan,
        name=scenario.name,
        nodes=scenario.nodes,
        devices_per_node=scenario.devices_per_node,
        device=scenario.profile,
        settings=scenario.kuberay.as_settings(),
        timeout_s=scenario.timeout_s,
    )
    return scenario, plan, manifest


def test_npu_manifest_validates_against_the_rayjob_schema(npu_plan_and_manifest: tuple) -> None:
    _, _, manifest = npu_plan_and_manifest
    validate(manifest)
    # and survives a YAML round trip unchanged (what `workbook rayjob > rayjob.yaml` writes)
    assert load_yaml_text(kuberay_manifest.manifest_yaml(manifest)) == manifest


def test_npu_manifest_asks_each_worker_for_the_scenarios_npus(npu_plan_and_manifest: tuple) -> None:
    scenario, _, manifest = npu_plan_and_manifest
    cluster = manifest["spec"]["rayClusterSpec"]
    (workers,) = cluster["workerGroupSpecs"]
    assert (
        workers["replicas"]
        == workers["minReplicas"]
        == workers["maxReplicas"]
        == scenario.nodes
        == 2
    )
    container = workers["template"]["spec"]["containers"][0]
    for kind in ("requests", "limits"):
        assert (
            container["resources"][kind]["huawei.com/ascend-1980"]
            == str(scenario.devices_per_node)
            == "4"
        )
        assert container["resources"][kind]["cpu"] == "64"
    assert json.loads(workers["rayStartParams"]["resources"].strip("'")) == {"NPU": 4}
    head = cluster["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert "huawei.com/ascend-1980" not in head["resources"]["limits"]
    assert {c["image"] for c in (head, container)} == {"verl:latest-vllm-910b-ubuntu"}


def test_npu_manifest_runs_the_exact_command_with_the_plan_env(
    npu_plan_and_manifest: tuple,
) -> None:
    _, plan, manifest = npu_plan_and_manifest
    spec = manifest["spec"]
    assert shlex.split(spec["entrypoint"]) == plan.argv
    assert "skip.rollout_tq.steps=[1]" in shlex.split(spec["entrypoint"])
    env = load_yaml_text(spec["runtimeEnvYAML"])["env_vars"]
    logger = "VERL_FILE_LOGGER_PATH"
    assert {k: v for k, v in env.items() if k != logger} == {
        k: v for k, v in plan.env.items() if k != logger
    }
    assert spec["activeDeadlineSeconds"] == 3600
    assert spec["shutdownAfterJobFinishes"] is True and spec["ttlSecondsAfterFinished"] == 600
    assert spec["submissionMode"] == "K8sJobMode"


def test_every_pod_gets_shared_memory_in_ram(npu_plan_and_manifest: tuple) -> None:
    _, _, manifest = npu_plan_and_manifest
    cluster = manifest["spec"]["rayClusterSpec"]
    for group in [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]:
        spec = group["template"]["spec"]
        # the first volume; the scenario's cache claim (model, data, rollout dumps) follows it
        assert spec["volumes"][0] == {
            "name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "128Gi"}}
        assert {"name": "dshm", "mountPath": "/dev/shm"} in spec["containers"][0]["volumeMounts"]


@pytest.mark.parametrize(
    ("device", "resource", "start_param"),
    [("cuda", "nvidia.com/gpu", ("num-gpus", "8")), ("cpu", None, ("num-gpus", "8"))],
)
def test_cuda_and_cpu_manifests_use_their_device_resource(
    device: str, resource: str | None, start_param: tuple
) -> None:
    plan = Plan(
        ["python3", "-m", "verl.trainer.main_ppo", "a=b c"], {"X": "1", "RAY_AUTH_TOKEN": "secret"}
    )
    manifest = kuberay_manifest.rayjob_manifest(
        plan, name="My_Run.v2", nodes=3, devices_per_node=8, device=device, timeout_s=None,
        settings={"image": "my/verl:cuda"},
    )
    validate(manifest)
    (workers,) = manifest["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    limits = workers["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert (limits.get(resource) if resource else None) == ("8" if resource else None)
    assert "huawei.com/ascend-1980" not in limits
    assert workers["rayStartParams"][start_param[0]] == start_param[1]
    assert manifest["metadata"]["name"] == "my-run-v2"
    assert "activeDeadlineSeconds" not in manifest["spec"]
    assert "RAY_AUTH_TOKEN" not in manifest["spec"]["runtimeEnvYAML"]


def test_settings_are_checked_and_defaults_documented() -> None:
    plan = Plan(["true"], {})
    with pytest.raises(InputError, match="unknown kuberay setting"):
        kuberay_manifest.rayjob_manifest(
            plan, name="x", nodes=1, devices_per_node=1, device="npu",
            settings={"imag": "x", "image": "v"}
        )
    with pytest.raises(InputError, match="submission_mode"):
        kuberay_manifest.rayjob_manifest(
            plan,
            name="x",
            nodes=1,
            devices_per_node=1,
            device="npu",
            settings={"submission_mode": "Bogus", "image": "v"},
        )
    manifest = kuberay_manifest.rayjob_manifest(
        plan,
        name="x",
        nodes=1,
        devices_per_node=1,
        device="npu",
        settings={
            "image": "v",
            "shutdown_after_job_finishes": False,
            "service_account": "runner",
            "submission_mode": "HTTPMode",
        },
    )
    validate(manifest)
    assert "ttlSecondsAfterFinished" not in manifest["spec"]
    assert manifest["spec"]["submissionMode"] == "HTTPMode"
    pods = [
        manifest["spec"]["rayClusterSpec"]["headGroupSpec"],
        *manifest["spec"]["rayClusterSpec"]["workerGroupSpecs"],
    ]
    assert {p["template"]["spec"]["serviceAccountName"] for p in pods} == {"runner"}
    for key in kuberay_manifest.DEFAULTS:
        assert key in (kuberay_manifest.__doc__ or ""), f"default of {key} is not documented"


def test_schema_rejects_a_misspelled_field(npu_plan_and_manifest: tuple) -> None:
    _, _, manifest = npu_plan_and_manifest
    broken = json.loads(json.dumps(manifest))
    broken["spec"]["shutdownAfterJobFinish"] = True
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)


def test_rayjob_cli_prints_a_manifest_for_the_npu_scenario(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser()
    rayjob_cli.register(parser.add_subparsers())
    args = parser.parse_args(
        ["rayjob", str(NPU_SCENARIO), "-s", "kuberay.namespace=rl", "--name", "ppo-2n"]
    )
    assert args.handler(args) == 0
    manifest = load_yaml_text(capsys.readouterr().out)
    validate(manifest)
    # --name is a prefix: the run id's end makes it unique, so no run reads an earlier job's
    name = manifest["metadata"].pop("name")
    assert name.startswith("ppo-2n-") and len(name) == len("ppo-2n-") + 6
    assert manifest["metadata"] == {
        "namespace": "rl",
        "labels": {"app.kubernetes.io/managed-by": "verl-workbook"},
    }


def test_apply_without_kubectl_says_so_with_exit_3(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LaunchError, match="kubectl is not on PATH") as err:
        kubectl.apply({"metadata": {"name": "x"}})
    assert err.value.exit_code == 3


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_apply_without_a_reachable_cluster_says_so_with_exit_3(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "nowhere",
            "clusters": [{"name": "nowhere", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
            "contexts": [{"name": "nowhere", "context": {"cluster": "nowhere", "user": "u"}}],
            "users": [{"name": "u", "user": {}}],
        }
        (tmp_path / "kubeconfig").write_text(json.dumps(config))
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
        # the real kubectl's refusals, every retry of them, without the real 2+4+8+16 s waits
        monkeypatch.setattr(kubectl, "BACKOFF_S", 0.0)
        with pytest.raises(LaunchError, match="no usable Kubernetes cluster with KubeRay") as err:
            kubectl.apply({"metadata": {"name": "x", "namespace": "default"}})
    assert err.value.exit_code == 3
    assert f"({kubectl.RETRIES} attempts)" in err.value.message  # a refused connection passes
    assert os.environ["KUBECONFIG"] == str(tmp_path / "kubeconfig")


# ---------------------------------------------------------------- paths inside the pods

POD_HOME = "/home/pod-user"


def _pod_manifest(capsys: pytest.CaptureFixture[str], *sets: str) -> dict:
    parser = argparse.ArgumentParser()
    rayjob_cli.register(parser.add_subparsers())
    args = parser.parse_args(["rayjob", str(NPU_SCENARIO), *[f"--set={s}" for s in sets]])
    assert args.handler(args) == 0
    return load_yaml_text(capsys.readouterr().out)


def test_manifest_paths_are_the_pods_home_not_the_submitting_machines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    submitter_home = tmp_path / "submitter-home"
    monkeypatch.setenv("HOME", str(submitter_home))
    monkeypatch.delenv("WORKBOOK_ASSETS", raising=False)
    manifest = _pod_manifest(capsys, "env.HF_HOME=${HOME}/.cache/huggingface")
    assert str(submitter_home) not in kuberay_manifest.manifest_yaml(manifest)
    spec = manifest["spec"]
    assert 'actor_rollout_ref.model.path="${HOME}"/.cache/models/Qwen/Qwen3-0.6B' in (
        spec["entrypoint"].split()
    )
    assert 'skip.rollout_tq.dump_dir="${HOME}"/data/rollout_dump_sync' in spec["entrypoint"]
    env = load_yaml_text(spec["runtimeEnvYAML"])["env_vars"]
    assert env["HF_HOME"] == "${HOME}/.cache/huggingface"


def test_file_logger_writes_straight_into_the_pods_tmp(capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _pod_manifest(capsys)
    path = load_yaml_text(manifest["spec"]["runtimeEnvYAML"])["env_vars"]["VERL_FILE_LOGGER_PATH"]
    # verl opens the file without creating its folder, in whichever pod runs the trainer
    assert path == f"/tmp/{manifest['metadata']['name']}.metrics.jsonl"
    assert str(Path(path).parent) == "/tmp"


def test_ray_expands_home_in_runtime_env_values_where_the_process_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    utils = pytest.importorskip("ray._private.utils")
    monkeypatch.setenv("HOME", POD_HOME)
    monkeypatch.setenv("HF_HOME", "unset")  # restored after the test
    utils.update_envs({"HF_HOME": "${HOME}/.cache/huggingface"})
    assert os.environ["HF_HOME"] == f"{POD_HOME}/.cache/huggingface"


def _words_verl_gets(command: str, home: str) -> list[str]:
    """What ``python3`` receives when a POSIX shell with ``HOME=home`` runs ``command``."""
    stub = "python3() { printf '%s\\n' \"$@\"; }; "
    done = subprocess.run(["sh", "-c", stub + command], capture_output=True, text=True,
                          env={"HOME": home, "PATH": os.environ["PATH"]}, check=True)
    return done.stdout.splitlines()


def _through_k8s_job_submitter(entrypoint: str, home: str) -> str:
    """The head's command after KubeRay's submitter: ``bash -c '... ray job submit -- E ;'``,
    whose CLI joins the words it got with ``subprocess.list2cmdline``."""
    ray = ('ray() { "$PY" -c \'import subprocess, sys; a = sys.argv[1:]; '
           'print(subprocess.list2cmdline(a[a.index("--") + 1:]))\' "$@"; }; ')
    script = ray + f"ray job submit --address http://head:8265 --no-wait -- {entrypoint} ;"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True,
                          env={"HOME": home, "PATH": os.environ["PATH"], "PY": sys.executable})
    return done.stdout.strip()


@pytest.mark.parametrize("mode", ["HTTPMode", "K8sJobMode"])
def test_verl_gets_the_exact_words_with_the_pods_home(mode: str) -> None:
    scenario = load_scenario(NPU_SCENARIO, check_files=False, variables={"HOME": "${HOME}"})
    plan = kuberay_pods.pod_plan(scenario, "20260101T000000Z-abcdef")
    command = kuberay_manifest.entrypoint(plan.argv)
    if mode == "K8sJobMode":
        command = _through_k8s_job_submitter(command, POD_HOME)
    expected = [a.replace("${HOME}", POD_HOME) for a in plan.argv[1:]]
    assert _words_verl_gets(command, POD_HOME) == expected
    assert f"actor_rollout_ref.model.path={POD_HOME}/.cache/models/Qwen/Qwen3-0.6B" in expected


@pytest.mark.parametrize(
    ("arg", "quoted"),
    [
        ("a=b", "a=b"),
        ("${HOME}", '"${HOME}"'),
        ("x=${HOME}/a b", "x=\"${HOME}\"'/a b'"),
        ("x=${HOME}:${HOME}/y", 'x="${HOME}":"${HOME}"/y'),
        ("", "''"),
    ],
)
def test_shell_word_quotes_everything_but_home(arg: str, quoted: str) -> None:
    assert kuberay_manifest.shell_word(arg) == quoted
    assert _words_verl_gets(f"python3 {quoted}", POD_HOME) == [arg.replace("${HOME}", POD_HOME)]


def test_tilde_paths_become_the_pods_home_too(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    text = NPU_SCENARIO.read_text().replace("${HOME}/.cache", "~/.cache")
    scenario.write_text(text.replace("defaults: [base/", f"defaults: [{NPU_SCENARIO.parent}/base/"))
    loaded = load_scenario(scenario, check_files=False, variables={"HOME": "${HOME}"})
    assert loaded.model_path == "${HOME}/.cache/models/Qwen/Qwen3-0.6B"
    assert load_scenario(scenario, check_files=False).model_path == str(
        Path.home() / ".cache/models/Qwen/Qwen3-0.6B"
    )


# ---------------------------------------------------------------- --apply, with a fake kubectl

VERL_LOG = ROOT / "tests" / "data" / "verl_logs" / "02_ppo-2node-ansi-resume-from-ckpt.log"
FAKE_KUBECTL = '''#!{python}
"""kubectl as far as `workbook rayjob --apply` uses it: RayJobs by name, Running once, then final.

FAKE_KUBE_CRD=missing: no ray.io API. FAKE_KUBE_VERSION: what `version --client` says. FAKE_KUBE_DENY: "verb resource" pairs `auth can-i` denies
(comma-separated). FAKE_KUBE_FLAKY=N: the first N `get rayjob` calls fail as an unreachable API
server does. FAKE_KUBE_JOB: the Ray job's final status (RUNNING: it never ends).
"""
import json, os, sys

state = os.environ["FAKE_KUBE_DIR"]
args = sys.argv[1:]
with open(os.path.join(state, "calls.jsonl"), "a") as calls:
    calls.write(json.dumps(args) + "\\n")
words = [a for a in args if not a.startswith("--request-timeout")]


def fail(message, code=1):
    sys.stderr.write(message + "\\n")
    sys.exit(code)


def log():
    if not os.environ.get("FAKE_KUBE_LOG"):
        fail("Error from server (NotFound): pods not found")
    with open(os.environ["FAKE_KUBE_LOG"], encoding="utf-8") as source:
        sys.stdout.write(source.read())


def count(name):
    path = os.path.join(state, name)
    n = int(open(path).read()) if os.path.exists(path) else 0
    with open(path, "w") as out:
        out.write(str(n + 1))
    return n


def created(name):
    return os.path.join(state, "created-" + name + ".json")


if words[:2] == ["version", "--client"]:
    if not os.environ.get("FAKE_KUBE_VERSION"):
        fail("fake kubectl: no version")
    print(json.dumps({{"clientVersion": {{"gitVersion": os.environ["FAKE_KUBE_VERSION"]}}}}))
elif words[:1] == ["api-resources"]:
    if os.environ.get("FAKE_KUBE_CRD") != "missing":
        print("rayclusters.ray.io\\nrayjobs.ray.io\\nrayservices.ray.io")
elif words[:2] == ["auth", "can-i"]:
    denied = [d.strip() for d in os.environ.get("FAKE_KUBE_DENY", "").split(",") if d.strip()]
    if " ".join(words[2:4]) in denied:
        print("no")
        sys.exit(1)
    print("yes")
elif words[:1] == ["create"]:
    manifest = json.load(sys.stdin)
    name = manifest["metadata"]["name"]
    if os.path.exists(created(name)):
        fail('Error from server (AlreadyExists): error when creating "STDIN": rayjobs.ray.io '
             '"%s" already exists' % name)
    for path in (created(name), os.path.join(state, "applied.json")):
        with open(path, "w") as out:
            json.dump(manifest, out)
    print("rayjob.ray.io/%s created" % name)
elif words[:2] == ["get", "rayjob"]:
    if count("gets") < int(os.environ.get("FAKE_KUBE_FLAKY") or 0):
        fail("Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout")
    name = words[2]
    if not os.path.exists(created(name)):
        fail('Error from server (NotFound): rayjobs.ray.io "%s" not found' % name)
    first = count("polls-" + name) == 0
    job = os.environ["FAKE_KUBE_JOB"]
    status = {{"jobId": "raysubmit-" + name, "rayClusterName": "c1"}}
    if first or job == "RUNNING":
        status.update(jobStatus="RUNNING", jobDeploymentStatus="Running")
    elif job == "SUCCEEDED":
        status.update(jobStatus=job, jobDeploymentStatus="Complete")
    else:
        status.update(jobStatus=job, jobDeploymentStatus="Failed", reason="AppFailed",
                      message="Job entrypoint command failed with exit code 1")
    print(json.dumps({{"status": status}}))
elif words[:2] in (["delete", "rayjob"], ["patch", "rayjob"]):
    with open(os.path.join(state, "stopped.jsonl"), "a") as out:
        out.write(json.dumps(words) + "\\n")
    print("rayjob.ray.io/%s %s" % (words[2], "deleted" if words[0] == "delete" else "patched"))
elif words[:2] == ["get", "pods"]:
    print(json.dumps({{"items": [{{"metadata": {{"name": "c1-head-x"}}}}]}}))
elif words[:1] == ["exec"]:
    if os.environ.get("FAKE_KUBE_EXEC") != "ok":
        fail('Error from server (Forbidden): pods "c1-head-x" is forbidden: pods/exec')
    log()
elif words[:1] == ["logs"]:
    log()
else:
    fail("fake kubectl: unexpected " + " ".join(args))
'''


@pytest.fixture()
def fake_kubectl(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A ``kubectl`` first on PATH; its state (calls, the applied manifest) in the result."""
    bin_dir, state = tmp_path / "bin", tmp_path / "kube"
    bin_dir.mkdir()
    state.mkdir()
    script = bin_dir / "kubectl"
    script.write_text(FAKE_KUBECTL.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_KUBE_DIR", str(state))
    monkeypatch.setattr(kubectl, "POLL_S", 0.0)
    monkeypatch.setattr(kubectl, "BACKOFF_S", 0.0)
    return state


def _nan_log(tmp_path: Path) -> Path:
    text = VERL_LOG.read_text(encoding="utf-8")
    assert "actor/pg_loss:0.037" in text  # step 104
    path = tmp_path / "nan.log"
    path.write_text(text.replace("actor/pg_loss:0.037", "actor/pg_loss:nan"), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("job", "log", "exec_ok", "exit_code", "verdict"),
    [
        ("SUCCEEDED", "verl", True, 0, "passed"),
        ("SUCCEEDED", "verl", False, 0, "passed"),  # no pods/exec: the submitter Job's log
        ("SUCCEEDED", "nan", True, 1, "regressed"),
        ("FAILED", "verl", True, 3, "failed"),
        ("SUCCEEDED", None, False, 3, "failed"),  # no log at all
    ],
    ids=["passed-head-log", "passed-submitter-log", "regressed", "job-failed", "no-log"],
)
def test_apply_exits_with_the_verdict_of_the_fetched_log(
    fake_kubectl: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    job: str,
    log: str | None,
    exec_ok: bool,
    exit_code: int,
    verdict: str,
) -> None:
    source = {"verl": VERL_LOG, "nan": _nan_log(tmp_path), None: None}[log]
    monkeypatch.setenv("FAKE_KUBE_JOB", job)
    monkeypatch.setenv("FAKE_KUBE_LOG", str(source or ""))
    monkeypatch.setenv("FAKE_KUBE_EXEC", "ok" if exec_ok else "forbidden")
    runs = tmp_path / "runs"

    code, rd = run_on_kuberay(runs)

    run_dir = rd.path
    assert code == exit_code
    assert run_dir.parent.parent == runs.resolve() and run_dir.is_dir()
    assert rd.read_json("checks")["verdict"]["status"] == verdict
    assert rd.file("report").is_file()
    run_log = rd.file("log").read_text(encoding="utf-8")
    if source:
        assert run_log == source.read_text(encoding="utf-8")
    else:
        assert run_log.startswith("workbook: no log of RayJob default/")
    applied = json.loads((fake_kubectl / "applied.json").read_text())
    name = applied["metadata"]["name"]
    assert name.endswith(run_dir.name[-6:])
    command = rd.read_json("command_json")  # what the pods ran
    assert command["env"]["VERL_FILE_LOGGER_PATH"] == f"/tmp/{name}.metrics.jsonl"
    assert '"${HOME}"' in applied["spec"]["entrypoint"]
    validate(applied)
    calls = [json.loads(line) for line in (fake_kubectl / "calls.jsonl").read_text().splitlines()]
    fetched = [c[0] for c in calls if c[0] in ("exec", "logs")]
    assert fetched == (["exec"] if exec_ok else ["exec", "logs"])
    info = rd.read_json("run")
    assert info["launcher"] == "kuberay" and info["status"] == (
        "succeeded" if job == "SUCCEEDED" and source else "failed"
    )
    assert "conditions" not in info  # the pods ran it: this machine's load is not the run's


def test_apply_without_kuberay_leaves_a_failed_run_with_its_reason(
    fake_kubectl: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("FAKE_KUBE_CRD", "missing")
    code, rd = run_on_kuberay(tmp_path / "runs")
    assert code == 3
    assert "no usable Kubernetes cluster with KubeRay" in rd.read_json("run")["message"]
    assert "rayjobs.ray.io" in rd.file("log").read_text(encoding="utf-8")
    assert rd.read_json("checks")["verdict"]["status"] == "failed"
    assert not (fake_kubectl / "applied.json").exists()
