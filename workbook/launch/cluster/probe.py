"""What a recorded cluster's dashboard says now: whether it is alive, and its nodes.

Asked by ``up`` (an alive cluster is reused), by the on-demand policy (an alive shared cluster
is borrowed) and by ``workbook cluster status``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbook.errors import LaunchError
from workbook.launch import ray_client
from workbook.launch.cluster.state import ClusterState, default_state_file, load_state


def alive(state: ClusterState) -> bool:
    try:
        return any(
            n.alive
            for n in ray_client.list_nodes(state.dashboard_url, ray_client.auth_token(), 5.0)
        )
    except LaunchError:
        return False


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
