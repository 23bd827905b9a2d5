"""A local multi-node Ray cluster on loopback, started and stopped by PID.

Laptops and CI need "two Ray nodes" without two machines: a head and ``nodes - 1`` more
``ray start`` processes on this host. Each cluster gets

* its own short temp dir (``/tmp/wb-ray-<hash>``: Ray's AF_UNIX socket paths must stay short),
* every port chosen free and moved off Ray's defaults (so it never collides with another
  cluster on the machine, nor with a ``ray.init()`` of a local run),
* logical devices per node (``--num-gpus`` for GPUs, ``--resources '{"NPU": n}'`` otherwise),
* token authentication as Ray does it for local clusters (a token in ``~/.ray/auth_token``).

Its state (addresses, temp dir, PIDs) lives in a JSON file (``$WORKBOOK_CLUSTER_STATE`` or
``~/.cache/verl-workbook/cluster.json``) so ``up`` is idempotent and ``down`` knows what to stop.
``down`` never runs ``ray stop`` (that stops every Ray cluster of the machine): it finds the
processes whose command line names the cluster's temp dir, plus their
descendants (Ray workers rename themselves ``ray::...``), sends SIGTERM, and SIGKILLs the
survivors after 10 s (process lookups through ``workbook.launch.processes``).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from workbook.errors import InputError, LaunchError
from workbook.launch import processes, ray_client
from workbook.launch.ray_nodes import node_ports, ray_executable, start_command
from workbook.runs import now_iso, write_atomic

STARTUP_TIMEOUT_S = 120.0
KILL_GRACE_S = 10.0
START_ATTEMPTS = 3


class _NodeArgs(TypedDict):
    """The ``start_command`` arguments every node of a cluster shares."""

    temp_dir: Path
    cpus: int
    devices: int
    device_resource: str


def default_state_file() -> Path:
    default = Path("~/.cache/verl-workbook/cluster.json").expanduser()
    return Path(os.environ.get("WORKBOOK_CLUSTER_STATE", str(default))).expanduser()


def temp_dir_for(state_file: Path) -> Path:
    """A short temp dir unique to the state file (AF_UNIX paths in it must stay < 108 bytes)."""
    digest = hashlib.sha1(str(Path(state_file).resolve()).encode()).hexdigest()[:8]
    return Path("/tmp") / f"wb-ray-{digest}"


@dataclass
class ClusterState:
    """What ``up`` started: enough for ``status`` and ``down`` in another process."""

    temp_dir: str
    gcs_address: str
    dashboard_url: str
    nodes: int
    cpus_per_node: int
    devices_per_node: int
    device_resource: str
    pids: list[int] = field(default_factory=list)
    ports: list[dict[str, int]] = field(default_factory=list)
    started_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterState:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def load_state(state_file: Path | None = None) -> ClusterState | None:
    path = Path(state_file or default_state_file())
    if not path.exists():
        return None
    try:
        return ClusterState.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as exc:
        raise InputError(f"{path}: not a cluster state file ({exc}); remove it") from None


def _save_state(state: ClusterState, state_file: Path) -> None:
    write_atomic(state_file, json.dumps(state.to_dict(), indent=2) + "\n")


def _ray_env() -> dict[str, str]:
    """Environment of the ``ray start`` processes (inherited by every job they run).

    The venv's bin dir goes first on PATH so a job's ``python3`` is this venv's; token auth
    is on unless the caller chose ``RAY_AUTH_MODE`` explicitly, as Ray does for local clusters.
    """
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("RAY_AUTH_MODE", "token")
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    # A raylet waits this long for its dashboard agent's port file (15-30 s by default), which a
    # busy 2-core machine can exceed; the raylet then aborts. Give it more time.
    env.setdefault("RAY_agent_register_timeout_ms", "90000")
    return env


def _ensure_token(env: dict[str, str]) -> None:
    """Create Ray's default token file when auth is on and no token exists (as ``ray.init`` does)."""
    if env.get("RAY_AUTH_MODE", "").lower() != "token" or ray_client.auth_token(env):
        return
    _run(
        [str(ray_executable()), "get-auth-token", "--generate"], env, what="create a Ray auth token"
    )


def _run(argv: list[str], env: dict[str, str], *, what: str) -> str:
    """Run a ``ray`` command. A node started this way works in its temp dir, and so do the job
    drivers it runs: never the caller's directory, whose files would shadow installed ones."""
    cwd = next((a.split("=", 1)[1] for a in argv if a.startswith("--temp-dir=")), None)
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=STARTUP_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(
            f"could not {what}: `{' '.join(argv[:3])} ...` took over {STARTUP_TIMEOUT_S:g} s"
        ) from None
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise LaunchError(f"could not {what} (exit {done.returncode}):\n{tail}")
    return done.stdout


# ---------------------------------------------------------------- processes


