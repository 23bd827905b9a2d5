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

Cost: with ``parallel`` > 1 the points share one local Ray cluster started once for the sweep
(each point is a Ray job on it, ``parallel`` at a time), instead of each starting its own Ray.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbook.errors import EXIT_RUN_FAILED, InputError, ParamsError
from workbook.runs import RunDir, now_iso, write_atomic

SWEEP_FILE = "sweep.json"
FINISHED = ("passed", "regressed", "failed")
RANK = {"passed": 0, "regressed": 1, "failed": 3, "stopped": 3}


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
        worst = max((RANK.get(p.status, EXIT_RUN_FAILED) for p in self.points), default=0)
        return worst

    def save(self) -> None:
        data = {"params": str(self.params), "grid": self.grid, "sets": self.sets,
                "replay_rollouts": self.replay_rollouts, "updated": now_iso(),
                "comparison": self.comparison, "points": [asdict(p) for p in self.points]}
        write_atomic(self.directory / SWEEP_FILE, json.dumps(data, indent=2) + "\n")


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
    return Path(runs_root) / "sweeps" / params.stem / digest


def plan_sweep(params: Path, grid_items: list[str], sets: list[str], *, replay_rollouts: bool,
               runs_root: Path, directory: Path | None = None) -> Sweep:
    """Expand and validate every point (ParamsError naming the point: nothing starts)."""
    from workbook.params import validate_scenario
    from workbook.pipeline import ensure_profile_ready

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
    from workbook.params import load_scenario

    sweep.directory.mkdir(parents=True, exist_ok=True)
    sweep.save()
    base = load_scenario(sweep.params, sweep.sets, check_files=False)
    todo = [p for p in sweep.points if rerun or p.status not in FINISHED]
    replay = _replay_sets(sweep, base)
    shared = parallel > 1 and base.launcher == "local" and base.nodes == 1
    with _sweep_cluster(sweep, base, parallel if shared else 0) as address:
        extra = [] if address is None else ["launcher=ray", f"ray.address={address}"]
        if replay and todo and todo[0] is sweep.points[0]:
            _run_points(sweep, todo[:1], replay(first=True) + extra, 1, runs_root, echo)
            todo = todo[1:]
        _run_points(sweep, todo, (replay(first=False) if replay else []) + extra,
                    parallel if shared else 1, runs_root, echo)
    _compare(sweep)
    return sweep


def _replay_sets(sweep: Sweep, base: Any) -> Any:
    """The overrides that make every point train on the first point's rollouts, or None."""
    if not sweep.replay_rollouts or base.rollouts.replay:
        return None  # not asked, or the scenario already replays a pinned dump in every point

    def sets(first: bool) -> list[str]:
        if first:
            return ["rollouts.record=true"]
        dump = Path(sweep.points[0].run_dir or "") / "rollouts"
        if not dump.is_dir():
            raise InputError(f"the first point left no rollout dump to replay ({dump})")
        return [f"rollouts.replay={dump}"]

    return sets


def _run_points(sweep: Sweep, points: list[Point], extra: list[str], parallel: int,
                runs_root: Path, echo: bool) -> None:
    """Run ``points`` as ``workbook run`` processes, ``parallel`` at a time, in order."""
    running: list[tuple[Point, subprocess.Popen[bytes], float]] = []
    queue = list(points)
    try:
        while queue or running:
            while queue and len(running) < parallel:
                point = queue.pop(0)
                running.append(_start(sweep, point, extra, runs_root, echo))
            time.sleep(1.0)
            for item in list(running):
                point, proc, t0 = item
                if proc.poll() is not None:
                    running.remove(item)
                    _record(sweep, point, proc.returncode, time.monotonic() - t0)
    except KeyboardInterrupt:  # the points' own workbook processes got the SIGINT too
        for point, proc, t0 in running:
            proc.wait()
            _record(sweep, point, proc.returncode, time.monotonic() - t0)
        raise


def _start(sweep: Sweep, point: Point, extra: list[str], runs_root: Path, echo: bool
           ) -> tuple[Point, subprocess.Popen[bytes], float]:
    from workbook.execution import notebook_for
    from workbook.params import load_scenario

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
    verdict = rd.read_json("checks").get("verdict") or rd.read_json("run").get("verdict") or {}
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
def _sweep_cluster(sweep: Sweep, scenario: Any, slots: int) -> Iterator[str | None]:
    """One local Ray cluster for every point (``slots`` points at a time), or none."""
    if not slots:
        yield None
        return
    from workbook.launch import cluster

    state_file = sweep.directory / "cluster.json"
    try:
        state = cluster.up(1, cpus_per_node=32 * slots,
                           devices_per_node=scenario.devices_per_node * slots,
                           device_resource="NPU" if scenario.profile == "npu" else "GPU",
                           state_file=state_file)
        yield state.dashboard_url
    finally:
        cluster.down(state_file)


def _compare(sweep: Sweep) -> None:
    """Render the comparison of every point that ran (through notebooks/compare.ipynb)."""
    from workbook.report.notebook import execute_comparison

    if not any(p.run_dir for p in sweep.points):
        return
    try:
        sweep.comparison = str(execute_comparison({"sweep": str(sweep.directory)},
                                                  sweep.directory))
    except Exception as exc:  # noqa: BLE001 - the runs stand; the page is reported missing
        print(f"sweep: the comparison page could not be rendered: {exc}", file=sys.stderr)
    sweep.save()
