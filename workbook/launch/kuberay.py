"""A KubeRay ``RayJob`` manifest for a plan, and ``kubectl`` to submit it and follow it.

The manifest makes KubeRay create a Ray cluster for one run (a CPU-only head that hosts the
driver, and ``nodes`` worker pods with ``devices_per_node`` accelerators each), submit the exact
command of the plan as the job entrypoint with the plan's env as runtime env, and tear the
cluster down after the job. ``settings`` is the scenario's ``kuberay:`` section; defaults:

    image                         None -> rayproject/ray:<this Ray version> (set your verl image!)
    namespace                     "default"
    cpu / memory                  8 / "32Gi"      requests = limits of each worker pod
    shared_memory                 "16Gi"          emptyDir (medium Memory) at /dev/shm, every pod
    head_cpu / head_memory        4 / "16Gi"
    submission_mode               "K8sJobMode"    (HTTPMode, InteractiveMode, SidecarMode)
    shutdown_after_job_finishes   True
    ttl_seconds_after_finished    600             (only meaningful with shutdown)
    service_account               None            serviceAccountName of every pod

Devices are requested as ``huawei.com/ascend-1980`` (npu) or ``nvidia.com/gpu`` (cuda) and
declared to Ray as the ``NPU`` custom resource / GPUs, which is what verl counts.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from typing import Any

from workbook.errors import InputError, LaunchError
from workbook.launch.outcome import Plan
from workbook.serialization import dump_yaml

DEVICE_RESOURCES = {"npu": "huawei.com/ascend-1980", "cuda": "nvidia.com/gpu", "cpu": None}
DEFAULTS: dict[str, Any] = {
    "image": None,
    "namespace": "default",
    "cpu": 8,
    "memory": "32Gi",
    "shared_memory": "16Gi",
    "head_cpu": 4,
    "head_memory": "16Gi",
    "submission_mode": "K8sJobMode",
    "shutdown_after_job_finishes": True,
    "ttl_seconds_after_finished": 600,
    "service_account": None,
}
SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
FINAL_DEPLOYMENT = frozenset({"Complete", "Failed", "ValidationFailed"})
FINAL_JOB = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
# Env the job must not carry into the cluster: secrets and this machine's addresses.
PRIVATE_ENV = frozenset({"RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"})


def default_image() -> str:
    """``rayproject/ray:<version>`` of the Ray installed here (verl itself must be on the image)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"rayproject/ray:{version('ray')}"
    except PackageNotFoundError:
        return "rayproject/ray:latest"


