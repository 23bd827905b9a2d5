"""Starting and stopping a local cluster: ``up`` (idempotent) and ``down`` (by its process tag).

``up`` writes the state file before anything starts, so ``down`` can clean up a start that
failed half way; a node that fails to start (a busy 2-core machine can exceed Ray's own waits)
is tried again with fresh ports. Every process of the cluster carries its tag (recorded in the
state file; see :mod:`workbook.launch.processes`). ``down`` never runs ``ray stop``, which would
stop every Ray cluster of the machine: it stops the processes carrying this cluster's tag only,
and only for a state file the workbook wrote.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from workbook import interpreter
from workbook.core.layout import now_iso
from workbook.errors import InputError, LaunchError
from workbook.launch import ray_client
from workbook.launch.cluster import probe
from workbook.launch.cluster.state import (
    ClusterState,
    default_state_file,
    load_state,
    save_state,
    temp_dir_for,
)
from workbook.launch.processes import (
    KILL_GRACE_S,
    end_tagged,
    is_tag,
    new_tag,
    tagged,
    tagged_env,
)
from workbook.launch.ray_nodes import node_ports, ray_executable, start_command

STARTUP_TIMEOUT_S = 120.0
START_ATTEMPTS = 3


class _NodeArgs(TypedDict):
    """The ``start_command`` arguments every node of a cluster shares."""

    temp_dir: Path
    cpus: int
    devices: int
    device_resource: str
    python: str | None


def _ray_env(tag: str, python: str | None = None) -> dict[str, str]:
    """Environment of the ``ray start`` processes (inherited by every job they run), with the
    cluster's process tag.

    The training interpreter's bin dir (``python``'s, else this one's) goes first on PATH so a
    job's ``python3`` is that environment's; token auth is on unless the caller chose
    ``RAY_AUTH_MODE`` explicitly, as Ray does for local clusters.
    """
    env = tagged_env(tag)
    env.pop("RAY_ADDRESS", None)
    env["PATH"] = os.pathsep.join([str(ray_executable(python).parent), env.get("PATH", "")])
    env.setdefault("RAY_AUTH_MODE", "token")
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    # A raylet waits this long for its dashboard agent's port file (15-30 s by default), which a
    # busy 2-core machine can exceed; the raylet then aborts. Give it more time.
    env.setdefault("RAY_agent_register_timeout_ms", "90000")
    return env


def _ensure_token(env: dict[str, str], python: str | None = None) -> None:
    """Create Ray's default token file when auth is on and no token exists (as ``ray.init`` does)."""
    if env.get("RAY_AUTH_MODE", "").lower() != "token" or ray_client.auth_token(env):
        return
    _run([str(ray_executable(python)), "get-auth-token", "--generate"], env,
         what="create a Ray auth token")


def _run(argv: list[str], env: dict[str, str], *, what: str) -> str:
    """Run a ``ray`` command. A node started this way works in its temp dir, and so do the job
    drivers it runs: never the caller's directory, whose files would shadow installed ones."""
    cwd = next((a.split("=", 1)[1] for a in argv if a.startswith("--temp-dir=")), None)
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=STARTUP_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise LaunchError(
            f"could not {what}: `{' '.join(argv[:3])} ...` took over {STARTUP_TIMEOUT_S:g} s"
        ) from None
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise LaunchError(f"could not {what} (exit {done.returncode}):\n{tail}")
    return done.stdout


def retry_start(
    start: Callable[[], object],
    recover: Callable[[], object],
    attempts: int = START_ATTEMPTS,
) -> None:
    """Call ``start`` until it raises no LaunchError, at most ``attempts`` times.

    ``recover`` runs between a failed attempt and the next one (fresh ports, a pause); the last
    attempt's LaunchError is raised, and so is any error of ``recover`` itself, untried again.
    """
    for attempt in range(1, attempts + 1):
        try:
            start()
            return
        except LaunchError:
            if attempt == attempts:
                raise
            recover()


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
    tag: str | None = None,
    python: str | None = None,
) -> ClusterState:
    """Start a head and ``nodes - 1`` more nodes; return the state (the running one if already up).

    ``cpus_per_node`` are logical CPUs (scheduling slots for verl's many small actors, not
    cores); ``device_resource`` "GPU" gives ``--num-gpus``, anything else (``NPU``) a custom
    resource of that name. ``tag`` is the tag its processes carry (a run's own cluster carries
    the run's), else a new one. The nodes are the Ray of the training interpreter ``python``
    (default ``$WORKBOOK_PYTHON``, else this one): they run verl's workers.
    """
    python = python or interpreter.from_env()
    if nodes < 1 or cpus_per_node < 1 or devices_per_node < 0:
        raise InputError("a cluster needs nodes >= 1, cpus_per_node >= 1, devices_per_node >= 0")
    state_file = Path(state_file or default_state_file())
    existing = load_state(state_file)
    if existing is not None:
        if probe.alive(existing):
            return existing
        down(state_file)  # stale: clear leftovers before reusing its temp dir
    temp_dir = temp_dir_for(state_file)
    temp_dir.mkdir(parents=True, exist_ok=True)
    tag = tag or new_tag()
    env = _ray_env(tag, python)
    _ensure_token(env, python)
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
        tag=tag,
    )
    save_state(state, state_file)  # written first so `down` can clean up a failed start
    try:
        common: _NodeArgs = {
            "temp_dir": temp_dir,
            "cpus": cpus_per_node,
            "devices": devices_per_node,
            "device_resource": device_resource,
            "python": python,
        }
        starter = _Starter(state, state_file, taken, env, common)
        starter.head()
        for _ in range(nodes - 1):
            starter.node()
        _wait_for_nodes(state.dashboard_url, nodes, STARTUP_TIMEOUT_S)
    except BaseException:
        down(state_file)
        raise
    state.pids = sorted(p.pid for p in tagged(tag))
    save_state(state, state_file)
    return state


