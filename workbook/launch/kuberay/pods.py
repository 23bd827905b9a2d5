"""A run as the KubeRay pods see it: their home, their runs folder, the command with their paths.

A RayJob's command runs in pods, not on the machine that submits it, so its scenario is loaded
with :func:`pod_variables` (``HOME`` is the pods' ``${HOME}``, expanded only there) and its plan
writes under :data:`POD_RUNS`, a folder every pod has. Nothing here looks at this machine's
files: the pods' model, data and checkout are theirs to have.
"""

from __future__ import annotations

from pathlib import Path

from workbook import interpreter
from workbook.command import build_plan
from workbook.command.plan import Plan
from workbook.launch.kuberay.manifest import POD_HOME
from workbook.params import Scenario, assets_dir

# Where the run writes inside the pods (verl creates the rollout dump folders there itself).
POD_RUNS = Path("/tmp/verl-workbook/runs")


def pod_variables() -> dict[str, str]:
    """Scenario path variables as the pods see them: ``HOME`` stays ``${HOME}``, and the
    tiny assets keep their place under the home folder."""
    home, assets = Path.home().resolve(), assets_dir()
    try:
        inside = f"{POD_HOME}/{assets.resolve().relative_to(home).as_posix()}"
    except ValueError:
        inside = str(assets)
    return {"HOME": POD_HOME, "WORKBOOK_ASSETS": inside}


def pod_plan(scenario: Scenario, run_id: str) -> Plan:
    """The exact command the pods run, into their own run folder: it joins the Ray cluster
    KubeRay made (never sizes one of its own)."""
    plugin = str(POD_RUNS / "pythonpath") if scenario.profile == "cpu" else None
    python = interpreter.choose(scenario.profile, "kuberay", scenario.python)  # the pods' own
    return build_plan(scenario, POD_RUNS / scenario.name / run_id, python=python,
                      on_existing_cluster=True, plugin_path=plugin)
