"""The state file of a local cluster: what ``up`` started, for ``status`` and ``down`` elsewhere.

The file (``$WORKBOOK_CLUSTER_STATE`` or ``~/.cache/verl-workbook/cluster.json`` unless a caller
names another) also fixes the cluster's temp dir, so two state files never share Ray processes,
and records the tag every process of the cluster carries. ``down`` acts only on a file of that
form (:func:`~workbook.launch.cluster.lifecycle.not_ours` says why another is refused): a
hand-written ``temp_dir`` of ``/`` or ``/tmp`` named every process on the machine when processes
were matched by their command line.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbook.core.layout import write_atomic
from workbook.core.textfile import read_text
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
    tag: str = ""  # carried by every process of the cluster (workbook.launch.processes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterState:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def load_state(state_file: Path | None = None) -> ClusterState | None:
    """The recorded cluster, None when no file is there; InputError (exit 2) naming the file when
    it is not a regular file (a FIFO would block the read), too large or not a state file."""
    path = Path(state_file or default_state_file())
    if not path.exists() and not path.is_symlink():
        return None
    text = read_text(path, what="cluster state file")
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise TypeError(f"holds a JSON {type(data).__name__}, not an object")
        return ClusterState.from_dict(data)
    except (ValueError, TypeError) as exc:
        raise InputError(f"{path}: not a cluster state file ({exc}); remove it") from None


def save_state(state: ClusterState, state_file: Path) -> None:
    write_atomic(state_file, json.dumps(state.to_dict(), indent=2) + "\n")
