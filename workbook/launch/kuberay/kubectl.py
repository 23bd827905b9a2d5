"""``kubectl`` for a RayJob: check access, submit it, follow it to a final state, fetch its log.

Every call goes through one ``kubectl`` found on PATH, with a timeout; a failure is a
LaunchError (exit 3) quoting kubectl's last stderr line. Reads that fail for a reason that
passes (the API server unreachable for a moment, throttled, restarting) are retried with
backoff; one such failure never ends a run whose job goes on. The RayJob is *created*, never
applied over an existing one: its name is unique, so a run never reads an earlier job's
result. Following has a deadline, after which (and on Ctrl-C, or when the run is asked to stop)
the job is deleted or suspended. The manifest itself comes from
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

from workbook.core.status import RunStatus
from workbook.errors import LaunchError
from workbook.launch.ray_client import TERMINAL_STATUSES

FINAL_DEPLOYMENT = frozenset({"Complete", "Failed", "ValidationFailed"})
FINAL_JOB = TERMINAL_STATUSES  # a RayJob's jobStatus is its Ray job's status
# The reasons :func:`apply` gives a status it ended itself (KubeRay's own for the deadline).
DEADLINE, STOP_REQUESTED = "DeadlineExceeded", "StopRequested"
HEAD_CONTAINER = "ray-head"
DASHBOARD = "http://127.0.0.1:8265"  # the head's own dashboard, seen from inside the head pod
POLL_S = 5.0
LOG_TIMEOUT_S = 300.0
RETRIES = 5  # attempts of a call that failed transiently
BACKOFF_S = 2.0  # first wait between attempts, doubled each time (capped at 30 s)
# kubectl's words for a failure that passes: connection trouble, throttling, a restarting server.
TRANSIENT = re.compile(
    r"unable to connect to the server|connection refused|connection reset|i/o timeout|"
    r"tls handshake timeout|timeout awaiting|context deadline exceeded|\beof\b|"
    r"too many requests|serviceunavailable|service unavailable|internalerror|"
    r"the server is currently unable|etcdserver|http2: |did not answer within|"
    r"the server was unable to return a response",
    re.IGNORECASE,
)
# What `--apply` does in the namespace, as `kubectl auth can-i` spells it: (verb, resource, why).
RBAC = (
    ("create", "rayjobs.ray.io", "submit the RayJob"),
    ("get", "rayjobs.ray.io", "follow its status"),
    ("delete", "rayjobs.ray.io", "delete it on Ctrl-C or at the deadline"),
    ("list", "pods", "find the Ray head pod"),
    ("get", "pods/log", "read the submitter Job's log"),
    ("get", "jobs.batch", "find the submitter Job (K8sJobMode)"),
)
RBAC_SUSPEND = ("patch", "rayjobs.ray.io", "suspend it on Ctrl-C or at the deadline")
RBAC_OPTIONAL = (("create", "pods/exec", "read the whole driver log in the head pod "
                  "(`ray job logs`); without it the submitter Job's log is used"),)


class _Failed(LaunchError):
    """A kubectl call that failed; ``transient`` when trying again may help."""

    def __init__(self, message: str, transient: bool, code: int | None = None) -> None:
        super().__init__(message)
        self.transient, self.code = transient, code


def _kubectl(args: list[str], *, stdin: str | None = None, timeout_s: float = 30.0) -> str:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise LaunchError(
            "kubectl is not on PATH: cannot submit the RayJob (write it with `workbook rayjob` and apply it elsewhere)"
        )
    what = " ".join(args[:3])
    try:
        done = subprocess.run([kubectl, *args], input=stdin, capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise _Failed(f"`kubectl {what}` did not answer within {timeout_s:g} s", True) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        last = lines[-1][:300] if lines else f"exit {done.returncode}"
        raise _Failed(f"`kubectl {what}` failed: {last}", bool(TRANSIENT.search(last)),
                      done.returncode)
    return done.stdout


def _retrying(args: list[str], *, stdin: str | None = None, timeout_s: float = 30.0,
              attempts: int | None = None) -> str:
    """:func:`_kubectl`, tried again after a transient failure (backoff 2, 4, 8 ... s)."""
    attempts = RETRIES if attempts is None else attempts
    wait = BACKOFF_S
    for attempt in range(1, attempts + 1):
        try:
            return _kubectl(args, stdin=stdin, timeout_s=timeout_s)
        except _Failed as exc:
            if not exc.transient or attempt == attempts:
                if exc.transient:
                    raise LaunchError(f"{exc.message} ({attempts} attempts)") from None
                raise
        time.sleep(wait)
        wait = min(wait * 2, 30.0)
    raise AssertionError("unreachable")


def client_version() -> str | None:
    """This machine's kubectl version (``v1.31.0``), None when there is none that answers."""
    try:
        text = _kubectl(["version", "--client", "-o", "json"], timeout_s=10.0)
        version = (json.loads(text).get("clientVersion") or {}).get("gitVersion")
    except (LaunchError, ValueError, AttributeError):
        return None
    return str(version) if version else None


