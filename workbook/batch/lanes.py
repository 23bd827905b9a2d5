"""Where a batch's runs find their local Ray cluster: lanes, each holding at most one at a time.

A batch runs one item per lane at a time. Each lane keeps the local cluster its items ask for
(started with :mod:`workbook.launch.cluster.lifecycle`, its state in the batch directory) and
hands it on to the next item of the same shape, so consecutive runs pay Ray's start once:

* an item whose scenario asks for a local cluster (``launcher: ray`` and ``ray.local_nodes``)
  borrows the lane's cluster through ``$WORKBOOK_CLUSTER_STATE``, as the on-demand policy
  (:mod:`workbook.launch.cluster.on_demand`) looks for it. That variable is one per process, so
  only a batch of one lane shares this way (with several, each such run starts its own);
* with ``host`` (a parallel sweep), a one-node local item runs as a Ray job on its lane's own
  one-node cluster (``launcher=ray``, ``ray.address=...``).

Never two runs on one cluster at once: verl's TransferQueue registers its controller as a
cluster-wide named actor, so a second run on the same cluster attaches to the first one's queue.
A lane's cluster is stopped (by its process tag) when an item wants another shape, or none, and
when the batch ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbook import interpreter
from workbook.core.layout import CLUSTER_FILE, lane_cluster_file
from workbook.errors import InputError

STATE_VARIABLE = "WORKBOOK_CLUSTER_STATE"
HOSTED_CPUS = 32  # logical CPUs of a hosted lane's node: slots for verl's many small actors


@dataclass
class Lane:
    """One lane: its cluster's state file and the shape of the cluster it holds now."""

    state_file: Path
    shape: dict[str, Any] | None = None
    address: str | None = None


class Lanes:
    """``count`` lanes in ``directory`` (one lane's state is ``cluster.json``, several lanes'
    ``cluster-<n>.json``); ``host`` puts one-node local items on their lane's cluster."""

    def __init__(self, directory: Path, count: int = 1, *, host: bool = False) -> None:
        count = max(1, count)
        self.lanes = [Lane(Path(directory) / (CLUSTER_FILE if count == 1 else
                                              lane_cluster_file(n)))
                      for n in range(1, count + 1)]
        self.host = host

    def __len__(self) -> int:
        return len(self.lanes)

    def overrides(self, lane: int, scenario: Any) -> list[str]:
        """Ready lane ``lane`` (0-based) for ``scenario``; the overrides that put it there."""
        held = self.lanes[lane]
        wanted, hosted = self.wanted(scenario)
        if wanted != held.shape:
            self._stop(held)
            if wanted is not None:
                self._start(held, wanted)
        return ["launcher=ray", f"ray.address={held.address}"] if hosted else []

    def wanted(self, scenario: Any) -> tuple[dict[str, Any] | None, bool]:
        """The cluster ``scenario`` runs on in a lane, and whether the lane hosts it as a job."""
        from workbook.launch.cluster.on_demand import device_resource, shape_of

        if scenario.launcher == "ray" and getattr(scenario.ray, "local_nodes", None):
            return (shape_of(scenario) if len(self.lanes) == 1 else None), False
        if self.host and scenario.launcher == "local" and scenario.nodes == 1:
            return {"nodes": 1, "cpus_per_node": HOSTED_CPUS,
                    "devices_per_node": scenario.devices_per_node,
                    "device_resource": device_resource(scenario.profile),
                    "python": interpreter.choose(scenario.profile, scenario.launcher,
                                                 getattr(scenario, "python", None))}, True
        return None, False

    def close(self) -> None:
        """Stop every lane's cluster (by their process tags; never another cluster of the machine)."""
        for held in self.lanes:
            self._stop(held)

    @contextmanager
    def shared(self) -> Iterator[Lanes]:
        """The lanes for a batch: a single lane's cluster is where runs look for one; every
        cluster is stopped at the end, whatever ends the batch."""
        previous = os.environ.get(STATE_VARIABLE)
        if len(self.lanes) == 1:
            os.environ[STATE_VARIABLE] = str(self.lanes[0].state_file)
        try:
            yield self
        finally:
            try:
                self.close()
            finally:
                if len(self.lanes) == 1:
                    if previous is None:
                        os.environ.pop(STATE_VARIABLE, None)
                    else:
                        os.environ[STATE_VARIABLE] = previous

    @staticmethod
    def _start(held: Lane, shape: dict[str, Any]) -> None:
        from workbook.launch.cluster import lifecycle
        from workbook.launch.cluster.on_demand import matches
        from workbook.launch.cluster.state import load_state

        try:  # a cluster a crashed batch left here is reused only when it has this shape
            stale = load_state(held.state_file)
        except InputError:
            stale = None
            held.state_file.unlink(missing_ok=True)
        if stale is not None and not matches(stale, shape):
            lifecycle.down(held.state_file)
        state = lifecycle.up(state_file=held.state_file, **shape)
        held.shape, held.address = shape, state.dashboard_url

    @staticmethod
    def _stop(held: Lane) -> None:
        from workbook.launch.cluster import lifecycle

        if held.shape is not None:
            held.shape, held.address = None, None
            lifecycle.down(held.state_file)
