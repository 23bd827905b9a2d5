"""Which local cluster a scenario runs on: the policy runs, suites and sweeps share.

A scenario with ``launcher: ray`` and ``ray.local_nodes: N`` asks for a local cluster of its
shape (nodes, logical devices per node and the resource they are counted as); any other
scenario uses its ``ray.address`` or ``$RAY_ADDRESS``, or no cluster at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from workbook import interpreter
from workbook.core.layout import CLUSTER_FILE
from workbook.launch.cluster import probe
from workbook.launch.cluster.lifecycle import down, up
from workbook.launch.cluster.state import ClusterState, load_state, temp_dir_for
from workbook.launch.processes import process_tag


@contextmanager
def on_demand(scenario: Any, run_dir: Any) -> Iterator[str | None]:
    """The job server for ``scenario``: a local cluster of ``ray.local_nodes`` when it asks.

    A cluster of the same shape already recorded in ``$WORKBOOK_CLUSTER_STATE`` and alive is
    used and left running (a suite shares one between consecutive entries). Otherwise one is
    started with its state in the run directory, recorded in ``run.json``, its processes
    carrying the run's own tag (so a crashed run's cluster is found and stopped with the run's
    other processes), and stopped when the run ends. Yields None when the scenario names no
    local cluster (its ``ray.address`` or ``$RAY_ADDRESS`` then apply).
    """
    nodes = getattr(getattr(scenario, "ray", None), "local_nodes", None)
    if scenario.launcher != "ray" or not nodes:
        yield None
        return
    shape = shape_of(scenario)
    shared = load_state()
    if shared is not None and matches(shared, shape) and probe.alive(shared):
        yield shared.dashboard_url
        return
    state_file = Path(run_dir.path) / CLUSTER_FILE
    run_dir.update_run(local_cluster={"state_file": str(state_file),
                                      "temp_dir": str(temp_dir_for(state_file))})
    tag = process_tag(run_dir)  # the run's own: ending the run ends its cluster
    try:
        state = up(state_file=state_file, tag=tag, **shape)
        yield state.dashboard_url
    finally:
        down(state_file, tag=tag)


def device_resource(profile: str) -> str:
    """The Ray resource a profile's devices are counted as (CPU runs borrow verl's "GPU")."""
    return "NPU" if profile == "npu" else "GPU"


def shape_of(scenario: Any) -> dict[str, Any]:
    """What a scenario's local cluster looks like: nodes, logical devices and their resource."""
    return {"nodes": int(scenario.ray.local_nodes), "devices_per_node": scenario.devices_per_node,
            "device_resource": device_resource(scenario.profile),
            # its nodes run verl's workers: the training interpreter's Ray
            "python": interpreter.choose(scenario.profile, scenario.launcher,
                                         getattr(scenario, "python", None))}


def matches(state: ClusterState, shape: dict[str, Any]) -> bool:
    return (state.nodes, state.devices_per_node, state.device_resource) == (
        shape["nodes"], shape["devices_per_node"], shape["device_resource"])