def check_cluster(namespace: str) -> None:
    """LaunchError unless a Kubernetes cluster answers and serves KubeRay's RayJob API.

    Discovery (``api-resources``), not ``get crd``: a namespaced CI account may not read
    cluster-scoped CRDs, and every authenticated account may discover APIs.
    """
    try:
        names = _retrying(["--request-timeout=10s", "api-resources", "--api-group=ray.io",
                           "-o", "name"], timeout_s=20.0)
    except LaunchError as exc:
        raise LaunchError(f"no usable Kubernetes cluster with KubeRay: {exc.message}") from None
    if "rayjobs.ray.io" not in names.split():
        raise LaunchError("no usable Kubernetes cluster with KubeRay: the cluster serves no "
                          "rayjobs.ray.io (KubeRay's RayJob CRD is not installed)")


def missing_permissions(namespace: str, *, suspend: bool = False) -> tuple[list[str], list[str]]:
    """``(required, optional)`` permissions the current account lacks in ``namespace``,
    each as ``"verb resource (why)"``, asked with ``kubectl auth can-i``."""
    def lacking(rules: tuple[tuple[str, str, str], ...]) -> list[str]:
        out = []
        for verb, resource, why in rules:
            try:
                answer = _retrying(["auth", "can-i", verb, resource, "-n", namespace],
                                   timeout_s=20.0)
            except _Failed as exc:  # can-i answers "no" with exit 1
                if exc.code != 1:
                    raise
                answer = "no"
            if answer.strip().lower() != "yes":
                out.append(f"{verb} {resource} ({why})")
        return out

    required = RBAC + ((RBAC_SUSPEND,) if suspend else ())
    return lacking(required), lacking(RBAC_OPTIONAL)


def check_permissions(namespace: str, *, suspend: bool = False) -> list[str]:
    """LaunchError naming every missing permission; the optional ones missing, as warnings."""
    required, optional = missing_permissions(namespace, suspend=suspend)
    if required:
        raise LaunchError(f"the Kubernetes account may not, in namespace {namespace}: "
                          + "; ".join(required) + " (grant them with a Role: see README, "
                          "KubeRay)")
    return optional


def rayjob_status(name: str, namespace: str) -> dict[str, Any]:
    text = _retrying(["--request-timeout=20s", "get", "rayjob", name, "-n", namespace, "-o", "json"])
    try:
        status = json.loads(text).get("status") or {}
    except (ValueError, AttributeError):
        raise LaunchError(f"`kubectl get rayjob {name}` printed no JSON object") from None
    return status if isinstance(status, dict) else {}


def is_final(status: Mapping[str, Any]) -> bool:
    return status.get("jobDeploymentStatus") in FINAL_DEPLOYMENT or (
        status.get("jobStatus") in FINAL_JOB and status.get("jobDeploymentStatus") != "Running"
    )


def submit(manifest: Mapping[str, Any]) -> None:
    """Create the RayJob (never replace one: a name in use is an error, not an update)."""
    name = manifest["metadata"]["name"]
    try:
        _retrying(["create", "-f", "-"], stdin=json.dumps(manifest), attempts=3)
    except LaunchError as exc:
        if "alreadyexists" in exc.message.lower().replace(" ", ""):
            raise LaunchError(f"a RayJob named {name} already exists: not reading an earlier "
                              "job's result (names get a unique suffix; was one given twice?)"
                              ) from None
        raise


def stop(name: str, namespace: str, how: str) -> str:
    """End the RayJob: ``delete`` it (its cluster goes with it) or ``suspend`` it (KubeRay
    deletes the cluster and keeps the RayJob); what was done, in words."""
    try:
        if how == "suspend":
            _retrying(["patch", "rayjob", name, "-n", namespace, "--type", "merge", "-p",
                       json.dumps({"spec": {"suspend": True}})], attempts=3)
            return f"RayJob {namespace}/{name} suspended"
        _retrying(["delete", "rayjob", name, "-n", namespace, "--wait=false",
                   "--ignore-not-found"], attempts=3)
        return f"RayJob {namespace}/{name} deleted"
    except LaunchError as exc:
        return f"RayJob {namespace}/{name} could not be {how}d: {exc.message}"


