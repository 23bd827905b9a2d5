"""Sweeps: one scenario over a grid of settings, compared fairly on one page.

``workbook sweep PARAMS --grid clip_ratio_high=4e-4,6e-4,8e-4 [--grid clip_ratio_low=...]``
expands the grid (every combination, in the order given), validates every point before any
starts, and runs each point into its own run directory under one sweep directory
(``<runs>/sweeps/<scenario>/<id>``, the id a hash of the command so running it again resumes,
skipping finished points). ``sweep.json`` records points, run directories and verdicts; a failed
point does not stop the others; the comparison page is rendered at the end.

Fair comparison: two points should differ in the swept setting and nothing else, the rollouts
they train on included. With ``replay_rollouts`` the first point dumps its rollouts and every
other point replays them (verl's own rollout skip); a scenario that pins a dump already replays
it in every point.

Cost: with ``parallel`` N > 1 the sweep starts N one-node local Ray clusters, one after another,
and runs N points at a time, each a Ray job on a free cluster, instead of every point starting
its own Ray. One verl run per cluster: verl's TransferQueue registers its controller as a
cluster-wide named actor (``TransferQueueController`` in namespace ``transfer_queue``), so a
second run on the same cluster attaches to the first one's queue, mixes its data and hangs when
the first ends.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbook.checks.verdict import FINISHED, exit_code_of
from workbook.core.layout import (
    ROLLOUTS_DIR,
    SWEEP_FILE,
    SWEEPS_DIR,
    RunDir,
    lane_cluster_file,
    now_iso,
    write_json,
)
from workbook.errors import InputError, ParamsError


@dataclass
class Point:
    """One combination of the grid."""

    key: str
    values: dict[str, str]
    status: str = "pending"
    run_dir: str | None = None
    exit_code: int | None = None
    reason: str = ""
    duration_s: float | None = None
    report: str | None = None

    def sets(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.values.items()]


@dataclass
class Sweep:
    params: Path
    grid: dict[str, list[str]]
    sets: list[str]
    replay_rollouts: bool
    directory: Path
    points: list[Point] = field(default_factory=list)
    comparison: str | None = None

    @property
    def exit_code(self) -> int:
        return max((exit_code_of(p.status) for p in self.points), default=0)

    def save(self) -> None:
        data = {"params": str(self.params), "grid": self.grid, "sets": self.sets,
                "replay_rollouts": self.replay_rollouts, "updated": now_iso(),
                "comparison": self.comparison, "points": [asdict(p) for p in self.points]}
        write_json(self.directory / SWEEP_FILE, data)


def parse_grid(items: list[str]) -> dict[str, list[str]]:
    """``["clip_ratio_high=4e-4,6e-4"]`` -> ``{"clip_ratio_high": ["4e-4", "6e-4"]}``."""
    grid: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        options = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not key or not options:
            raise InputError(f"--grid {item!r}: expected KEY=V1,V2,...")
        if key in grid:
            raise InputError(f"--grid {key} is given twice")
        grid[key] = options
    if not grid:
        raise InputError("a sweep needs at least one --grid KEY=V1,V2,...")
    return grid


def points_of(grid: dict[str, list[str]]) -> list[Point]:
    keys = list(grid)
    points = []
    for index, combo in enumerate(itertools.product(*(grid[k] for k in keys)), start=1):
        values = dict(zip(keys, combo, strict=True))
        label = "-".join(f"{k.rsplit('.', 1)[-1]}{v}" for k, v in values.items())
        points.append(Point(f"{index:02d}-{label}", values))
    return points


def sweep_dir(params: Path, grid: dict[str, list[str]], sets: list[str], replay: bool,
              runs_root: Path) -> Path:
    """``<runs>/sweeps/<scenario>/<hash of the command>``: the same sweep resumes there."""
    digest = hashlib.sha1(json.dumps([str(params), grid, sets, replay]).encode()).hexdigest()[:10]
    return Path(runs_root) / SWEEPS_DIR / params.stem / digest


def plan_sweep(params: Path, grid_items: list[str], sets: list[str], *, replay_rollouts: bool,
               runs_root: Path, directory: Path | None = None) -> Sweep:
    """Expand and validate every point (ParamsError naming the point: nothing starts)."""
    from workbook.run.steps import ensure_profile_ready
    from workbook.scenario import validate_scenario

    grid = parse_grid(grid_items)
    sweep = Sweep(params, grid, list(sets), replay_rollouts,
                  Path(directory or sweep_dir(params, grid, sets, replay_rollouts,
                                              runs_root)).resolve(), points_of(grid))
    problems: list[tuple[str, str]] = []
    for point in sweep.points:
        point_sets = sweep.sets + point.sets()
        try:
            ensure_profile_ready(params, point_sets)
            validate_scenario(params, point_sets)
        except ParamsError as exc:
            problems += [(f"point {point.key} ({', '.join(point.sets())}): {f or '<scenario>'}",
                          m) for f, m in exc.problems]
    if problems:
        raise ParamsError(problems, "sweep")
    _resume(sweep)
    return sweep


def run_sweep(sweep: Sweep, *, runs_root: Path, parallel: int = 1, rerun: bool = False,
              echo: bool = False) -> Sweep:
    """Run the points not finished yet (see the module docstring), then the comparison page."""
    from workbook.scenario import load_scenario

    sweep.directory.mkdir(parents=True, exist_ok=True)
    sweep.save()
    base = load_scenario(sweep.params, sweep.sets, check_files=False)
    todo = [p for p in sweep.points if rerun or p.status not in FINISHED]
    replay = _replay_sets(sweep, base)
    lanes_needed = min(parallel, len(todo))  # a finished sweep starts no cluster
    shared = lanes_needed > 1 and base.launcher == "local" and base.nodes == 1
    with _sweep_clusters(sweep, base, lanes_needed if shared else 0) as addresses:
        lanes = [["launcher=ray", f"ray.address={a}"] for a in addresses] or [[]]
        if replay and todo and todo[0] is sweep.points[0]:
            _run_points(sweep, todo[:1], replay(first=True), lanes[:1], runs_root, echo)
            todo = todo[1:]
        _run_points(sweep, todo, replay(first=False) if replay else [], lanes, runs_root, echo)
    _compare(sweep)
    return sweep


def _replay_sets(sweep: Sweep, base: Any) -> Any:
    """The overrides that make every point train on the first point's rollouts, or None."""
    if not sweep.replay_rollouts or base.rollouts.replay:
        return None  # not asked, or the scenario already replays a pinned dump in every point

    def sets(first: bool) -> list[str]:
        if first:
            return ["rollouts.record=true"]
        dump = Path(sweep.points[0].run_dir or "") / ROLLOUTS_DIR
        if not dump.is_dir():
            raise InputError(f"the first point left no rollout dump to replay ({dump})")
        return [f"rollouts.replay={dump}"]

    return sets


