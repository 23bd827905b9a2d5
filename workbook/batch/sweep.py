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
its own Ray (:mod:`workbook.batch.lanes`; one verl run per cluster, see there). Running,
resuming, signals and records are :mod:`workbook.batch.engine`'s, as for a suite.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.batch.engine import Batch, Engine, Execute, Item, validate_items
from workbook.batch.lanes import Lanes
from workbook.batch.records import BatchFile, Record
from workbook.core.layout import ROLLOUTS_DIR, SWEEP_FILE, SWEEPS_DIR
from workbook.errors import InputError


@dataclass
class Point:
    """One combination of the grid, and its record."""

    key: str
    values: dict[str, str]
    record: Record = field(init=False)

    def __post_init__(self) -> None:
        self.record = Record(self.key, about={"values": dict(self.values)})

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
    interrupted: bool = False
    batch: Batch = field(init=False)

    def __post_init__(self) -> None:
        items = [_item(self.params, self.sets, p) for p in self.points]
        self.batch = Batch("sweep", self.directory, items,
                           BatchFile(self.directory / SWEEP_FILE, "points"), self._header)
        for point, record in zip(self.points, self.batch.records, strict=True):
            point.record = record  # resumed from sweep.json when the sweep ran before

    @property
    def exit_code(self) -> int:
        return self.batch.exit_code

    def save(self) -> None:
        self.batch.save()

    def _header(self) -> dict[str, Any]:
        return {"params": str(self.params), "grid": self.grid, "sets": self.sets,
                "replay_rollouts": self.replay_rollouts, "comparison": self.comparison}


def _item(params: Path, sets: list[str], point: Point) -> Item:
    """A point as the engine runs it: the sweep's overrides, then the point's."""
    shown = point.sets()
    return Item(point.key, params, list(sets) + shown, label=f"point {point.key} ({', '.join(shown)})",
                title=f"point {point.key}: {' '.join(shown)}", about={"values": dict(point.values)})


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
    """Expand and validate every point (ParamsError naming the point: nothing starts); the
    points' records are taken over from an earlier run of the same sweep."""
    grid = parse_grid(grid_items)
    points = points_of(grid)
    folder = Path(directory or sweep_dir(params, grid, sets, replay_rollouts, runs_root))
    validate_items([_item(params, sets, p) for p in points], source="sweep")
    return Sweep(params, grid, list(sets), replay_rollouts, folder.resolve(), points)


def run_sweep(sweep: Sweep, *, runs_root: Path, parallel: int = 1, rerun: bool = False,
              echo: bool = False, execute: Execute | None = None) -> Sweep:
    """Run the points not finished yet (see the module docstring), then the comparison page
    (not when the sweep was stopped)."""
    from workbook.scenario import load_scenario

    sweep.directory.mkdir(parents=True, exist_ok=True)
    sweep.save()
    base = load_scenario(sweep.params, sweep.sets, check_files=False)
    batch = sweep.batch
    todo = batch.todo(rerun=rerun)
    count = min(parallel, len(todo))  # a finished sweep starts no cluster
    host = count > 1 and base.launcher == "local" and base.nodes == 1
    replay = _replay_sets(sweep, base)
    lanes = Lanes(sweep.directory, count if host else 1, host=host)
    with Engine(batch, runs_root=runs_root, lanes=lanes, echo=echo, execute=execute) as engine:
        if replay and todo and todo[0] is batch.items[0]:
            engine.run(todo[:1], rerun=rerun, extra=replay(first=True))
            todo = todo[1:]
        if todo and not engine.interrupted:
            engine.run(todo, rerun=rerun, extra=replay(first=False) if replay else [])
    sweep.interrupted = engine.interrupted
    if not sweep.interrupted:
        _compare(sweep)
    return sweep


def _replay_sets(sweep: Sweep, base: Any) -> Callable[..., list[str]] | None:
    """The overrides that make every point train on the first point's rollouts, or None."""
    if not sweep.replay_rollouts or base.rollouts.replay:
        return None  # not asked, or the scenario already replays a pinned dump in every point

    def sets(first: bool) -> list[str]:
        if first:
            return ["rollouts.record=true"]
        dump = Path(sweep.points[0].record.run_dir or "") / ROLLOUTS_DIR
        if not dump.is_dir():
            raise InputError(f"the first point left no rollout dump to replay ({dump})")
        return [f"rollouts.replay={dump}"]

    return sets


def _compare(sweep: Sweep) -> None:
    """Render the comparison of every point that ran (through notebooks/compare.ipynb)."""
    from workbook.run.notebook import execute_comparison

    if not any(p.record.run_dir for p in sweep.points):
        return
    try:
        sweep.comparison = str(execute_comparison({"sweep": str(sweep.directory)},
                                                  sweep.directory))
    except Exception as exc:  # noqa: BLE001 - the runs stand; the page is reported missing
        print(f"sweep: the comparison page could not be rendered: {exc}", file=sys.stderr)
    sweep.save()
