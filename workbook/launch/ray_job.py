"""The Ray launcher: run a plan as a Ray job on an existing cluster and follow it to the end.

``RayJobLauncher.run`` does what ``ray job submit`` does, plus what it lacks for validation:

1. pre-flight: the job server answers within a few seconds, and the cluster has the nodes
   and the device resource (GPU or NPU per node) the scenario asks for, and no other verl
   trainer runs on it (verl's TransferQueue keeps one named controller per cluster, so a second
   run would share its queue); otherwise a :class:`LaunchError` (exit 3) that says why;
2. submit ``shlex.join(plan.argv)`` with the run id as submission id and ``plan.env`` as the
   job's env vars (plus ``RAY_OVERRIDE_JOB_RUNTIME_ENV=1``: verl's ``ray.init`` adds its own
   runtime env whose keys overlap the job's, e.g. ``VERL_FULL_DETERMINISM`` and any
   ``PYTHONHASHSEED`` it forwards from the driver's environment, and Ray refuses such a merge
   unless told to override; the overlapping values are the job's own, so nothing is lost);
3. stream the log into ``run.log`` and ``on_line`` through a reconnecting tail (Ray's tail
   ends silently when its connection drops, ray-project/ray#57002), skipping on each
   reconnect the lines already written, and reconcile with the full job log at the end;
4. poll the status; on timeout, ``stop.request`` or Ctrl-C stop the job and wait for STOPPED;
   record status, message and driver exit code in ``run.json`` under ``ray_job``.

A run of a verl checkout (``verl.path``) ships the checkout's ``verl`` package to every node in
the job's runtime env (``py_modules``: Ray uploads it once, keyed by its content, and puts it
first on each worker's PYTHONPATH, ahead of the image's verl), so a cluster without a shared
file system still runs the commit; the checkout leaves the job's PYTHONPATH (a path the nodes
may not have). Before the run, a short probe job with the same runtime env asks every alive node
which verl it imports (:mod:`workbook.launch.verl_probe`); ``run.json``'s ``verl_imported``
records each node's answer against the checkout's own digest and commit, and a node that would
import anything else stops the launch (exit 3): its verdict would be about other code.
"""

from __future__ import annotations

import os
import queue
import shlex
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from workbook import provenance
from workbook.command.plan import Plan
from workbook.core import project
from workbook.core.layout import RunDir, now_iso
from workbook.core.status import RunStatus
from workbook.errors import LaunchError
from workbook.launch import ray_client, verl_probe
from workbook.launch.cluster.on_demand import device_resource
from workbook.launch.cluster.state import load_state
from workbook.launch.job_log import LineLog, follow_log
from workbook.launch.launcher import Launcher
from workbook.launch.leftovers import owner_record
from workbook.launch.outcome import LineSink, Outcome, stop_requested
from workbook.launch.ray_nodes import local_addresses
from workbook.params import Scenario

# Never forwarded into the job: the token would show in the job's runtime env, and the job
# supervisor sets RAY_ADDRESS for the driver itself.
PRIVATE_ENV = frozenset({"RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"})
STATUS_MAP = {"SUCCEEDED": RunStatus.SUCCEEDED.value, "FAILED": RunStatus.FAILED.value,
              "STOPPED": RunStatus.STOPPED.value}  # Ray's job statuses -> run.json's
# verl's TransferQueue controller: one per Ray cluster (a named actor in namespace transfer_queue).
TQ_CONTROLLER = "TransferQueueController"

ClientFactory = Callable[[str, "str | None"], ray_client.JobsClient]


def job_runtime_env(env: Mapping[str, str], *, py_modules: list[str] | None = None
                    ) -> dict[str, Any]:
    """The job's runtime env: the plan's env vars (minus private ones) and the modules to ship."""
    env_vars = {k: str(v) for k, v in env.items() if k not in PRIVATE_ENV}
    env_vars["RAY_OVERRIDE_JOB_RUNTIME_ENV"] = "1"
    runtime_env: dict[str, Any] = {"env_vars": env_vars}
    if py_modules:
        runtime_env["py_modules"] = py_modules
    return runtime_env


