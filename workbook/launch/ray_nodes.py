"""How one node of the local cluster is started: its free ports and its ``ray start`` argv.

Every port a Ray node listens on is chosen free and away from Ray's defaults (6379, 8265,
10001, 52365, the worker range 10002-19999), so two clusters, or a cluster and a local run's
own ``ray.init()``, never meet on this machine. Pure apart from probing ports. Also the
addresses this host's nodes register with (:func:`local_addresses`: is a cluster local?).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import sys
from pathlib import Path

from workbook.errors import LaunchError

WORKER_PORT_SPAN = 200


def ray_executable(python: str | None = None) -> Path:
    """The ``ray`` CLI beside the training interpreter ``python`` (None: this one): the nodes
    run the jobs' workers, so they must be the training environment's Ray, with its verl."""
    base = Path(os.path.abspath(shutil.which(python) or python)) if python else Path(sys.executable)
    path = base.parent / "ray"
    if not path.exists():
        raise LaunchError(f"no `ray` executable beside {base}; install ray[default] in that "
                          "environment")
    return path


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


def _free_port(taken: set[int]) -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("", 0))
            port = int(sock.getsockname()[1])
        if port not in taken:
            taken.add(port)
            return port


def _free_range(taken: set[int], span: int) -> tuple[int, int]:
    """A block of ``span`` ports all free now, away from Ray's default worker range 10002-19999."""
    rng = random.Random()
    for _ in range(200):
        start = rng.randrange(20000, 32000 - span)
        block = range(start, start + span)
        if taken.isdisjoint(block) and all(_port_is_free(p) for p in block[:: max(1, span // 20)]):
            taken.update(block)
            return start, start + span - 1
    raise LaunchError("no free block of worker ports found between 20000 and 32000")


def node_ports(head: bool, taken: set[int]) -> dict[str, int]:
    """Every port one node listens on, chosen free (the head adds GCS, dashboard, client)."""
    names = [
        "node-manager-port",
        "object-manager-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
        "metrics-export-port",
    ]
    if head:
        names = ["port", "dashboard-port", "ray-client-server-port", *names]
    ports = {name: _free_port(taken) for name in names}
    ports["min-worker-port"], ports["max-worker-port"] = _free_range(taken, WORKER_PORT_SPAN)
    return ports


def start_command(
    *,
    ports: dict[str, int],
    temp_dir: Path,
    cpus: int,
    devices: int,
    device_resource: str,
    head_address: str | None,
    python: str | None = None,
) -> list[str]:
    """argv of one ``ray start`` (pure: the head when ``head_address`` is None), of the Ray
    beside the training interpreter ``python``."""
    argv = [str(ray_executable(python)), "start"]
    if head_address is None:
        argv += ["--head", "--dashboard-host=127.0.0.1", "--include-dashboard=true"]
    else:
        argv += [f"--address={head_address}"]
    argv += [f"--{name}={value}" for name, value in ports.items()]
    argv += [f"--temp-dir={temp_dir}", f"--num-cpus={cpus}", "--disable-usage-stats"]
    if device_resource.upper() == "GPU":
        argv.append(f"--num-gpus={devices}")
    else:
        argv += ["--num-gpus=0", f"--resources={json.dumps({device_resource: devices})}"]
    return argv


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
