"""Shared fixtures of the launch tests: one real 2-node local Ray cluster per session.

Started with the workbook's own ``workbook.launch.cluster`` in a private state file (so it has
its own temp dir and ports and never touches another cluster), stopped by PID at the end.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbook.core.layout import RunDir
from workbook.launch.cluster import lifecycle
from workbook.launch.cluster.state import ClusterState


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterState]:
    """A 2-node cluster with 1 logical GPU per node.

    ``WB_TEST_RAY_STATE=<state file>`` reuses a cluster started beforehand with
    ``workbook cluster up --nodes 2 --cpus 4`` (left running; for quick iterations).
    """
    reuse = os.environ.get("WB_TEST_RAY_STATE")
    state_file = Path(reuse) if reuse else tmp_path_factory.mktemp("cluster") / "cluster.json"
    state = lifecycle.up(
        2, cpus_per_node=4, devices_per_node=1, device_resource="GPU", state_file=state_file
    )
    try:
        yield state
    finally:
        if not reuse:
            lifecycle.down(state_file)
            shutil.rmtree(state.temp_dir, ignore_errors=True)  # Ray's session logs


@pytest.fixture
def run_dir(tmp_path: Path) -> RunDir:
    return RunDir.create(tmp_path / "runs", "ray-test")