def without_checkout(env: Mapping[str, str], checkout: str) -> dict[str, str]:
    """``env`` with the checkout off PYTHONPATH (it travels as a py_module instead)."""
    out = dict(env)
    kept = [p for p in env.get("PYTHONPATH", "").split(":")
            if p and os.path.normpath(p) != os.path.normpath(checkout)]
    if kept:
        out["PYTHONPATH"] = ":".join(kept)
    else:
        out.pop("PYTHONPATH", None)
    return out


def needs_workbook(env: Mapping[str, str]) -> bool:
    """True when verl must import the workbook in its workers (the cpu profile's plugin)."""
    return "workbook." in env.get("VERL_USE_EXTERNAL_MODULES", "")


def workbook_modules(env: Mapping[str, str]) -> list[str]:
    """What a remote cluster needs shipped for the cpu profile: the package and the vllm answer.

    The ``vllm-*.dist-info`` folders on the plan's PYTHONPATH are shipped as modules, so each
    node's ``importlib.metadata`` finds them. (vLLM's general-plugin entry point needs the
    workbook *installed* on the image; py_modules cannot carry entry points.)
    """
    modules = [str(project.PACKAGE_DIR)]  # the workbook package directory
    for entry in env.get("PYTHONPATH", "").split(":"):
        if entry and Path(entry).is_dir():
            modules += sorted(str(p) for p in Path(entry).glob("vllm-*.dist-info"))
    return modules


def check_resources(
    nodes: list[ray_client.NodeInfo],
    *,
    url: str,
    want_nodes: int,
    devices_per_node: int,
    device: str,
) -> None:
    """Refuse (LaunchError) unless ``want_nodes`` alive nodes each have ``devices_per_node`` ``device``."""
    alive = [n for n in nodes if n.alive]
    fit = [n for n in alive if n.resources.get(device, 0.0) >= devices_per_node]
    if len(fit) >= want_nodes:
        return
    seen = (
        "; ".join(
            f"{n.ip}{' (head)' if n.is_head else ''}: {device} {n.resources.get(device, 0):g}, "
            f"CPU {n.resources.get('CPU', 0):g}"
            for n in alive
        )
        or "none"
    )
    raise LaunchError(
        f"the Ray cluster at {url} cannot run this scenario: it needs {want_nodes} node(s) with "
        f">= {devices_per_node} {device} each, and has {len(fit)} such node(s) among "
        f"{len(alive)} alive ({seen})"
    )


def resolve_address(address: str | None, env: Mapping[str, str]) -> str:
    """The job server to use: ``address``, else ``$RAY_ADDRESS``, else ``workbook cluster up``'s.

    So ``workbook cluster up && workbook run <ray scenario>`` needs no address at all.
    """
    if not (address or env.get("RAY_API_SERVER_ADDRESS") or env.get("RAY_ADDRESS")):
        state = load_state()
        if state is not None:
            return state.dashboard_url
    return ray_client.dashboard_url(address, env)


