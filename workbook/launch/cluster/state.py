"""The state file of a local cluster: what ``up`` started, for ``status`` and ``down`` elsewhere.

The file (``$WORKBOOK_CLUSTER_STATE`` or ``~/.cache/verl-workbook/cluster.json`` unless a caller
names another) also fixes the cluster's temp dir, so two state files never share Ray processes.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbook.core.layout import write_atomic
from workbook.errors import InputError


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


def save_state(state: ClusterState, state_file: Path) -> None:
    write_atomic(state_file, json.dumps(state.to_dict(), indent=2) + "\n")