def k8s_name(text: str) -> str:
    """A DNS-1123 name (lowercase alphanumerics and '-', at most 63 characters)."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:63].strip("-")
    if not name:
        raise InputError(f"cannot make a Kubernetes name from {text!r}")
    return name


def _pod(
    role: str,
    *,
    image: str,
    cpu: Any,
    memory: str,
    shared_memory: str,
    device_resource: str | None,
    devices: int,
    service_account: str | None,
) -> dict[str, Any]:
    """A pod template: one Ray container with requests = limits and /dev/shm in memory."""
    resources = {"cpu": str(cpu), "memory": str(memory)}
    if device_resource and devices:
        resources[device_resource] = str(devices)
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": f"ray-{role}",
                "image": image,
                "resources": {"requests": dict(resources), "limits": dict(resources)},
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
            }
        ],
        # Ray's object store and PyTorch's dataloader/NCCL/HCCL live in /dev/shm; a
        # container's default 64 MiB is far too small for RL training.
        "volumes": [
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": str(shared_memory)}}
        ],
    }
    if service_account:
        spec["serviceAccountName"] = service_account
    return {"spec": spec}


def rayjob_manifest(
    plan: Plan,
    *,
    name: str,
    nodes: int,
    devices_per_node: int,
    device: str,
    settings: Mapping[str, Any] | None = None,
    timeout_s: float | None = None,
) -> dict[str, Any]:
    """The ``ray.io/v1`` RayJob that runs ``plan`` on ``nodes`` worker pods (pure).

    Example:
        >>> m = rayjob_manifest(Plan(["python3", "-m", "verl.trainer.main_ppo"], {"A": "1"}),
        ...                     name="ppo", nodes=2, devices_per_node=8, device="npu")
        >>> m["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"]
        2
    """
    if device not in DEVICE_RESOURCES:
        raise InputError(f"unknown device {device!r}; choose one of {sorted(DEVICE_RESOURCES)}")
    if nodes < 1 or devices_per_node < 0:
        raise InputError("a RayJob needs nodes >= 1 and devices_per_node >= 0")
    unknown = sorted(set(settings or {}) - set(DEFAULTS))
    if unknown:
        raise InputError(
            f"unknown kuberay setting(s): {', '.join(unknown)}; known: {', '.join(DEFAULTS)}"
        )
    cfg = {**DEFAULTS, **{k: v for k, v in (settings or {}).items() if v is not None}}
    if cfg["submission_mode"] not in SUBMISSION_MODES:
        raise InputError(f"kuberay.submission_mode must be one of {SUBMISSION_MODES}")
    image = cfg["image"] or default_image()
    device_resource = DEVICE_RESOURCES[device]
    pod = {
        "image": image,
        "shared_memory": cfg["shared_memory"],
        "service_account": cfg["service_account"],
    }
    worker_params: dict[str, str] = {}
    if device == "npu":
        # Ray does not see Ascend devices as GPUs; verl counts the "NPU" resource.
        # The value is pasted into a shell command by KubeRay, hence the quotes.
        worker_params["resources"] = "'" + json.dumps({"NPU": devices_per_node}) + "'"
    elif device == "cuda":
        worker_params["num-gpus"] = str(devices_per_node)
    else:  # cpu: logical GPUs only Ray sees (see the cpu profile)
        worker_params["num-gpus"] = str(devices_per_node)
    env = {k: str(v) for k, v in plan.env.items() if k not in PRIVATE_ENV}
    spec: dict[str, Any] = {
        "entrypoint": shlex.join(plan.argv),
        "runtimeEnvYAML": dump_yaml({"env_vars": env}),
        "submissionMode": cfg["submission_mode"],
        "shutdownAfterJobFinishes": bool(cfg["shutdown_after_job_finishes"]),
        "backoffLimit": 0,
        "rayClusterSpec": {
            "headGroupSpec": {
                "rayStartParams": {"dashboard-host": "0.0.0.0", "num-gpus": "0"},
                "template": _pod(
                    "head",
                    cpu=cfg["head_cpu"],
                    memory=cfg["head_memory"],
                    device_resource=None,
                    devices=0,
                    **pod,
                ),
            },
            "workerGroupSpecs": [
                {
                    "groupName": f"{device}-workers",
                    "replicas": nodes,
                    "minReplicas": nodes,
                    "maxReplicas": nodes,
                    "rayStartParams": worker_params,
                    "template": _pod(
                        "worker",
                        cpu=cfg["cpu"],
                        memory=cfg["memory"],
                        device_resource=device_resource,
                        devices=devices_per_node,
                        **pod,
                    ),
                }
            ],
        },
    }
    if spec["shutdownAfterJobFinishes"]:
        spec["ttlSecondsAfterFinished"] = int(cfg["ttl_seconds_after_finished"])
    if timeout_s:
        spec["activeDeadlineSeconds"] = max(1, int(timeout_s))
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": k8s_name(name),
            "namespace": cfg["namespace"],
            "labels": {"app.kubernetes.io/managed-by": "verl-workbook"},
        },
        "spec": spec,
    }


def manifest_yaml(manifest: Mapping[str, Any]) -> str:
    return dump_yaml(dict(manifest))


# ---------------------------------------------------------------- kubectl


def _kubectl(args: list[str], *, stdin: str | None = None, timeout_s: float = 30.0) -> str:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise LaunchError(
            "kubectl is not on PATH: cannot submit the RayJob (write it with `workbook rayjob` and apply it elsewhere)"
        )
    try:
        done = subprocess.run(
            [kubectl, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(
            f"`kubectl {' '.join(args[:3])}` did not answer within {timeout_s:g} s"
        ) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        last = lines[-1] if lines else f"exit {done.returncode}"
        raise LaunchError(f"`kubectl {' '.join(args[:3])}` failed: {last}")
    return done.stdout


def check_cluster(namespace: str) -> None:
    """LaunchError unless a Kubernetes cluster answers and has KubeRay's RayJob CRD."""
    try:
        _kubectl(
            ["--request-timeout=10s", "get", "crd", "rayjobs.ray.io", "-o", "name"], timeout_s=20.0
        )
    except LaunchError as exc:
        raise LaunchError(f"no usable Kubernetes cluster with KubeRay: {exc.message}") from None


def rayjob_status(name: str, namespace: str) -> dict[str, Any]:
    text = _kubectl(["--request-timeout=20s", "get", "rayjob", name, "-n", namespace, "-o", "json"])
    status = json.loads(text).get("status") or {}
    return status if isinstance(status, dict) else {}


def is_final(status: Mapping[str, Any]) -> bool:
    return status.get("jobDeploymentStatus") in FINAL_DEPLOYMENT or (
        status.get("jobStatus") in FINAL_JOB and status.get("jobDeploymentStatus") != "Running"
    )


def apply(
    manifest: Mapping[str, Any],
    *,
    follow: bool = True,
    poll_s: float = 5.0,
    on_status: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Submit the RayJob with kubectl and (``follow``) wait for a final state; return the status.

    The status carries ``jobStatus`` (Ray's: SUCCEEDED, FAILED, STOPPED ...) and
    ``jobDeploymentStatus`` (KubeRay's: Initializing, Running, Complete, Failed ...); the
    caller maps SUCCEEDED to exit 0. ``on_status`` sees each change.
    """
    name = manifest["metadata"]["name"]
    namespace = manifest["metadata"].get("namespace", "default")
    check_cluster(namespace)
    _kubectl(["apply", "-f", "-"], stdin=json.dumps(manifest))
    last: dict[str, Any] = {}
    while True:
        status = rayjob_status(name, namespace)
        brief = {
            k: status.get(k) for k in ("jobStatus", "jobDeploymentStatus", "reason", "message")
        }
        if brief != {k: last.get(k) for k in brief} and on_status is not None:
            on_status(status)
        last = status
        if not follow or is_final(status):
            return status
        time.sleep(poll_s)
