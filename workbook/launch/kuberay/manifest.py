"""A KubeRay ``RayJob`` manifest for a plan (pure: nothing here talks to a cluster).

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

The command runs in the pods, so its paths are the pods': the scenario is loaded with ``HOME``
mapped to ``${HOME}``, and :func:`entrypoint` quotes every word but lets the first shell that
reads it expand ``${HOME}`` (K8sJobMode and SidecarMode paste the entrypoint into the
submitter's ``bash -c``, which runs the head's image; HTTPMode hands it to the head's
``/bin/sh``). Runtime-env values may say ``${HOME}`` too: Ray expands ``${VAR}`` in ``env_vars``
in every process it starts (K8sJobMode's submitter shell already has). verl opens the file
logger's JSONL without creating its folder, in whichever pod runs the trainer, so that file goes
straight into /tmp; the verdict comes from the job's log
(:func:`workbook.launch.kuberay.kubectl.job_log`).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from workbook.errors import InputError
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
# Env the job must not carry into the cluster: secrets and this machine's addresses.
PRIVATE_ENV = frozenset({"RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"})
POD_HOME = "${HOME}"  # expanded in the pods, never here
POD_TMP = PurePosixPath("/tmp")  # a folder every pod has
FILE_LOGGER = "VERL_FILE_LOGGER_PATH"


def default_image() -> str:
    """``rayproject/ray:<version>`` of the Ray installed here (verl itself must be on the image)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"rayproject/ray:{version('ray')}"
    except PackageNotFoundError:
        return "rayproject/ray:latest"


def shell_word(arg: str) -> str:
    """``arg`` quoted for a POSIX shell, except ``${HOME}``, which that shell expands.

    Example:
        >>> print(shell_word("model.path=${HOME}/Qwen 3"))
        model.path="${HOME}"'/Qwen 3'
    """
    if POD_HOME not in arg:
        return shlex.quote(arg)
    return f'"{POD_HOME}"'.join(shlex.quote(part) if part else "" for part in arg.split(POD_HOME))


def entrypoint(argv: Sequence[str]) -> str:
    """The job's shell command: ``argv`` word for word, ``${HOME}`` the pod's."""
    return " ".join(shell_word(arg) for arg in argv)


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


def _settings(
    device: str, nodes: int, devices_per_node: int, settings: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The ``kuberay:`` settings over :data:`DEFAULTS`; InputError for what cannot be built."""
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
    return cfg


def _worker_start_params(device: str, devices_per_node: int) -> dict[str, str]:
    """``ray start`` parameters of a worker pod: how Ray counts its devices."""
    if device == "npu":
        # Ray does not see Ascend devices as GPUs; verl counts the "NPU" resource.
        # The value is pasted into a shell command by KubeRay, hence the quotes.
        return {"resources": "'" + json.dumps({"NPU": devices_per_node}) + "'"}
    # cuda: real GPUs; cpu: logical GPUs only Ray sees (see the cpu profile)
    return {"num-gpus": str(devices_per_node)}


def _runtime_env(plan: Plan, name: str) -> dict[str, str]:
    """The plan's env as the pods get it: no private values, the file logger's JSONL in /tmp."""
    env = {k: str(v) for k, v in plan.env.items() if k not in PRIVATE_ENV}
    if FILE_LOGGER in env:  # a file straight in /tmp: verl does not create its folder
        env[FILE_LOGGER] = str(POD_TMP / f"{k8s_name(name)}.metrics.jsonl")
    return env


def _cluster_spec(
    cfg: Mapping[str, Any], *, nodes: int, devices_per_node: int, device: str
) -> dict[str, Any]:
    """The ``rayClusterSpec``: a CPU-only head and one group of ``nodes`` worker pods."""
    pod = {
        "image": cfg["image"] or default_image(),
        "shared_memory": cfg["shared_memory"],
        "service_account": cfg["service_account"],
    }
    return {
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
                "rayStartParams": _worker_start_params(device, devices_per_node),
                "template": _pod(
                    "worker",
                    cpu=cfg["cpu"],
                    memory=cfg["memory"],
                    device_resource=DEVICE_RESOURCES[device],
                    devices=devices_per_node,
                    **pod,
                ),
            }
        ],
    }


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
    cfg = _settings(device, nodes, devices_per_node, settings)
    cluster = _cluster_spec(cfg, nodes=nodes, devices_per_node=devices_per_node, device=device)
    spec: dict[str, Any] = {
        "entrypoint": entrypoint(plan.argv),
        "runtimeEnvYAML": dump_yaml({"env_vars": _runtime_env(plan, name)}),
        "submissionMode": cfg["submission_mode"],
        "shutdownAfterJobFinishes": bool(cfg["shutdown_after_job_finishes"]),
        "backoffLimit": 0,
        "rayClusterSpec": cluster,
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
