"""A KubeRay ``RayJob`` manifest for a plan (pure: nothing here talks to a cluster).

The manifest makes KubeRay create a Ray cluster for one run (a CPU-only head that hosts the
driver, and ``nodes`` worker pods with ``devices_per_node`` accelerators each), submit the exact
command of the plan as the job entrypoint with the plan's env as runtime env, and clean up after
the job. ``settings`` is the scenario's ``kuberay:`` section; defaults:

    image                         required: the verl image (never a CPU image without verl)
    namespace                     "default"
    cpu / memory                  8 / "32Gi"      requests = limits of each worker pod
    shared_memory                 "16Gi"          emptyDir (medium Memory) at /dev/shm, every pod
    head_cpu / head_memory        4 / "16Gi"
    submission_mode               "K8sJobMode"    (HTTPMode, InteractiveMode, SidecarMode)
    shutdown_after_job_finishes   True            delete the Ray cluster when the job ends
    ttl_seconds_after_finished    600             (only meaningful with shutdown)
    deletion_rules                None            KubeRay's deletionStrategy.deletionRules
                                                  (needs shutdown_after_job_finishes: false)
    service_account               None            serviceAccountName of every pod
    device_resource               None -> per profile: npu "huawei.com/ascend-1980" (Huawei
                                  CCE's device plugin; MindCluster's advertises
                                  "huawei.com/Ascend910"), cuda "nvidia.com/gpu"
    pod                           {}              pod-template fields of every Ray pod
    worker_pod                    {}              ... of the worker pods only (added to pod's)
    submitter_pod                 {}              ... of K8sJobMode's submitter pod
    on_interrupt                  "delete"        what --apply does on Ctrl-C (or "suspend")
    apply_timeout_s               None -> timeout_s + 1800 s: how long --apply follows the job

Devices are requested as the device resource and declared to Ray as the ``NPU`` custom resource
/ GPUs, which is what verl counts. The pod-template sections are Kubernetes' own fields
(``volumes``, ``volumeMounts``, ``nodeSelector``, ``tolerations``, ``affinity``,
``imagePullSecrets``, ``imagePullPolicy``, ``env`` by ``valueFrom``, ``envFrom``,
``schedulerName``; typed in :mod:`workbook.params.pod_template`); the submitter pod gets the
head's image and the pods' ``imagePullSecrets`` too, so it can pull what the head pulls.

Secrets never go into the manifest: a runtime-env value that looks like one (by its name or its
shape) is refused with a pointer to ``kuberay.pod.env`` and a ``secretKeyRef``.

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

from workbook.command.plan import Plan
from workbook.core.serialization import dump_yaml
from workbook.errors import InputError
from workbook.params.schema import MAX_RAYJOB_NAME, RAYJOB_SUFFIX, rayjob_name_problem

DEVICE_RESOURCES = {"npu": "huawei.com/ascend-1980", "cuda": "nvidia.com/gpu", "cpu": None}
# The other Ascend device plugin's name (MindCluster's ascend-device-plugin), for the docs.
MINDCLUSTER_NPU = "huawei.com/Ascend910"
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
    "deletion_rules": None,
    "service_account": None,
    "device_resource": None,
    "pod": None,
    "worker_pod": None,
    "submitter_pod": None,
    "on_interrupt": "delete",
    "apply_timeout_s": None,
}
SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
# Env the job must not carry into the cluster: secrets and this machine's addresses.
PRIVATE_ENV = frozenset({"RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"})
POD_HOME = "${HOME}"  # expanded in the pods, never here
POD_TMP = PurePosixPath("/tmp")  # a folder every pod has
FILE_LOGGER = "VERL_FILE_LOGGER_PATH"
SUBMITTER_CONTAINER = "ray-job-submitter"  # KubeRay's own name for it
# KubeRay's default submitter resources (GetDefaultSubmitterContainer)
SUBMITTER_RESOURCES = {"requests": {"cpu": "500m", "memory": "200Mi"},
                       "limits": {"cpu": "1", "memory": "1Gi"}}
# Pod-template fields that go on the Ray container; the others go on the pod spec.
CONTAINER_FIELDS = ("volumeMounts", "env", "envFrom", "imagePullPolicy")


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
        raise InputError(f"cannot make a Kubernetes name from {text[:60]!r}")
    return name


def rayjob_name(prefix: str, suffix: str, *, exact: bool = False) -> str:
    """``<prefix>-<suffix>``, a name KubeRay accepts and no earlier run used.

    A scenario name is shortened and made DNS-1035 (a leading digit gets ``wb-``); a name the
    user gave (``exact``) is checked as it is and refused (InputError) when KubeRay would.
    """
    tail = f"-{suffix[-RAYJOB_SUFFIX:].lower()}"
    if exact:
        name = f"{prefix}{tail}"
        problem = rayjob_name_problem(name)
        if problem:
            raise InputError(f"kuberay.name (--name) {prefix[:60]!r}: the RayJob name {name[:70]!r} {problem} "
                             f"(the name gets '{tail}' so it is never reused: give at most "
                             f"{MAX_RAYJOB_NAME - len(tail)} characters)")
        return name
    base = k8s_name(prefix)
    if not base[0].isalpha():
        base = f"wb-{base}"
    base = base[: MAX_RAYJOB_NAME - len(tail)].rstrip("-")
    name = f"{base}{tail}"
    assert rayjob_name_problem(name) is None, name
    return name


def secret_env(env: Mapping[str, str]) -> list[str]:
    """Runtime-env names whose name or value looks like a credential."""
    from workbook.core.redaction.text import is_secret_name, redact_text

    return sorted(k for k, v in env.items() if is_secret_name(k) or redact_text(str(v)) != str(v))


def _merge_pod(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra``'s pod-template fields over ``base``'s: lists appended, maps merged."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, list):
            out[key] = [*out.get(key, []), *value]
        elif isinstance(value, dict) and key != "affinity":
            out[key] = {**out.get(key, {}), **value}
        else:
            out[key] = value
    return out


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
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """A pod template: one Ray container with requests = limits, /dev/shm in memory, and the
    scenario's pod-template fields (``extra``, in Kubernetes spelling)."""
    resources = {"cpu": str(cpu), "memory": str(memory)}
    if device_resource and devices:
        resources[device_resource] = str(devices)
    container: dict[str, Any] = {
        "name": f"ray-{role}",
        "image": image,
        "resources": {"requests": dict(resources), "limits": dict(resources)},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    spec: dict[str, Any] = {
        "containers": [container],
        # Ray's object store and PyTorch's dataloader/NCCL/HCCL live in /dev/shm; a
        # container's default 64 MiB is far too small for RL training.
        "volumes": [
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": str(shared_memory)}}
        ],
    }
    if service_account:
        spec["serviceAccountName"] = service_account
    _add_fields(spec, container, extra)
    return {"spec": spec}


def _add_fields(spec: dict[str, Any], container: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        target = container if key in CONTAINER_FIELDS else spec
        if isinstance(value, list):
            target[key] = [*target.get(key, []), *value]
        else:
            target[key] = value


def _submitter(image: str, pod: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """K8sJobMode's submitter pod: KubeRay's default container (it fills in the command), the
    pods' pull secrets and policy (it pulls the head's image), then ``submitter_pod``."""
    container: dict[str, Any] = {"name": SUBMITTER_CONTAINER, "image": image,
                                 "resources": json.loads(json.dumps(SUBMITTER_RESOURCES))}
    spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Never"}
    inherited = {k: pod[k] for k in ("imagePullSecrets", "imagePullPolicy") if k in pod}
    _add_fields(spec, container, _merge_pod(inherited, extra))
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
    if not isinstance(cfg["image"], str) or not cfg["image"].strip():
        raise InputError("kuberay.image is required: the verl image the pods run (with verl, "
                         "its accelerator stack and Ray), e.g. -s kuberay.image=REGISTRY/verl:TAG")
    for key in ("pod", "worker_pod", "submitter_pod"):
        cfg[key] = dict(cfg[key] or {})
    if cfg["submitter_pod"] and cfg["submission_mode"] != "K8sJobMode":
        raise InputError("kuberay.submitter_pod: only K8sJobMode has a submitter pod")
    if cfg["deletion_rules"] and cfg["shutdown_after_job_finishes"]:
        raise InputError("kuberay.deletion_rules: KubeRay refuses them with "
                         "shutdownAfterJobFinishes; set shutdown_after_job_finishes: false")
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
    """The plan's env as the pods get it: no private values, the file logger's JSONL in /tmp.

    InputError when a value looks like a secret: the runtime env is plain text in the RayJob.
    """
    env = {k: str(v) for k, v in plan.env.items() if k not in PRIVATE_ENV}
    secret = secret_env(env)
    if secret:
        raise InputError(
            f"env {', '.join(secret)}: looks like a secret, and the runtime env is stored in "
            "plain text in the RayJob object; put it in a Kubernetes Secret and reference it "
            "from kuberay.pod.env: [{name: NAME, valueFrom: {secretKeyRef: {name: SECRET, key: "
            "KEY}}}] (or kuberay.pod.envFrom: [{secretRef: {name: SECRET}}])"
        )
    if FILE_LOGGER in env:  # a file straight in /tmp: verl does not create its folder
        env[FILE_LOGGER] = str(POD_TMP / f"{k8s_name(name)}.metrics.jsonl")
    return env


def _cluster_spec(
    cfg: Mapping[str, Any], *, nodes: int, devices_per_node: int, device: str
) -> dict[str, Any]:
    """The ``rayClusterSpec``: a CPU-only head and one group of ``nodes`` worker pods."""
    pod = {
        "image": cfg["image"],
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
                extra=cfg["pod"],
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
                    device_resource=cfg["device_resource"] or DEVICE_RESOURCES[device],
                    devices=devices_per_node,
                    extra=_merge_pod(cfg["pod"], cfg["worker_pod"]),
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

    ``name`` is used as it is when KubeRay accepts it, else made into such a name (see
    :func:`rayjob_name`, which the CLI uses to make it unique).

    Example:
        >>> m = rayjob_manifest(Plan(["python3", "-m", "verl.trainer.main_ppo"], {"A": "1"}),
        ...                     name="ppo", nodes=2, devices_per_node=8, device="npu",
        ...                     settings={"image": "verl:npu"})
        >>> m["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"]
        2
    """
    cfg = _settings(device, nodes, devices_per_node, settings)
    if rayjob_name_problem(name):
        name = k8s_name(name)
        name = (name if name[0].isalpha() else f"wb-{name}")[:MAX_RAYJOB_NAME].rstrip("-")
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
    if cfg["deletion_rules"]:
        spec["deletionStrategy"] = {"deletionRules": list(cfg["deletion_rules"])}
    if cfg["submission_mode"] == "K8sJobMode":
        spec["submitterPodTemplate"] = _submitter(cfg["image"], cfg["pod"], cfg["submitter_pod"])
    if timeout_s:
        spec["activeDeadlineSeconds"] = max(1, int(timeout_s))
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": name,
            "namespace": cfg["namespace"],
            "labels": {"app.kubernetes.io/managed-by": "verl-workbook"},
        },
        "spec": spec,
    }


def manifest_yaml(manifest: Mapping[str, Any]) -> str:
    """The manifest as YAML, every value written out where it is used: the pods share their
    volume mounts, and a JSON round trip (which, unlike a deep copy, shares nothing) keeps YAML
    anchors (``*id001``) out of what people and tools read."""
    return dump_yaml(json.loads(json.dumps(dict(manifest))))
