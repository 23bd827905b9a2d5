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
from pathlib import Path

import jsonschema
import pytest

from workbook.cli import rayjob as rayjob_cli
from workbook.command import build_plan
from workbook.errors import InputError, LaunchError
from workbook.launch import kuberay
from workbook.launch.outcome import Plan
from workbook.params import load_scenario
from workbook.serialization import load_yaml_text

ROOT = Path(__file__).resolve().parents[2]
NPU_SCENARIO = ROOT / "params" / "ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob.yaml"
SCHEMA = json.loads((Path(__file__).parent / "data" / "rayjob.schema.json").read_text())


def validate(manifest: dict) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(manifest)


@pytest.fixture(scope="module")
def npu_plan_and_manifest() -> tuple:
    scenario = load_scenario(NPU_SCENARIO, check_files=False)
    plan = build_plan(scenario, Path("/tmp/verl-workbook/runs/x/run"), on_existing_cluster=True)
    manifest = kuberay.rayjob_manifest(
        plan,
        name=scenario.name,
        nodes=scenario.nodes,
        devices_per_node=scenario.devices_per_node,
        device=scenario.profile,
        settings=scenario.kuberay.model_dump(),
        timeout_s=scenario.timeout_s,
    )
    return scenario, plan, manifest


def test_npu_manifest_validates_against_the_rayjob_schema(npu_plan_and_manifest: tuple) -> None:
    _, _, manifest = npu_plan_and_manifest
    validate(manifest)
    # and survives a YAML round trip unchanged (what `workbook rayjob > rayjob.yaml` writes)
    assert load_yaml_text(kuberay.manifest_yaml(manifest)) == manifest


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
    assert load_yaml_text(spec["runtimeEnvYAML"]) == {"env_vars": plan.env}
    assert spec["activeDeadlineSeconds"] == 3600
    assert spec["shutdownAfterJobFinishes"] is True and spec["ttlSecondsAfterFinished"] == 600
    assert spec["submissionMode"] == "K8sJobMode"


def test_every_pod_gets_shared_memory_in_ram(npu_plan_and_manifest: tuple) -> None:
    _, _, manifest = npu_plan_and_manifest
    cluster = manifest["spec"]["rayClusterSpec"]
    for group in [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]:
        spec = group["template"]["spec"]
        assert spec["volumes"] == [
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "128Gi"}}
        ]
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
    manifest = kuberay.rayjob_manifest(
        plan, name="My_Run.v2", nodes=3, devices_per_node=8, device=device, timeout_s=None
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
        kuberay.rayjob_manifest(
            plan, name="x", nodes=1, devices_per_node=1, device="npu", settings={"imag": "x"}
        )
    with pytest.raises(InputError, match="submission_mode"):
        kuberay.rayjob_manifest(
            plan,
            name="x",
            nodes=1,
            devices_per_node=1,
            device="npu",
            settings={"submission_mode": "Bogus"},
        )
    manifest = kuberay.rayjob_manifest(
        plan,
        name="x",
        nodes=1,
        devices_per_node=1,
        device="npu",
        settings={
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
    for key in kuberay.DEFAULTS:
        assert key in (kuberay.__doc__ or ""), f"default of {key} is not documented"


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
    assert manifest["metadata"] == {
        "name": "ppo-2n",
        "namespace": "rl",
        "labels": {"app.kubernetes.io/managed-by": "verl-workbook"},
    }


def test_apply_without_kubectl_says_so_with_exit_3(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LaunchError, match="kubectl is not on PATH") as err:
        kuberay.apply({"metadata": {"name": "x"}})
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
        with pytest.raises(LaunchError, match="no usable Kubernetes cluster with KubeRay") as err:
            kuberay.apply({"metadata": {"name": "x", "namespace": "default"}})
    assert err.value.exit_code == 3
    assert os.environ["KUBECONFIG"] == str(tmp_path / "kubeconfig")
