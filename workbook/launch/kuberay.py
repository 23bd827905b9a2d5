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

The command runs in the pods, so its paths are the pods': the scenario is loaded with ``HOME``
mapped to ``${HOME}``, and :func:`entrypoint` quotes every word but lets the first shell that
reads it expand ``${HOME}`` (K8sJobMode and SidecarMode paste the entrypoint into the
submitter's ``bash -c``, which runs the head's image; HTTPMode hands it to the head's
``/bin/sh``). Runtime-env values may say ``${HOME}`` too: Ray expands ``${VAR}`` in ``env_vars``
in every process it starts (K8sJobMode's submitter shell already has). verl opens the file
logger's JSONL without creating its folder, in whichever pod runs the trainer, so that file goes
straight into /tmp; the verdict comes from the job's log (:func:`job_log`).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from workbook.errors import InputError, LaunchError
from workbook.launch.outcome import Plan
from workbook.launch.ray_client import TERMINAL_STATUSES
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
FINAL_JOB = TERMINAL_STATUSES  # a RayJob's jobStatus is its Ray job's status
# Env the job must not carry into the cluster: secrets and this machine's addresses.
PRIVATE_ENV = frozenset({"RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"})
POD_HOME = "${HOME}"  # expanded in the pods, never here
POD_TMP = PurePosixPath("/tmp")  # a folder every pod has
FILE_LOGGER = "VERL_FILE_LOGGER_PATH"
HEAD_CONTAINER = "ray-head"
DASHBOARD = "http://127.0.0.1:8265"  # the head's own dashboard, seen from inside the head pod
POLL_S = 5.0
LOG_TIMEOUT_S = 300.0


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
    if FILE_LOGGER in env:  # a file straight in /tmp: verl does not create its folder
        env[FILE_LOGGER] = str(POD_TMP / f"{k8s_name(name)}.metrics.jsonl")
    spec: dict[str, Any] = {
        "entrypoint": entrypoint(plan.argv),
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
    poll_s: float | None = None,
    on_status: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Submit the RayJob with kubectl and (``follow``) wait for a final state; return the status.

    The status carries ``jobStatus`` (Ray's: SUCCEEDED, FAILED, STOPPED ...) and
    ``jobDeploymentStatus`` (KubeRay's: Initializing, Running, Complete, Failed ...), plus
    ``jobId`` and ``rayClusterName`` (what :func:`job_log` needs); :func:`job_outcome` reads it.
    ``on_status`` sees each change.
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
        time.sleep(POLL_S if poll_s is None else poll_s)


def job_outcome(status: Mapping[str, Any]) -> tuple[str, int | None, str]:
    """``(status, exit code, message)`` of a final RayJob status, in the launchers' words.

    The entrypoint's exit code is known when Ray says the job succeeded (0) or names it in its
    message ("Job entrypoint command failed with exit code 1").
    """
    job, deployment = status.get("jobStatus"), status.get("jobDeploymentStatus")
    said = str(status.get("message") or "").strip()
    if job == "SUCCEEDED":
        return "succeeded", 0, said or "the Ray job succeeded"
    if job == "STOPPED":
        return "stopped", None, said or "the Ray job was stopped"
    if status.get("reason") == "DeadlineExceeded":
        return "timeout", None, said or "the RayJob ran past activeDeadlineSeconds"
    code = re.search(r"exit code (-?\d+)", said)
    return "failed", int(code.group(1)) if code else None, said or (
        f"RayJob {deployment or 'unknown'}, Ray job {job or 'not started'}")


def job_log(name: str, namespace: str, status: Mapping[str, Any], *, mode: str) -> tuple[str, str]:
    """The job's log and where it came from; LaunchError when no source gives one.

    First the driver log the head keeps (``ray job logs`` in the head pod: the whole log, while
    the cluster is up), then, in K8sJobMode, the submitter Job's log (the same lines as its
    ``ray job logs --follow`` saw; that stream can end early when its connection drops).
    """
    tried: list[str] = []
    cluster, job_id = status.get("rayClusterName"), status.get("jobId")
    if cluster and job_id:
        try:
            head = _head_pod(str(cluster), namespace)
            command = ["ray", "job", "logs", "--address", DASHBOARD, str(job_id)]
            text = _kubectl(["exec", "-n", namespace, head, "-c", HEAD_CONTAINER, "--", *command],
                            timeout_s=LOG_TIMEOUT_S)
            return text, f"ray job logs {job_id} in pod {head}"
        except LaunchError as exc:
            tried.append(exc.message)
    else:
        tried.append("the RayJob's status names no Ray cluster or job id")
    if mode == "K8sJobMode":
        try:
            return _kubectl(["logs", f"job/{name}", "-n", namespace], timeout_s=LOG_TIMEOUT_S), (
                f"kubectl logs job/{name}")
        except LaunchError as exc:
            tried.append(exc.message)
    raise LaunchError(f"no log of RayJob {namespace}/{name} could be fetched: {'; '.join(tried)}")


def _head_pod(cluster: str, namespace: str) -> str:
    selector = f"ray.io/cluster={cluster},ray.io/node-type=head"
    pods = json.loads(_kubectl(["get", "pods", "-n", namespace, "-l", selector, "-o", "json"]))
    names = [item["metadata"]["name"] for item in pods.get("items") or []]
    if not names:
        raise LaunchError(f"no head pod of Ray cluster {cluster} (it was torn down)")
    return str(names[0])