def cluster_processes(temp_dir: str) -> list[Any]:
    """Every live process of the cluster rooted at ``temp_dir`` (never another cluster's).

    A process belongs when its command line names the temp dir (GCS, raylets, dashboard,
    log monitors) or when it descends from such a process (agents and workers, which rename
    themselves ``ray::...``). The temp dir is unique to the state file, so this never matches
    another cluster. Collected before any signal, so orphans cannot escape.
    """
    marker = str(temp_dir).rstrip("/")
    found = {p.pid: p for p in processes.marked(marker)}
    for proc in list(found.values()):
        found.update({child.pid: child for child in processes.descendants(proc.pid)})
    return sorted(found.values(), key=lambda p: p.pid)


def stop_processes(procs: list[Any], grace_s: float = KILL_GRACE_S) -> dict[str, int]:
    """SIGTERM each process, SIGKILL those alive after ``grace_s``; counts of each."""
    left = processes.end_processes(procs, grace_s)
    return {"terminated": len(procs) - len(left), "killed": len(left)}


def local_addresses() -> set[str]:
    """IP addresses of this machine (a cluster whose nodes all have one is local).

    Includes the address of the default route's interface, which is what Ray registers
    nodes with (a UDP ``connect`` sends nothing).
    """
    addresses = {"127.0.0.1", "::1", "localhost"}
    try:
        addresses.update(str(info[4][0])
                         for info in socket.getaddrinfo(socket.gethostname(), None))
    except OSError:
        pass
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            addresses.add(probe.getsockname()[0])
        except OSError:
            pass
    return addresses


# ---------------------------------------------------------------- lifecycle


def _alive(state: ClusterState) -> bool:
    try:
        return any(
            n.alive
            for n in ray_client.list_nodes(state.dashboard_url, ray_client.auth_token(), 5.0)
        )
    except LaunchError:
        return False


def _wait_for_nodes(url: str, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            alive = [n for n in ray_client.list_nodes(url, ray_client.auth_token(), 5.0) if n.alive]
            if len(alive) >= count:
                return
            last = f"{len(alive)} of {count} nodes alive"
        except LaunchError as exc:
            last = exc.message
        time.sleep(1.0)
    raise LaunchError(f"the local cluster did not come up within {timeout_s:g} s: {last}")


def up(
    nodes: int = 2,
    *,
    cpus_per_node: int = 16,
    devices_per_node: int = 1,
    device_resource: str = "GPU",
    state_file: Path | None = None,
) -> ClusterState:
    """Start a head and ``nodes - 1`` more nodes; return the state (the running one if already up).

    ``cpus_per_node`` are logical CPUs (scheduling slots for verl's many small actors, not
    cores); ``device_resource`` "GPU" gives ``--num-gpus``, anything else (``NPU``) a custom
    resource of that name.
    """
    if nodes < 1 or cpus_per_node < 1 or devices_per_node < 0:
        raise InputError("a cluster needs nodes >= 1, cpus_per_node >= 1, devices_per_node >= 0")
    state_file = Path(state_file or default_state_file())
    existing = load_state(state_file)
    if existing is not None:
        if _alive(existing):
            return existing
        down(state_file)  # stale: clear leftovers before reusing its temp dir
    temp_dir = temp_dir_for(state_file)
    temp_dir.mkdir(parents=True, exist_ok=True)
    env = _ray_env()
    _ensure_token(env)
    taken: set[int] = set()
    head_ports = node_ports(True, taken)
    state = ClusterState(
        temp_dir=str(temp_dir),
        gcs_address="",
        dashboard_url=f"http://127.0.0.1:{head_ports['dashboard-port']}",
        nodes=nodes,
        cpus_per_node=cpus_per_node,
        devices_per_node=devices_per_node,
        device_resource=device_resource,
        ports=[head_ports],
        started_at=now_iso(),
    )
    _save_state(state, state_file)  # written first so `down` can clean up a failed start
    try:
        common: _NodeArgs = {
            "temp_dir": temp_dir,
            "cpus": cpus_per_node,
            "devices": devices_per_node,
            "device_resource": device_resource,
        }
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                _run(
                    start_command(ports=head_ports, head_address=None, **common),
                    env,
                    what="start the Ray head",
                )
                break
            except LaunchError:
                if attempt == START_ATTEMPTS:
                    raise
                stop_processes(cluster_processes(str(temp_dir)), grace_s=5.0)
                head_ports = node_ports(True, taken)
                state.ports = [head_ports]
                state.dashboard_url = f"http://127.0.0.1:{head_ports['dashboard-port']}"
                _save_state(state, state_file)
        state.gcs_address = _gcs_address(temp_dir, head_ports["port"])
        for _ in range(nodes - 1):
            _start_node(state, state_file, taken, env, common)
        _wait_for_nodes(state.dashboard_url, nodes, STARTUP_TIMEOUT_S)
    except BaseException:
        down(state_file)
        raise
    state.pids = [p.pid for p in cluster_processes(state.temp_dir)]
    _save_state(state, state_file)
    return state


def _start_node(
    state: ClusterState,
    state_file: Path,
    taken: set[int],
    env: dict[str, str],
    common: _NodeArgs,
) -> None:
    """Start one more node, retrying with fresh ports.

    On a busy 2-core machine a node can still time out during start-up (Ray's own 30 s wait);
    the next attempt usually gets through.
    """
    for attempt in range(1, START_ATTEMPTS + 1):
        ports = node_ports(False, taken)
        state.ports.append(ports)
        _save_state(state, state_file)
        try:
            _run(
                start_command(ports=ports, head_address=state.gcs_address, **common),
                env,
                what="start a Ray node",
            )
            return
        except LaunchError:
            if attempt == START_ATTEMPTS:
                raise
            time.sleep(2.0)


def _gcs_address(temp_dir: Path, port: int) -> str:
    """The head's GCS address as Ray recorded it (Ray registers the host's IP, not loopback)."""
    record = temp_dir / "ray_current_cluster"
    try:
        text = record.read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    return text or f"127.0.0.1:{port}"


@dataclass(frozen=True)
class ClusterStatus:
    """What ``workbook cluster status`` prints."""

    state: ClusterState | None
    nodes: list[ray_client.NodeInfo]
    reachable: bool
    message: str = ""

    @property
    def alive_nodes(self) -> list[ray_client.NodeInfo]:
        return [n for n in self.nodes if n.alive]

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state.to_dict() if self.state else None,
            "reachable": self.reachable,
            "message": self.message,
            "nodes": [n.to_dict() for n in self.nodes],
        }


