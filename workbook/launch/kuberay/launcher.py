"""``launcher: kuberay``: a plan run as a KubeRay RayJob, as the local and Ray launchers run theirs.

:meth:`KubeRayLauncher.run` builds the RayJob of the plan (:mod:`.manifest`), keeps it in the
run directory (``rayjob.yaml``), creates it with kubectl (:mod:`.kubectl`) and follows it to a
final state, its status changes on stderr. ``stop.request``, Ctrl-C and the deadline stop it
(``kuberay.on_interrupt``: delete or suspend). Then the job's log goes into ``run.log`` and, line
by line, to ``on_line``: only once the job has ended, because the whole driver log is the head
pod's to give (``ray job logs`` there); a live stream would be the submitter pod's own
``--follow``, which can end before the job does, and a half log must not be judged as the run's.

:meth:`KubeRayLauncher.prepare` writes what a run directory holds before the job is submitted:
the command as the pods run it (their env, their ``${HOME}``: the scenario is loaded with
:func:`~.pods.pod_variables`, its plan is :func:`~.pods.pod_plan`), the manifest, and the run.json
fields of a KubeRay run (the RayJob's name and namespace, provenance by machine). Its processes
are the pods', so this machine's conditions are not the run's.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from workbook import provenance
from workbook.command import as_json
from workbook.command.plan import Plan
from workbook.core.layout import RAYJOB_FILE, RunDir, now_iso, write_redacted
from workbook.core.serialization import load_yaml_text
from workbook.core.status import RunStatus
from workbook.errors import LaunchError
from workbook.launch.kuberay import kubectl
from workbook.launch.kuberay.manifest import manifest_yaml, rayjob_manifest, rayjob_name
from workbook.launch.kuberay.pods import pod_plan, pod_variables
from workbook.launch.launcher import Launcher
from workbook.launch.leftovers import owner_record
from workbook.launch.outcome import LineSink, Outcome, stop_requested
from workbook.params import Scenario

# Time beyond the scenario's timeout_s that a run follows its job for (scheduling, image pulls,
# fetching the log).
APPLY_GRACE_S = 1800.0
NAME = "kuberay"  # the scenario's ``launcher:`` and run.json's ``launcher``

StatusSink = Callable[[dict[str, Any]], None]


def apply_deadline(timeout_s: float | None, apply_timeout_s: float | None) -> float | None:
    """How long a run follows its job: ``kuberay.apply_timeout_s``, else the run's
    ``timeout_s`` (KubeRay's own activeDeadlineSeconds) plus time for pods to be scheduled and
    images pulled; None (follow until it ends) when neither is set."""
    if apply_timeout_s is not None:
        return apply_timeout_s
    return timeout_s + APPLY_GRACE_S if timeout_s else None


def job_name(prefix: str | None, scenario_name: str, run_id: str) -> str:
    """The RayJob's name: ``<prefix>-<run id's end>`` as given (``kuberay.name``, rayjob's
    ``--name``; InputError when KubeRay would refuse it), else the scenario's name made one:
    never reused."""
    return rayjob_name(prefix, run_id, exact=True) if prefix else rayjob_name(scenario_name, run_id)


def show_status(name: str) -> StatusSink:
    """A status line per change of the RayJob's status, on stderr (stdout is the run's)."""

    def show(status: dict[str, Any]) -> None:
        print(
            f"rayjob/{name}: job {status.get('jobStatus') or '-'}, "
            f"deployment {status.get('jobDeploymentStatus') or '-'} "
            f"{status.get('message') or ''}".rstrip(),
            file=sys.stderr,
        )

    return show


class KubeRayLauncher(Launcher):
    """Runs plans as the RayJob ``name`` on a KubeRay cluster sized from the scenario.

    Example:
        >>> launcher = KubeRayLauncher.for_scenario(scenario, run_id)  # doctest: +SKIP
        >>> outcome = launcher.run(plan, run_dir, on_line=print, timeout_s=3600)  # doctest: +SKIP
    """

    def __init__(
        self,
        name: str,
        *,
        nodes: int,
        devices_per_node: int,
        device: str,
        settings: Mapping[str, Any] | None = None,
        on_status: StatusSink | None = None,
    ) -> None:
        self.name = name
        self.nodes = nodes
        self.devices_per_node = devices_per_node
        self.device = device
        self.settings = dict(settings or {})
        self.on_interrupt = str(self.settings.get("on_interrupt") or "delete")
        self.apply_timeout_s: float | None = self.settings.get("apply_timeout_s")
        self.on_status = on_status or show_status(name)

    @classmethod
    def for_scenario(cls, s: Scenario, run_id: str = "", address: str | None = None
                     ) -> KubeRayLauncher:
        return cls(job_name(s.kuberay.name, s.name, run_id), nodes=s.nodes,
                   devices_per_node=s.devices_per_node, device=s.profile,
                   settings=s.kuberay.as_settings())

    @staticmethod
    def variables() -> dict[str, str] | None:
        return pod_variables()

    def ran_here(self) -> bool:
        return False  # the pods ran it; this machine only followed

    @classmethod
    def plan(cls, s: Scenario, run_dir: Path) -> Plan:
        return pod_plan(s, run_dir.name)

    def manifest(self, plan: Plan, timeout_s: float | None = None) -> dict[str, Any]:
        """The RayJob that runs ``plan`` (InputError for what KubeRay or the pods cannot do)."""
        return rayjob_manifest(
            plan,
            name=self.name,
            nodes=self.nodes,
            devices_per_node=self.devices_per_node,
            device=self.device,
            settings=self.settings,
            timeout_s=timeout_s,
        )

    def prepare(self, s: Scenario, plan: Plan, run_dir: RunDir) -> dict[str, Any]:
        """Write the command as the pods run it and the manifest (a pinned rollout dump is
        theirs to read); the run.json fields of it: the RayJob, provenance by machine."""
        manifest = self.manifest(plan, s.timeout_s)
        pod_env = load_yaml_text(manifest["spec"]["runtimeEnvYAML"])["env_vars"]
        write_redacted(run_dir.file("command_json"), as_json(Plan(plan.argv, pod_env)))
        write_redacted(
            run_dir.file("command_sh"),
            "#!/bin/sh\n# the RayJob's entrypoint: it runs in the pods, ${HOME} is theirs\n"
            + manifest["spec"]["entrypoint"]
            + "\n",
        )
        write_redacted(run_dir.path / RAYJOB_FILE, manifest_yaml(manifest))
        return {
            "rayjob": rayjob_record(manifest),
            **provenance.submitted(pod_facts(manifest),
                                   tools={"kubectl": kubectl.client_version()}),
        }

    def run(self, plan: Plan, run_dir: RunDir, *, on_line: LineSink | None = None,
            timeout_s: float | None = None) -> Outcome:
        """Create the job, follow it to its end, fetch its log; how it ended."""
        manifest = self.manifest(plan, timeout_s)
        write_redacted(run_dir.path / RAYJOB_FILE, manifest_yaml(manifest))
        return follow(
            manifest,
            run_dir,
            deadline_s=apply_deadline(timeout_s, self.apply_timeout_s),
            on_interrupt=self.on_interrupt,
            on_status=self.on_status,
            on_line=on_line,
        )


def rayjob_record(manifest: Mapping[str, Any]) -> dict[str, str]:
    """Which RayJob a run is (run.json's ``rayjob``)."""
    return {"name": manifest["metadata"]["name"], "namespace": manifest["metadata"]["namespace"]}


def pod_facts(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What the pods run, read from the manifest itself: the image, where, on how many."""
    spec = manifest["spec"]
    workers = spec["rayClusterSpec"]["workerGroupSpecs"][0]
    container = workers["template"]["spec"]["containers"][0]
    limits = container["resources"]["limits"]
    return {
        "image": container["image"],
        "namespace": manifest["metadata"]["namespace"],
        "rayjob": manifest["metadata"]["name"],
        "worker_pods": workers["replicas"],
        "devices_per_pod": {k: v for k, v in limits.items() if "/" in k},
        "submission_mode": spec["submissionMode"],
    }


def follow(
    manifest: dict[str, Any],
    rd: RunDir,
    *,
    deadline_s: float | None = None,
    on_interrupt: str = "delete",
    on_status: StatusSink | None = None,
    on_line: LineSink | None = None,
) -> Outcome:
    """Submit, wait for the end, and put the job's log into run.log; how the job ended.

    Without a log, run.log holds one line saying why (the report's log tail shows it). Past
    ``deadline_s``, on ``stop.request`` or on Ctrl-C the job is deleted (or suspended) and the
    run is a timeout or stopped; the log it wrote so far is still fetched when the cluster has
    it. Each line of run.log then goes to ``on_line``.
    """
    name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
    started, t0 = now_iso(), time.monotonic()
    rd.update_run(status=RunStatus.RUNNING.value, started_at=started, launcher=NAME,
                  rayjob=rayjob_record(manifest), **owner_record())
    word, code, message = RunStatus.FAILED.value, None, ""
    details: dict[str, Any] = {}
    try:
        try:
            status = kubectl.apply(manifest, on_status=on_status or show_status(name),
                                   deadline_s=deadline_s, on_interrupt=on_interrupt,
                                   should_stop=lambda: stop_requested(rd.path))
        except KeyboardInterrupt:
            status = {"jobStatus": "STOPPED", "message": f"stopped by the user (Ctrl-C); the "
                      f"RayJob was {'suspended' if on_interrupt == 'suspend' else 'deleted'}"}
        word, code, message = kubectl.job_outcome(status)
        details["rayjob"] = status
        text, details["log_source"] = kubectl.job_log(
            name, namespace, status, mode=manifest["spec"]["submissionMode"]
        )
    except LaunchError as exc:  # not run, or its log is not to be had
        if word not in (RunStatus.STOPPED.value, RunStatus.TIMEOUT.value):
            word = RunStatus.FAILED.value  # a job that succeeded without a log did not pass
        code = None
        message = f"{message}; {exc.message}" if message else f"did not run: {exc.message}"
        text = f"workbook: {exc.message}\n"
    rd.file("log").write_text(text, encoding="utf-8")
    _pass_on(text, on_line)
    return Outcome(word, code, started, now_iso(), round(time.monotonic() - t0, 1), message,
                   details)


def _pass_on(text: str, on_line: LineSink | None) -> None:
    """Each line of the fetched log to ``on_line``; a sink that breaks is dropped, not fatal."""
    if on_line is None:
        return
    for line in text.splitlines():
        try:
            on_line(line)
        except Exception:  # noqa: BLE001 - a broken sink must not fail a run that ran
            return
