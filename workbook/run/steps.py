"""The steps a notebook cell (or ``workbook run``) calls, one per cell: prepare, launch, judge,
finish (``pipeline.<step>`` in the notebooks).

Each step reads and writes the run directory, so a notebook re-opened later, ``workbook
report`` or ``workbook check`` can pick up from whatever the last step left. Preparing and
launching are here; judging and finishing are :mod:`workbook.run.life`'s, the one place that
closes a run, each step once. So JupyterLab, plain papermill and ``workbook run`` leave the
same run directory.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook import interpreter, provenance
from workbook.command import as_json, as_shell, build_plan
from workbook.command.builder import ROLLOUTS_DIR
from workbook.command.plan import Plan
from workbook.core.layout import RunDir, default_root, write_redacted
from workbook.core.project import find_scenario
from workbook.core.serialization import dump_yaml
from workbook.core.status import RunStatus
from workbook.errors import WorkbookError
from workbook.launch.launcher import Launcher
from workbook.launch.leftovers import owner_record
from workbook.launch.outcome import Outcome
from workbook.launch.processes import TAG_KEY, new_tag, process_tag
from workbook.params import Scenario
from workbook.run.life import DRIVEN, Finished, close, driven, finish, judge, record_outcome
from workbook.scenario import ready_to_launch, validate_scenario


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


def python_for(s: Scenario) -> str:
    """The training interpreter: ``--python``/``$WORKBOOK_PYTHON``, else the scenario's
    ``python:``, else the profile's (``cpu``: this very environment; accelerator images and
    every KubeRay pod bring their own ``python3``)."""
    return interpreter.choose(s.profile, s.launcher, s.python)


def plugin_dir() -> Path:
    """Where the CPU profile's import shims live (beside the tiny assets)."""
    from workbook.params import assets_dir

    return assets_dir() / "pythonpath"


def plan_for(s: Scenario, run_dir: Path) -> Plan:
    """The exact command of a run into ``run_dir``; a KubeRay run's is the pods', into their
    own run folder of the same run id."""
    if s.launcher == "kuberay":
        from workbook.launch.kuberay.pods import pod_plan

        return pod_plan(s, Path(run_dir).name)
    plugin = str(plugin_dir()) if s.profile == "cpu" else None
    return build_plan(s, run_dir, python=python_for(s), plugin_path=plugin)


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
    rayjob_name: str = "",
    announce: bool = True,
) -> Run:
    """Validate the scenario, create (or adopt) the run directory and write the command.

    ``scenario`` resolves against the project, not the working directory (a JupyterLab kernel
    runs in ``notebooks/``); runs land under ``run_root``, else the one runs root
    (``$WORKBOOK_RUNS`` or the project's ``runs/``). ``notebook`` names the template the run's
    report is rendered with (the calling notebook says its own name). ``announce`` prints the
    run directory to the terminal the run was started from (unless ``workbook run`` drives it).

    A ``launcher: kuberay`` run is the pods': its scenario is loaded with their paths (their
    ``${HOME}``; nothing of theirs is looked for here), its command and RayJob are written as
    they run them (the RayJob named ``rayjob_name`` + the run id's end, default the scenario's
    name), and its provenance says which machine each fact is about.
    """
    from workbook.params.loader import resolve

    scenario_file = find_scenario(scenario)
    sets = settings_to_sets(settings) + list(overrides)
    pods = resolve(scenario_file, sets)[0].get("launcher") == "kuberay"
    if pods:
        from workbook.launch.kuberay.pods import pod_variables
        from workbook.scenario import load_scenario

        s = load_scenario(scenario_file, sets, check_files=False, check_verl=True,
                          variables=pod_variables())
    else:
        ensure_profile_ready(scenario_file, sets)
        s = validate_scenario(scenario_file, sets)  # what `workbook validate` checks, verl's too
        ready_to_launch(s, python=python_for(s))  # data: prepared; model, data, checkout here
    if run_dir:
        rd = RunDir(Path(run_dir).resolve())
        rd.path.mkdir(parents=True, exist_ok=True)
    else:
        rd = RunDir.create(Path(run_root).resolve() if run_root else default_root(), s.name)
    plan = plan_for(s, rd.path)
    if not pods:  # the pods cannot read this machine's copy of a pinned dump
        pin_rollouts(s, rd)
    write_redacted(rd.file("params"), dump_yaml(s.model_dump(mode="json")))
    if pods:
        from workbook.launch.kuberay.launcher import KubeRayLauncher, job_name

        job = KubeRayLauncher.for_scenario(s, job_name(rayjob_name or None, s.name, rd.run_id))
        facts = job.prepare(plan, rd, timeout_s=s.timeout_s)  # command, RayJob, provenance
    else:
        write_redacted(rd.file("command_json"), as_json(plan))
        write_redacted(rd.file("command_sh"), "#!/bin/sh\n" + as_shell(plan))
        facts = provenance.collect(verl_path=s.verl.path, python=python_for(s))
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


def pin_rollouts(s: Scenario, rd: RunDir) -> None:
    """Copy a pinned rollout dump into the run: verl replays from (and dumps any step the dump
    lacks into) ``<run>/rollouts``, so the pinned folder is never written and the run keeps the
    very rollouts it trained on."""
    if not s.rollouts.replay:
        return
    target = rd.path / ROLLOUTS_DIR
    if not target.exists():
        shutil.copytree(s.rollouts.replay, target)


def launcher_for(run: Run, address: str | None = None) -> Launcher:
    """The :class:`~workbook.launch.launcher.Launcher` the scenario names, aimed at ``address``
    (a Ray job server) or at the RayJob ``prepare`` named (a KubeRay run)."""
    from workbook.launch.launchers import Target, launcher_of

    s, rayjob = run.scenario, None
    if s.launcher == "kuberay":
        from workbook.launch.kuberay.launcher import default_name

        rayjob = ((run.run_dir.read_json("run").get("rayjob") or {}).get("name")
                  or default_name(s.name, run.run_dir.run_id))
    return launcher_of(s, Target(address=address, rayjob=rayjob))


def launch(run: Run, *, live: bool = True, echo: bool = False) -> Outcome:
    """Run verl and follow it live (status, log tail, per-step plots), then record how it ended.

    A local Ray cluster the scenario asks for (``ray.local_nodes``) is started first and stopped
    after, unless one of that shape is already up (a suite keeps one for consecutive entries).
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
            with watching(tags_of(run.run_dir)) as watch:  # what else used the machine
                outcome = launcher_for(run, address).run(run.plan, run.run_dir, on_line=on_line,
                                                          timeout_s=run.scenario.timeout_s)
            conditions = watch.stop()
    finally:
        if view is not None:
            view.close(reader.metrics)
    record_outcome(run.run_dir, outcome, expected_steps=run.scenario.total_training_steps,
                   conditions=conditions.to_dict())
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
