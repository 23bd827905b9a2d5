"""The machine's conditions while a run trained: how busy it was with work that was not the run's.

A timing (step time, actor update, generation) measured on a shared machine depends on what
else ran there. So every run whose processes ran on this machine (its launcher says whether they
did: ``Launcher.ran_here``) records, beside its metrics, what the machine gave it:

- ``others_cores``: CPU the machine spent on processes that are not the run's, in cores on
  average over the run (the machine's busy CPU time, from the kernel's counters, less the CPU
  time of the run's own processes: the launcher's descendants and those carrying the run's or
  its Ray cluster's process tag);
- ``run_cores``: the run's own processes, in cores;
- ``steal_cores``: CPU a hypervisor took from this VM;
- ``load_1m``: the mean one-minute load average while it ran;
- ``calibration_s`` and ``calibration_after_s``: a fixed single-threaded workload timed just
  before the run and just after it (best of three each), which moves with the CPU's speed
  (frequency, a slower machine of the same model, a host busy with other VMs), not with what
  else runs on another core;
- ``cpu``: the CPU's name with its family and model numbers (:func:`provenance.cpu_identity`),
  since a cloud VM's name alone ("AMD EPYC") does not tell one generation from another.

The checks compare these with the baseline's own (``bless`` records them) before they compare
timings: see :mod:`workbook.checks.conditions`.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from workbook import provenance
from workbook.launch import processes

INTERVAL_S = 2.0  # a snapshot of ~150 processes costs ~30 ms of CPU
CLUSTER_EVERY = 5  # samples between scans for tagged processes (reading environments is dear)
CALIBRATION_BYTES = 4 << 20
CALIBRATION_ROUNDS = 8


@dataclass
class Conditions:
    """What the machine gave a run; see the module docstring."""

    wall_s: float
    cpus: int
    run_cores: float
    others_cores: float
    steal_cores: float
    load_1m: float
    calibration_s: float | None = None
    calibration_after_s: float | None = None
    cpu: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: round(v, 4) if isinstance(v, float) else v
                for k, v in asdict(self).items() if v is not None}


def calibrate() -> float:
    """Seconds a fixed single-threaded workload takes here now (best of three)."""
    data = os.urandom(CALIBRATION_BYTES)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(CALIBRATION_ROUNDS):
            hashlib.sha256(data).digest()
        best = min(best, time.perf_counter() - t0)
    return best


class Watch:
    """Samples every process's CPU time while a run goes; :meth:`result` when it ended."""

    def __init__(self, root: int, tags: Sequence[str] = ()) -> None:
        self.root = root
        self.tags = [t for t in tags if t]
        self._first: dict[tuple[int, float], float] = {}
        self._last: dict[tuple[int, float], float] = {}
        self._ours: set[tuple[int, float]] = set()
        self._loads: list[float] = []
        self._cluster: set[int] = set()
        self._samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="workbook-conditions", daemon=True)
        self.calibration_s: float | None = None
        self.calibration_after_s: float | None = None
        self.calibrate_after = False
        self._start = time.monotonic()
        snapshot, self._busy0, self._steal0 = processes.cpu_snapshot()
        self._busy1, self._steal1 = self._busy0, self._steal0
        self._take(snapshot, first=True)

    def start(self) -> Watch:
        self._start = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> Conditions:
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(timeout=10)
            self._sample()
            if self.calibrate_after:  # the CPU's speed may have changed while the run went
                self.calibration_after_s = calibrate()
        return self.result()

    def result(self) -> Conditions:
        wall = max(time.monotonic() - self._start, 1e-9)
        ours = sum(self._last[k] - self._first.get(k, 0.0) for k in self._ours if k in self._last)
        busy = self._busy1 - self._busy0
        return Conditions(
            wall_s=wall,
            cpus=processes.cpu_count(),
            run_cores=ours / wall,
            others_cores=max(0.0, busy - ours) / wall,
            steal_cores=max(0.0, self._steal1 - self._steal0) / wall,
            load_1m=statistics.fmean(self._loads) if self._loads else processes.load_average(),
            calibration_s=self.calibration_s,
            calibration_after_s=self.calibration_after_s,
            cpu=provenance.cpu_identity(),
        )

    def _loop(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self._sample()

    def _sample(self) -> None:
        try:
            snapshot, self._busy1, self._steal1 = processes.cpu_snapshot()
            self._loads.append(processes.load_average())
        except OSError:
            return
        self._take(snapshot, first=False)

    def _take(self, snapshot: dict[tuple[int, float], tuple[int, float]], *, first: bool) -> None:
        parents = {pid: ppid for (pid, _), (ppid, _) in snapshot.items()}
        roots = {self.root} | self._cluster_pids(snapshot)
        for key, (_, cpu) in snapshot.items():
            if first:
                self._first[key] = cpu  # CPU spent before the run is not the run's
            elif key not in self._first:
                self._first[key] = 0.0  # started during the run: all of its CPU is
            self._last[key] = cpu
            if key not in self._ours and _descends(key[0], roots, parents):
                self._ours.add(key)

    def _cluster_pids(self, snapshot: dict[tuple[int, float], tuple[int, float]]) -> set[int]:
        """The run's processes that are not its descendants (a Ray cluster's GCS and raylets),
        found by their tags now and then; whatever descends from them is the run's too."""
        if self.tags and self._samples % CLUSTER_EVERY == 0:
            self._cluster = {p.pid for tag in self.tags for p in processes.tagged(tag)}
        self._samples += 1
        return self._cluster


def _descends(pid: int, roots: set[int], parents: dict[int, int]) -> bool:
    seen = 0
    while pid and seen < 256:
        if pid in roots:
            return True
        pid = parents.get(pid, 0)
        seen += 1
    return False


@contextmanager
def watching(tags: Sequence[str] = (), *, calibrate_first: bool = True) -> Iterator[Watch]:
    """Watch the machine around a launch: ``with watching() as watch: ...; watch.stop()``;
    processes carrying one of ``tags`` are the run's too."""
    calibration = calibrate() if calibrate_first else None
    watch = Watch(os.getpid(), tags)
    watch.calibration_s = calibration
    watch.calibrate_after = calibrate_first
    watch.start()
    try:
        yield watch
    finally:
        watch.stop()