class RayJobLauncher(Launcher):
    """Run plans as Ray jobs on the cluster at ``address`` (else ``$RAY_ADDRESS``).

    Example:
        >>> launcher = RayJobLauncher("http://127.0.0.1:8265", nodes=2, devices_per_node=1,
        ...                           device_resource="GPU")  # doctest: +SKIP
        >>> launcher.preflight()["nodes"]  # doctest: +SKIP
        >>> outcome = launcher.run(plan, run_dir, on_line=print, timeout_s=1800)  # doctest: +SKIP
    """

    connect_timeout_s = 5.0
    stop_timeout_s = 60.0
    probe_timeout_s = 600.0

    def __init__(
        self,
        address: str | None,
        *,
        nodes: int,
        devices_per_node: int,
        device_resource: str = "GPU",
        ship_workbook: bool | None = None,
        client_factory: ClientFactory | None = None,
        poll_s: float = 1.0,
        verl_checkout: str | None = None,
    ) -> None:
        self.address = address
        self.nodes = nodes
        self.devices_per_node = devices_per_node
        self.device_resource = device_resource
        self.ship_workbook = ship_workbook
        self.client_factory = client_factory
        self.poll_s = poll_s
        self.verl_checkout = verl_checkout
        self._nodes_here = False  # until the cluster's nodes are seen to be this machine's

    @classmethod
    def for_scenario(cls, s: Scenario, run_id: str = "", address: str | None = None
                     ) -> RayJobLauncher:
        return cls(address or s.ray.address, nodes=s.nodes, devices_per_node=s.devices_per_node,
                   device_resource=device_resource(s.profile),
                   verl_checkout=s.verl.path)  # shipped to every node, and checked there

    def ran_here(self) -> bool:
        return self._nodes_here

    def connect(self, env: Mapping[str, str] | None = None) -> ray_client.JobsClient:
        """A client for the job server; the token from ``env`` (the plan's) first, then Ray's way."""
        merged = {**os.environ, **(env or {})}
        url = resolve_address(self.address, merged)
        token = ray_client.auth_token(merged)
        if self.client_factory is not None:
            ray_client.probe(url, token, self.connect_timeout_s)
            return self.client_factory(url, token)
        return ray_client.JobsClient.connect(url, token, self.connect_timeout_s)

    def preflight(self, env: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Nodes and resources of the cluster; LaunchError if it cannot run the scenario."""
        client = self.connect(env)
        return self._preflight(client)

    def _preflight(self, client: ray_client.JobsClient) -> dict[str, Any]:
        busy = client.live_actors(TQ_CONTROLLER)
        if busy:
            raise LaunchError(
                f"{client.url} already runs a verl trainer (Ray job {', '.join(sorted(set(busy)))}"
                f" holds the cluster-wide named actor {TQ_CONTROLLER} of verl's TransferQueue); "
                "a second verl run on this cluster would attach to its queue, mix its data and "
                "hang when it ends. Wait for that job to finish, or use another cluster"
            )
        nodes = client.nodes()
        check_resources(
            nodes,
            url=client.url,
            want_nodes=self.nodes,
            devices_per_node=self.devices_per_node,
            device=self.device_resource,
        )
        alive = [n for n in nodes if n.alive]
        local = local_addresses()
        return {
            "address": client.url,
            "nodes": [n.to_dict() for n in alive],
            "required": {
                "nodes": self.nodes,
                "devices_per_node": self.devices_per_node,
                "device_resource": self.device_resource,
            },
            "local": bool(alive) and all(n.ip in local for n in alive),
        }

    def run(self, plan: Plan, run_dir: RunDir, *, on_line: LineSink | None = None,
            timeout_s: float | None = None) -> Outcome:
        started, t0 = now_iso(), time.monotonic()
        client = self.connect(plan.env)
        pre = self._preflight(client)
        self._nodes_here = bool(pre["local"])
        ship = self.ship_workbook if self.ship_workbook is not None else not pre["local"]
        modules = workbook_modules(plan.env) if ship and needs_workbook(plan.env) else []
        env: Mapping[str, str] = plan.env
        if self.verl_checkout:  # the commit on every node, whatever their file systems hold
            env = without_checkout(plan.env, self.verl_checkout)
            modules.append(str(Path(self.verl_checkout) / "verl"))
        runtime_env = job_runtime_env(env, py_modules=modules or None)
        if self.verl_checkout:
            self._check_imported(client, plan.argv[0], runtime_env, run_dir)
        job_id = client.submit(
            entrypoint=shlex.join(plan.argv), submission_id=run_dir.run_id, runtime_env=runtime_env
        )
        record: dict[str, Any] = {
            "job_id": job_id,
            "address": client.url,
            "status": "PENDING",
            "preflight": pre,
        }
        run_dir.update_run(launcher="ray", ray_job=record, status=RunStatus.RUNNING.value, started_at=started,
                           **owner_record())
        stop_reason, state, log_info = self._follow(client, job_id, run_dir, on_line, timeout_s, t0)
        record.update(log_info)
        record.update(
            status=state.status,
            message=state.message,
            driver_exit_code=state.driver_exit_code,
            error_type=state.error_type,
            stop_reason=stop_reason,
            file_logger=collect_file_logger(plan.env, run_dir),
        )
        run_dir.update_run(ray_job=record)
        status = STATUS_MAP.get(state.status, RunStatus.FAILED.value)
        if status == RunStatus.STOPPED and stop_reason == "timeout":
            status = RunStatus.TIMEOUT.value
        message = state.message or f"Ray job {job_id} {state.status}"
        if stop_reason and status in (RunStatus.STOPPED, RunStatus.TIMEOUT):
            message = f"{stop_reason}: {message}"
        return Outcome(
            status=status,
            exit_code=state.driver_exit_code,
            started_at=started,
            ended_at=now_iso(),
            wall_time_s=round(time.monotonic() - t0, 3),
            message=message,
            details={"ray_job": record},
        )

    def _check_imported(self, client: ray_client.JobsClient, python: str,
                        runtime_env: dict[str, Any], run_dir: RunDir) -> None:
        """Run the probe job; record which verl every node imports (``verl_imported``) and refuse
        (LaunchError) a node that would import anything but the checkout."""
        assert self.verl_checkout is not None
        answer, probe_id = self._probe(client, python, runtime_env, run_dir)
        checkout = Path(self.verl_checkout)
        expected = verl_probe.tree_digest(str(checkout / "verl"))
        nodes = [dict(n, matches=n.get("digest") == expected) for n in answer.get("nodes") or []]
        driver = dict(answer.get("driver") or {})
        driver["matches"] = driver.get("digest") == expected
        record = {"checkout": str(checkout), "commit": provenance.git_commit(checkout),
                  "digest": expected, "shipped_as": "py_modules", "probe_job": probe_id,
                  "driver": driver, "nodes": nodes,
                  "all_match": bool(nodes) and driver["matches"] and all(n["matches"] for n in nodes)}
        run_dir.update_run(verl_imported=record)
        wrong = [n for n in [driver, *nodes] if not n["matches"]]
        if wrong or not nodes:
            where = "; ".join(f"{n.get('node_ip', 'the driver')}: {n.get('file') or 'no verl'}"
                              for n in wrong) or "no alive node answered"
            raise LaunchError(f"not every node of {client.url} imports the verl checkout "
                              f"{checkout} ({where}); the run would test other code")

    def _probe(self, client: ray_client.JobsClient, python: str, runtime_env: dict[str, Any],
               run_dir: RunDir) -> tuple[dict[str, Any], str]:
        """Submit the probe with the run's runtime env; its answer and its job id."""
        probe_id = f"{run_dir.run_id}-verl-probe"
        source = Path(verl_probe.__file__).read_text(encoding="utf-8")
        client.submit(entrypoint=shlex.join([python, "-c", source]), submission_id=probe_id,
                      runtime_env=runtime_env)
        deadline = time.monotonic() + self.probe_timeout_s
        state = client.state(probe_id)
        while not state.terminal:
            if time.monotonic() > deadline or stop_requested(run_dir.path):
                client.stop(probe_id)
                raise LaunchError(f"the probe job {probe_id} (which verl each node imports) did "
                                  f"not finish within {self.probe_timeout_s:g} s")
            time.sleep(self.poll_s)
            state = client.state(probe_id)
        log = client.logs(probe_id)
        answer = verl_probe.answer_in(log)
        if state.status != "SUCCEEDED" or answer is None:
            tail = " | ".join(log.strip().splitlines()[-5:])[-600:]
            raise LaunchError(f"the probe job {probe_id} (which verl each node imports) ended "
                              f"{state.status}: {tail or state.message}")
        return answer, probe_id

    def _follow(
        self,
        client: ray_client.JobsClient,
        job_id: str,
        run_dir: RunDir,
        on_line: LineSink | None,
        timeout_s: float | None,
        t0: float,
    ) -> tuple[str, ray_client.JobState, dict[str, Any]]:
        """Stream and poll until the job is over; stop it when asked. (reason, state, log info)."""
        chunks: queue.Queue[tuple[str, str]] = queue.Queue()
        done = threading.Event()
        tail = threading.Thread(target=follow_log, args=(client, job_id, chunks, done), daemon=True)
        stop_reason = ""
        drops: list[str] = []
        connects = [0]
        with open(run_dir.file("log"), "a", encoding="utf-8") as handle:
            log = LineLog(handle, on_line)

            def drain(wait_s: float) -> None:
                deadline = time.monotonic() + wait_s
                while True:
                    try:
                        kind, text = chunks.get(timeout=max(0.0, deadline - time.monotonic()))
                    except queue.Empty:
                        return
                    if kind == "connect":
                        connects[0] += 1
                        log.connect()
                    elif kind == "chunk":
                        log.feed(text)
                    elif kind == "drop":
                        drops.append(text)

            tail.start()
            try:
                state = client.state(job_id)
                while not state.terminal:
                    drain(self.poll_s)
                    if not stop_reason:
                        if stop_requested(run_dir.path):
                            stop_reason = "stop requested"
                        elif timeout_s is not None and time.monotonic() - t0 > timeout_s:
                            stop_reason = "timeout"
                        if stop_reason:
                            client.stop(job_id)
                    state = client.state(job_id)
            except KeyboardInterrupt:
                stop_reason = "interrupted"
                client.stop(job_id)
                state = self._wait_stopped(client, job_id, drain)
            if stop_reason and not state.terminal:
                state = self._wait_stopped(client, job_id, drain)
            tail.join(timeout=15.0)
            done.set()
            drain(0.0)
            streamed = log.written
            appended = log.reconcile(client.logs(job_id))
        reconnects = max(0, connects[0] - 1)
        return (
            stop_reason,
            state,
            {
                "log_lines": log.written,
                "streamed_lines": streamed,
                "reconciled_lines": appended,
                "stream_drops": drops[:20],
                "stream_reconnects": reconnects,
            },
        )

    def _wait_stopped(
        self, client: ray_client.JobsClient, job_id: str, drain: Callable[[float], None]
    ) -> ray_client.JobState:
        deadline = time.monotonic() + self.stop_timeout_s
        state = client.state(job_id)
        while not state.terminal and time.monotonic() < deadline:
            drain(self.poll_s)
            state = client.state(job_id)
        if not state.terminal:
            raise LaunchError(f"Ray job {job_id} did not stop within {self.stop_timeout_s:g} s")
        return state


def collect_file_logger(env: Mapping[str, str], run_dir: RunDir) -> dict[str, Any]:
    """Bring verl's file-logger JSONL into the run dir when this machine can read it.

    The trainer writes it on whichever node runs the driver: on a local cluster that is this
    file system; on a remote one the path is usually not here and the metrics come from the
    streamed console log instead.
    """
    path = env.get("VERL_FILE_LOGGER_PATH")
    target = run_dir.file("metrics")
    if not path:
        return {"path": None, "collected": False, "source": "stream"}
    source = Path(path)
    if source.is_file() and source.resolve() != target.resolve():
        shutil.copyfile(source, target)
    collected = target.is_file() and target.stat().st_size > 0
    return {"path": path, "collected": collected, "source": "file" if collected else "stream"}