def _run_points(sweep: Sweep, points: list[Point], sets: list[str], lanes: list[list[str]],
                runs_root: Path, echo: bool) -> None:
    """Run ``points`` as ``workbook run`` processes in order, one per lane at a time.

    A lane is the overrides that put a point on its own cluster (none: the point starts its own).
    SIGINT or SIGTERM stops launching, passes the stop on to the running points (their reports
    still follow) and ends in KeyboardInterrupt once they have finished.
    """
    running: dict[int, tuple[Point, subprocess.Popen[bytes], float]] = {}
    queue = list(points)
    with _forwarding_stop(running) as stopping:
        while (queue and not stopping) or running:
            for lane, extra in enumerate(lanes):
                if queue and not stopping and lane not in running:
                    running[lane] = _start(sweep, queue.pop(0), sets + extra, runs_root, echo)
            time.sleep(1.0)
            for lane, (point, proc, t0) in list(running.items()):
                if proc.poll() is not None:
                    del running[lane]
                    _record(sweep, point, proc.returncode, time.monotonic() - t0)
    if stopping:
        raise KeyboardInterrupt


@contextmanager
def _forwarding_stop(running: dict[int, tuple[Point, subprocess.Popen[bytes], float]]
                     ) -> Iterator[list[str]]:
    """Collect SIGINT/SIGTERM (the yielded list fills) and pass each on to the running points.

    A terminal's Ctrl-C reaches the points already (same process group); a ``kill`` or a CI
    runner's SIGTERM reaches only the sweep. A point asked twice stops once.
    """
    stopping: list[str] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signal.Signals(signum).name)
        print(f"\nsweep: stopping ({stopping[-1]}); no new points, the running ones stop",
              file=sys.stderr, flush=True)
        for _point, proc, _t0 in running.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopping
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _start(sweep: Sweep, point: Point, extra: list[str], runs_root: Path, echo: bool
           ) -> tuple[Point, subprocess.Popen[bytes], float]:
    from workbook.run.driver import notebook_for
    from workbook.scenario import load_scenario

    scenario = load_scenario(sweep.params, sweep.sets, check_files=False)
    rd = RunDir.create(sweep.directory, point.key)
    point.status, point.run_dir = "running", str(rd.path)
    sweep.save()
    sets = sweep.sets + point.sets() + extra
    argv = [sys.executable, "-m", "workbook", "run", str(sweep.params), "--run-dir", str(rd.path),
            "--runs", str(runs_root), "--notebook", str(notebook_for(scenario.launcher))]
    for item in sets:
        argv += ["-s", item]
    if not echo:
        argv.append("--quiet")
    print(f"sweep: point {point.key}: {' '.join(point.sets())} -> {rd.path}", flush=True)
    out = None if echo else subprocess.DEVNULL
    return point, subprocess.Popen(argv, stdout=out, stderr=out), time.monotonic()