@dataclass
class _Starter:
    """What every ``ray start`` of one ``up`` shares: the state it records and the ports taken."""

    state: ClusterState
    state_file: Path
    taken: set[int]
    env: dict[str, str]
    common: _NodeArgs

    def head(self) -> None:
        """Start the head on ``state.ports[0]``; after a failure, clear its remains, new ports."""
        state = self.state

        def start() -> None:
            _run(
                start_command(ports=state.ports[0], head_address=None, **self.common),
                self.env,
                what="start the Ray head",
            )

        def recover() -> None:
            end_tagged(state.tag, grace_s=5.0)
            head_ports = node_ports(True, self.taken)
            state.ports = [head_ports]
            state.dashboard_url = f"http://127.0.0.1:{head_ports['dashboard-port']}"
            save_state(state, self.state_file)

        retry_start(start, recover)
        state.gcs_address = _gcs_address(self.common["temp_dir"], state.ports[0]["port"])

    def node(self) -> None:
        """Start one more node, retrying with fresh ports.

        On a busy 2-core machine a node can still time out during start-up (Ray's own 30 s
        wait); the next attempt usually gets through.
        """
        state = self.state

        def take_ports() -> None:
            state.ports.append(node_ports(False, self.taken))
            save_state(state, self.state_file)

        def start() -> None:
            _run(
                start_command(ports=state.ports[-1], head_address=state.gcs_address, **self.common),
                self.env,
                what="start a Ray node",
            )

        def recover() -> None:
            time.sleep(2.0)
            take_ports()

        take_ports()
        retry_start(start, recover)


def _gcs_address(temp_dir: Path, port: int) -> str:
    """The head's GCS address as Ray recorded it (Ray registers the host's IP, not loopback)."""
    record = temp_dir / "ray_current_cluster"
    try:
        text = record.read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    return text or f"127.0.0.1:{port}"


def down(state_file: Path | None = None, grace_s: float = KILL_GRACE_S, *,
         tag: str | None = None) -> dict[str, int]:
    """Stop every process carrying the recorded cluster's tag and forget it; counts of stopped
    processes. A state file the workbook did not write (or, given ``tag``, not the cluster of
    the run with that tag) is refused, nothing stopped: InputError (exit 2) saying why."""
    state_file = Path(state_file or default_state_file())
    state = load_state(state_file)
    if state is None:
        return {"terminated": 0, "killed": 0}
    why = not_ours(state, state_file, tag)
    if why is not None:
        raise InputError(f"refusing to stop the cluster of {state_file}: {why}; nothing was "
                         "stopped")
    counts = end_tagged(state.tag, grace_s)
    state_file.unlink(missing_ok=True)
    return counts


def not_ours(state: ClusterState, state_file: Path, tag: str | None = None) -> str | None:
    """Why ``down`` must not act on this state (None when the workbook wrote it): its temp dir is
    not the one ``up`` derives from the file's own path, it records no tag of the workbook's
    form, or (``tag``) not the tag of the run that started it."""
    own = temp_dir_for(state_file)
    if not isinstance(state.temp_dir, str) or Path(state.temp_dir) != own:
        return f"its temp_dir {state.temp_dir!r} is not the one the workbook makes for it ({own})"
    if not is_tag(state.tag):
        return "it records no process tag of the workbook's (written by hand or by an older workbook)"
    if tag is not None and state.tag != tag:
        return "its process tag is not the run's"
    return None

