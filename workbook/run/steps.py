"""The steps a notebook cell (or ``workbook run``) calls, one per cell: prepare, launch, judge,
finish (``pipeline.<step>`` in the notebooks).

Each step reads and writes the run directory, so a notebook re-opened later, ``workbook
report`` or ``workbook check`` can pick up from whatever the last step left. Preparing and
launching are here; judging and finishing are :mod:`workbook.run.life`'s, the one place that
closes a run, each step once. So JupyterLab, plain papermill and ``workbook run`` leave the
same run directory.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook import interpreter
from workbook.command.plan import Plan
from workbook.core.layout import RunDir, default_root, write_redacted
from workbook.core.project import find_scenario
from workbook.core.serialization import dump_yaml
from workbook.core.status import RunStatus
from workbook.errors import WorkbookError
from workbook.launch.launcher import Launcher, plugin_dir, python_for
from workbook.launch.launchers import LAUNCHERS, launcher_of, path_variables
from workbook.launch.leftovers import owner_record
from workbook.launch.outcome import Outcome
from workbook.launch.processes import TAG_KEY, new_tag, process_tag
from workbook.params import Scenario
from workbook.run.life import DRIVEN, Finished, close, driven, finish, judge, record_outcome
from workbook.scenario import load_scenario, ready_to_launch, validate_scenario


@dataclass
class Run:
    """A prepared run: its scenario, directory and exact command."""

    scenario: Scenario
    scenario_file: Path
    run_dir: RunDir
    plan: Plan
    sets: list[str] = field(default_factory=list)

    def _repr_html_(self) -> str:
        return (f"<p>Run <code>{self.run_dir.run_id}</code> of <b>{self.scenario.name}</b> "
                f"({self.scenario.profile}, {self.scenario.nodes}x{self.scenario.devices_per_node} devices, "
                f"{self.scenario.total_training_steps} steps) in <code>{self.run_dir.path}</code></p>")


def settings_to_sets(settings: dict[str, Any] | None) -> list[str]:
    """Notebook parameters (None = keep the scenario's value) as ``key=value`` overrides."""
    return [f"{k}={v}" for k, v in (settings or {}).items() if v is not None]


def plan_for(s: Scenario, run_dir: Path) -> Plan:
    """The exact command of a run into ``run_dir``, as its launcher makes it."""
    return LAUNCHERS[s.launcher].plan(s, Path(run_dir))


def ensure_profile_ready(scenario_file: Path, sets: Iterable[str]) -> None:
    """Build the tiny CPU assets and import shims before validation looks for them."""
    from workbook.params.loader import resolve

    data, _ = resolve(scenario_file, sets)
    if data.get("profile") == "cpu":
        from workbook.profiles.cpu.assets import ensure_assets_with
        from workbook.profiles.cpu.pythonpath import prepare_plugin_path

        python = interpreter.choose("cpu", str(data.get("launcher") or "local"),
                                    data.get("python") if isinstance(data.get("python"), str) else None)
        ensure_assets_with(python)  # built by the training environment (torch is its)
        prepare_plugin_path(plugin_dir(), python=python)


def prepare(
    scenario: str | Path,
    *,
    overrides: Iterable[str] = (),
    settings: dict[str, Any] | None = None,
    run_dir: str | Path = "",
    run_root: str | Path = "",
    notebook: str = "",
    announce: bool = True,
) -> Run:
    """Validate the scenario, create (or adopt) the run directory and write the command.

    ``scenario`` resolves against the project, not the working directory (a JupyterLab kernel
    runs in ``notebooks/``); runs land under ``run_root``, else the one runs root
    (``$WORKBOOK_RUNS`` or the project's ``runs/``). ``notebook`` names the template the run's
    report is rendered with (the calling notebook says its own name). ``announce`` prints the
    run directory to the terminal the run was started from (unless ``workbook run`` drives it).
    The launcher the scenario names makes the command and writes what it needs (a KubeRay run's
    RayJob, with the pods' paths and which machine each fact is about).
    """
    scenario_file = find_scenario(scenario)
    sets = settings_to_sets(settings) + list(overrides)
    s = load_for_run(scenario_file, sets)
    if run_dir:
        rd = RunDir(Path(run_dir).resolve())
        rd.path.mkdir(parents=True, exist_ok=True)
    else:
        rd = RunDir.create(Path(run_root).resolve() if run_root else default_root(), s.name)
    launcher = launcher_of(s, rd.run_id)
    plan = launcher.plan(s, rd.path)
    write_redacted(rd.file("params"), dump_yaml(s.model_dump(mode="json")))
    facts = launcher.prepare(s, plan, rd)
    rd.update_run(**{
        "run_id": rd.run_id,
        "scenario": s.name,
        "scenario_file": str(scenario_file),
        "status": RunStatus.PREPARED.value,
        "launcher": s.launcher,
        "profile": s.profile,
        "deterministic": s.deterministic,
        "nodes": s.nodes,
        "devices_per_node": s.devices_per_node,
        "expected_steps": s.total_training_steps,
        "adv_estimator": s.adv_estimator,
        "policy_loss": s.policy_loss,
        "clip_ratio_low": s.clip_ratio_low,
        "clip_ratio_high": s.clip_ratio_high,
        "overrides": sets,
        "runs_root": str(Path(run_root).resolve() if run_root else default_root()),
        "notebook": notebook,
        "notebook_parameters": {"scenario": str(scenario), "overrides": list(overrides),
                                "settings": settings or {}},
        **facts,
        TAG_KEY: new_tag(),  # carried by every process the run starts
        **owner_record(),  # who drives it from now on: only that process ends it
    })
    if announce and not driven():
        print(f"workbook: run directory {rd.path}", file=sys.__stderr__, flush=True)
    return Run(s, scenario_file, rd, plan, sets)


def load_for_run(scenario_file: Path, sets: list[str]) -> Scenario:
    """The scenario as a run needs it: what ``workbook validate`` checks, its data prepared and
    the files it reads here looked for. A scenario whose paths are another machine's (its
    launcher's variables: a KubeRay run's pods) is loaded with them, and nothing of theirs is
    looked for here."""
    from workbook.params.loader import resolve

    variables = path_variables(resolve(scenario_file, sets)[0].get("launcher"))
    if variables is not None:
        return load_scenario(scenario_file, sets, check_files=False, check_verl=True,
                             variables=variables)
    ensure_profile_ready(scenario_file, sets)
    s = validate_scenario(scenario_file, sets)  # what `workbook validate` checks, verl's too
    ready_to_launch(s, python=python_for(s))  # data: prepared; model, data, checkout here
    return s


def launcher_for(run: Run, address: str | None = None) -> Launcher:
    """The launcher the scenario names for this run, aimed at ``address`` (a Ray job server)."""
    return launcher_of(run.scenario, run.run_dir.run_id, address)


def launch(run: Run, *, live: bool = True, echo: bool = False) -> Outcome:
    """Run verl and follow it live (status, log tail, per-step plots), then record how it ended.

    A local Ray cluster the scenario asks for (``ray.local_nodes``) is started first and stopped
    after, unless one of that shape is already up (a suite keeps one for consecutive entries).
    The machine's conditions are recorded when the launcher says its processes ran here.
    """
    from workbook.launch.cluster.on_demand import on_demand
    from workbook.launch.conditions import watching
    from workbook.metrics.live import ChunkReader

    reader = ChunkReader()
    view = None
    if live:
        from workbook.plots.live import LiveView

        view = LiveView(clip_ratio_low=run.scenario.clip_ratio_low,
                        clip_ratio_high=run.scenario.clip_ratio_high,
                        total_steps=run.scenario.total_training_steps,
                        echo=not driven())
        view.start()

    def on_line(line: str) -> None:
        if echo:
            print(line, flush=True)
        reader.feed_line(line)
        if view is not None:
            view.line(line, reader.metrics)

    try:
        with on_demand(run.scenario, run.run_dir) as address:
            launcher = launcher_for(run, address)
            with watching(tags_of(run.run_dir)) as watch:  # what else used the machine
                outcome = launcher.run(run.plan, run.run_dir, on_line=on_line,
                                       timeout_s=run.scenario.timeout_s)
            conditions = watch.stop()
    finally:
        if view is not None:
            view.close(reader.metrics)
    record_outcome(run.run_dir, outcome, expected_steps=run.scenario.total_training_steps,
                   conditions=conditions.to_dict() if launcher.ran_here() else None)
    return outcome


def tags_of(rd: RunDir) -> list[str]:
    """Process tags of the run (a local Ray cluster it starts carries it too) and of a suite's
    shared cluster it may borrow: their processes are the run's, though not its descendants."""
    from workbook.launch.cluster.state import load_state

    try:
        shared = load_state()
    except WorkbookError:  # not a state file: no cluster to borrow
        shared = None
    return [process_tag(rd), *([shared.tag] if shared is not None else [])]


__all__ = ["DRIVEN", "Finished", "Run", "close", "driven", "finish", "judge", "launch",
           "prepare", "record_outcome"]
