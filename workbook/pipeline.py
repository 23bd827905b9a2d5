"""The steps a notebook cell (or ``workbook run``) calls, one per cell: prepare, launch, judge.

Each step reads and writes the run directory, so a notebook re-opened later, ``workbook
report`` or ``workbook check`` can pick up from whatever the last step left.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from workbook import provenance
from workbook.command import as_json, as_shell, build_plan
from workbook.launch.outcome import Outcome, Plan
from workbook.params import Scenario, load_scenario
from workbook.report.redaction import redact_mapping, redact_text
from workbook.runs import RunDir, default_root, write_atomic
from workbook.serialization import dump_yaml


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
    """The CPU profile runs in this very environment; accelerator images bring their own."""
    return sys.executable if s.profile == "cpu" else "python3"


def plugin_dir() -> Path:
    """Where the CPU profile's import shims live (beside the tiny assets)."""
    from workbook.params import assets_dir

    return assets_dir() / "pythonpath"


def plan_for(s: Scenario, run_dir: Path) -> Plan:
    plugin = str(plugin_dir()) if s.profile == "cpu" else None
    return build_plan(s, run_dir, python=python_for(s), plugin_path=plugin)


def ensure_profile_ready(scenario_file: Path, sets: Iterable[str]) -> None:
    """Build the tiny CPU assets and import shims before validation looks for them."""
    from workbook.params.loader import resolve

    data, _ = resolve(scenario_file, sets)
    if data.get("profile") == "cpu":
        from workbook.assets import ensure_assets
        from workbook.profiles.cpu.pythonpath import prepare_plugin_path

        ensure_assets()
        prepare_plugin_path(plugin_dir())


def prepare(
    scenario: str | Path,
    *,
    overrides: Iterable[str] = (),
    settings: dict[str, Any] | None = None,
    run_dir: str | Path = "",
    run_root: str | Path = "",
) -> Run:
    """Validate the scenario, create (or adopt) the run directory and write the command."""
    scenario_file = Path(scenario).resolve()
    sets = settings_to_sets(settings) + list(overrides)
    ensure_profile_ready(scenario_file, sets)
    s = load_scenario(scenario_file, sets)
    if run_dir:
        rd = RunDir(Path(run_dir).resolve())
        rd.path.mkdir(parents=True, exist_ok=True)
    else:
        rd = RunDir.create(Path(run_root) if run_root else default_root(), s.name)
    plan = plan_for(s, rd.path)
    write_atomic(rd.file("params"), dump_yaml(redact_mapping(s.model_dump(mode="json"))))
    write_atomic(rd.file("command_json"), redact_text(as_json(plan)))
    write_atomic(rd.file("command_sh"), "#!/bin/sh\n" + redact_text(as_shell(plan)))
    rd.update_run(**redact_mapping({
        "run_id": rd.run_id,
        "scenario": s.name,
        "scenario_file": str(scenario_file),
        "status": "prepared",
        "launcher": s.launcher,
        "profile": s.profile,
        "nodes": s.nodes,
        "devices_per_node": s.devices_per_node,
        "expected_steps": s.total_training_steps,
        "adv_estimator": s.adv_estimator,
        "policy_loss": s.policy_loss,
        "clip_ratio_low": s.clip_ratio_low,
        "clip_ratio_high": s.clip_ratio_high,
        "overrides": sets,
        **provenance.collect(),
    }))
    return Run(s, scenario_file, rd, plan, sets)


def adopt(run_dir: str | Path) -> Run:
    """A Run for an existing run directory (its scenario re-resolved from params.resolved.yaml)."""
    from workbook.params.schema import Scenario as _Scenario
    from workbook.serialization import load_yaml

    rd = RunDir(Path(run_dir).resolve())
    s = _Scenario.model_validate(load_yaml(rd.file("params")))
    info = rd.read_json("run")
    plan = Plan(**json.loads(rd.file("command_json").read_text()))
    return Run(s, Path(info.get("scenario_file", "")), rd, plan, list(info.get("overrides", [])))


def launcher_for(run: Run) -> Any:
    s = run.scenario
    if s.launcher == "ray":
        from workbook.launch.ray_job import RayJobLauncher

        return RayJobLauncher(
            s.ray.address,
            nodes=s.nodes,
            devices_per_node=s.devices_per_node,
            device_resource="NPU" if s.profile == "npu" else "GPU",
        )
    from workbook.launch.local import LocalLauncher

    return LocalLauncher()


def launch(run: Run, *, live: bool = True, echo: bool = False) -> Outcome:
    """Run verl, follow it live (plots update per step), then record how it ended."""
    from workbook.metrics.live import ChunkReader

    reader = ChunkReader()
    view = None
    if live:
        from workbook.plots.live import LiveView

        view = LiveView(clip_ratio_low=run.scenario.clip_ratio_low, clip_ratio_high=run.scenario.clip_ratio_high)
    tail: list[str] = []

    def on_line(line: str) -> None:
        tail.append(line)
        del tail[:-20]
        if echo:
            print(line, flush=True)
        if reader.feed_line(line) and view is not None:
            view.update(reader.metrics, tail)

    outcome = launcher_for(run).run(run.plan, run.run_dir, on_line=on_line, timeout_s=run.scenario.timeout_s)
    if view is not None:
        view.close()
    record_outcome(run, outcome)
    return outcome


def record_outcome(run: Run, outcome: Outcome) -> dict[str, Any]:
    """Write the outcome, the metrics reached and a diagnosis into run.json."""
    from workbook.metrics.diagnosis import diagnose
    from workbook.metrics.loading import load_metrics

    rd = run.run_dir
    metrics = load_metrics(rd.path)
    diagnosis = diagnose(
        rd.file("log"),
        exit_code=outcome.exit_code,
        metrics=metrics,
        expected_steps=run.scenario.total_training_steps,
        status=outcome.status,
    ).to_dict()
    fields = outcome.to_dict()
    details = fields.pop("details", {})
    return rd.update_run(
        **redact_mapping(fields),
        launch_details=redact_mapping(details),
        steps_reached=metrics.last_step,
        diagnosis=redact_mapping(diagnosis),
    )


def judge(run: Run) -> dict[str, Any]:
    """Checks against the scenario's baseline and expressions -> checks.json and the verdict."""
    from workbook.checks.runner import judge_run_dir

    verdict = judge_run_dir(run.run_dir.path, scenario=run.scenario.model_dump(mode="json"),
                            params_dir=run.scenario_file.parent)
    return verdict.to_dict()