def apply(
    manifest: Mapping[str, Any],
    *,
    on_status: Callable[[dict[str, Any]], None] | None = None,
    deadline_s: float | None = None,
    on_interrupt: str = "delete",
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Check access, create the RayJob and wait for a final state; the status.

    The status carries ``jobStatus`` (Ray's: SUCCEEDED, FAILED, STOPPED ...) and
    ``jobDeploymentStatus`` (KubeRay's: Initializing, Running, Complete, Failed ...), plus
    ``jobId`` and ``rayClusterName`` (what :func:`job_log` needs); :func:`job_outcome` reads it.
    ``on_status`` sees each change. Past ``deadline_s`` the job is stopped (``on_interrupt``:
    delete or suspend) and the status says ``reason: DeadlineExceeded``; when ``should_stop``
    says so (the run's ``stop.request``), the same with ``reason: StopRequested``; on Ctrl-C it
    is stopped the same way and KeyboardInterrupt goes on.
    """
    name = manifest["metadata"]["name"]
    namespace = manifest["metadata"].get("namespace", "default")
    check_cluster(namespace)
    warnings = check_permissions(namespace, suspend=on_interrupt == "suspend")
    submit(manifest)
    last: dict[str, Any] = {"warnings": warnings} if warnings else {}
    started = time.monotonic()
    try:
        while True:
            status = rayjob_status(name, namespace)
            brief = {
                k: status.get(k) for k in ("jobStatus", "jobDeploymentStatus", "reason", "message")
            }
            if brief != {k: last.get(k) for k in brief} and on_status is not None:
                on_status(status)
            last = status
            if is_final(status):
                return status
            if should_stop is not None and should_stop():
                done = stop(name, namespace, on_interrupt)
                return {**status, "reason": STOP_REQUESTED,
                        "message": f"stopped on request while "
                        f"{status.get('jobDeploymentStatus') or 'pending'}; {done}"}
            if deadline_s is not None and time.monotonic() - started > deadline_s:
                done = stop(name, namespace, on_interrupt)
                return {**status, "reason": DEADLINE,
                        "message": f"still {status.get('jobDeploymentStatus') or 'pending'} "
                        f"after the --apply deadline of {deadline_s:g} s; {done}"}
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        stop(name, namespace, on_interrupt)
        raise


def job_outcome(status: Mapping[str, Any]) -> tuple[str, int | None, str]:
    """``(status, exit code, message)`` of a final RayJob status, in the launchers' words.

    The entrypoint's exit code is known when Ray says the job succeeded (0) or names it in its
    message ("Job entrypoint command failed with exit code 1").
    """
    job, deployment = status.get("jobStatus"), status.get("jobDeploymentStatus")
    said = str(status.get("message") or "").strip()
    if job == "SUCCEEDED":
        return RunStatus.SUCCEEDED.value, 0, said or "the Ray job succeeded"
    if job == "STOPPED" or status.get("reason") == STOP_REQUESTED:
        return RunStatus.STOPPED.value, None, said or "the Ray job was stopped"
    if status.get("reason") == DEADLINE:
        return RunStatus.TIMEOUT.value, None, said or "the RayJob ran past activeDeadlineSeconds"
    code = re.search(r"exit code (-?\d+)", said)
    return RunStatus.FAILED.value, int(code.group(1)) if code else None, said or (
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
            text = _retrying(["exec", "-n", namespace, head, "-c", HEAD_CONTAINER, "--",
                              *command], timeout_s=LOG_TIMEOUT_S, attempts=2)
            return text, f"ray job logs {job_id} in pod {head}"
        except LaunchError as exc:
            tried.append(exc.message)
    else:
        tried.append("the RayJob's status names no Ray cluster or job id")
    if mode == "K8sJobMode":
        try:
            return _retrying(["logs", f"job/{name}", "-n", namespace], timeout_s=LOG_TIMEOUT_S,
                             attempts=2), (
                f"kubectl logs job/{name}")
        except LaunchError as exc:
            tried.append(exc.message)
    raise LaunchError(f"no log of RayJob {namespace}/{name} could be fetched: {'; '.join(tried)}")


def _head_pod(cluster: str, namespace: str) -> str:
    selector = f"ray.io/cluster={cluster},ray.io/node-type=head"
    pods = json.loads(_retrying(["get", "pods", "-n", namespace, "-l", selector, "-o", "json"]))
    names = [item["metadata"]["name"] for item in pods.get("items") or []]
    if not names:
        raise LaunchError(f"no head pod of Ray cluster {cluster} (it was torn down)")
    return str(names[0])
