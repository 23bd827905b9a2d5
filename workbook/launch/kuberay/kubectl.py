"""``kubectl`` for a RayJob: submit it, follow it to a final state, fetch its job's log.

Every call goes through one ``kubectl`` found on PATH, with a timeout; a failure is a
LaunchError (exit 3) quoting kubectl's last stderr line. The manifest itself comes from
:mod:`workbook.launch.kuberay.manifest`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from typing import Any

from workbook.errors import LaunchError
from workbook.launch.ray_client import TERMINAL_STATUSES

FINAL_DEPLOYMENT = frozenset({"Complete", "Failed", "ValidationFailed"})
FINAL_JOB = TERMINAL_STATUSES  # a RayJob's jobStatus is its Ray job's status
HEAD_CONTAINER = "ray-head"
DASHBOARD = "http://127.0.0.1:8265"  # the head's own dashboard, seen from inside the head pod
POLL_S = 5.0
LOG_TIMEOUT_S = 300.0


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