def status(state_file: Path | None = None) -> ClusterStatus:
    """The recorded cluster and what its dashboard says about its nodes now."""
    state = load_state(state_file)
    if state is None:
        return ClusterStatus(
            None, [], False, f"no local cluster recorded in {state_file or default_state_file()}"
        )
    try:
        found = ray_client.list_nodes(state.dashboard_url, ray_client.auth_token(), 10.0)
    except LaunchError as exc:
        return ClusterStatus(state, [], False, exc.message)
    return ClusterStatus(state, found, True)


def down(state_file: Path | None = None, grace_s: float = KILL_GRACE_S) -> dict[str, int]:
    """Stop every process of the recorded cluster by PID and forget it; counts of stopped processes."""
    state_file = Path(state_file or default_state_file())
    state = load_state(state_file)
    if state is None:
        return {"terminated": 0, "killed": 0}
    counts = stop_processes(cluster_processes(state.temp_dir), grace_s)
    state_file.unlink(missing_ok=True)
    return counts


@contextmanager
def on_demand(scenario: Any, run_dir: Any) -> Iterator[str | None]:
    """The job server for ``scenario``: a local cluster of ``ray.local_nodes`` when it asks.

    A cluster of the same shape already recorded in ``$WORKBOOK_CLUSTER_STATE`` and alive is
    used and left running (a suite shares one between consecutive entries). Otherwise one is
    started with its state in the run directory, recorded in ``run.json`` (so a crashed run's
    cluster is found and stopped later) and stopped by PID when the run ends. Yields None when
    the scenario names no local cluster (its ``ray.address`` or ``$RAY_ADDRESS`` then apply).
    """
    nodes = getattr(getattr(scenario, "ray", None), "local_nodes", None)
    if scenario.launcher != "ray" or not nodes:
        yield None
        return
    shape = shape_of(scenario)
    shared = load_state()
    if shared is not None and matches(shared, shape) and _alive(shared):
        yield shared.dashboard_url
        return
    state_file = Path(run_dir.path) / "cluster.json"
    run_dir.update_run(local_cluster={"state_file": str(state_file),
                                      "temp_dir": str(temp_dir_for(state_file))})
    try:
        state = up(state_file=state_file, **shape)
        yield state.dashboard_url
    finally:
        down(state_file)


def device_resource(profile: str) -> str:
    """The Ray resource a profile's devices are counted as (CPU runs borrow verl's "GPU")."""
    return "NPU" if profile == "npu" else "GPU"


def shape_of(scenario: Any) -> dict[str, Any]:
    """What a scenario's local cluster looks like: nodes, logical devices and their resource."""
    return {"nodes": int(scenario.ray.local_nodes), "devices_per_node": scenario.devices_per_node,
            "device_resource": device_resource(scenario.profile)}


def matches(state: ClusterState, shape: dict[str, Any]) -> bool:
    return (state.nodes, state.devices_per_node, state.device_resource) == (
        shape["nodes"], shape["devices_per_node"], shape["device_resource"])