def _record(sweep: Sweep, point: Point, code: int, seconds: float) -> None:
    rd = RunDir(Path(point.run_dir or ""))
    verdict = rd.verdict()
    point.status = str(verdict.get("status") or ("stopped" if code in (-2, 130) else "failed"))
    point.exit_code = code
    point.reason = str(verdict.get("reason") or f"workbook run exited {code}")
    point.duration_s = round(seconds, 1)
    report = rd.file("report")
    point.report = str(report) if report.is_file() else None
    sweep.save()


def _resume(sweep: Sweep) -> None:
    """Take over what an earlier run of the same sweep recorded (a running point runs again)."""
    try:
        data = json.loads((sweep.directory / SWEEP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    known = {p["key"]: p for p in data.get("points", []) if isinstance(p, dict)}
    for point in sweep.points:
        old = known.get(point.key)
        if old and old.get("status") in FINISHED:
            point.status, point.run_dir = old["status"], old.get("run_dir")
            point.exit_code, point.reason = old.get("exit_code"), old.get("reason", "")
            point.duration_s, point.report = old.get("duration_s"), old.get("report")


@contextmanager
def _sweep_clusters(sweep: Sweep, scenario: Any, count: int) -> Iterator[list[str]]:
    """``count`` one-node local Ray clusters, started one after another; their addresses."""
    from workbook.launch.cluster import lifecycle
    from workbook.launch.cluster.on_demand import device_resource

    state_files: list[Path] = []
    try:
        addresses = []
        for lane in range(1, count + 1):
            state_files.append(sweep.directory / lane_cluster_file(lane))
            state = lifecycle.up(1, cpus_per_node=32, devices_per_node=scenario.devices_per_node,
                                 device_resource=device_resource(scenario.profile),
                                 state_file=state_files[-1])
            addresses.append(state.dashboard_url)
        yield addresses
    finally:
        for state_file in state_files:
            lifecycle.down(state_file)


def _compare(sweep: Sweep) -> None:
    """Render the comparison of every point that ran (through notebooks/compare.ipynb)."""
    from workbook.run.notebook import execute_comparison

    if not any(p.run_dir for p in sweep.points):
        return
    try:
        sweep.comparison = str(execute_comparison({"sweep": str(sweep.directory)},
                                                  sweep.directory))
    except Exception as exc:  # noqa: BLE001 - the runs stand; the page is reported missing
        print(f"sweep: the comparison page could not be rendered: {exc}", file=sys.stderr)
    sweep.save()
