"""Which launcher runs a scenario: its ``launcher:`` names one of :data:`LAUNCHERS`.

Every entry is a :class:`~workbook.launch.launcher.Launcher` (mypy checks each against the
protocol), so a new launcher is one entry here and one value of the scenario's ``launcher``.
"""

from __future__ import annotations

from workbook.launch.kuberay.launcher import KubeRayLauncher
from workbook.launch.launcher import Launcher
from workbook.launch.local import LocalLauncher
from workbook.launch.ray_job import RayJobLauncher
from workbook.params import Scenario

LAUNCHERS: dict[str, type[Launcher]] = {
    "local": LocalLauncher, "ray": RayJobLauncher, "kuberay": KubeRayLauncher}


def launcher_of(s: Scenario, run_id: str = "", address: str | None = None) -> Launcher:
    """The launcher ``s`` names, for its run ``run_id``, aimed at ``address`` (the Ray job
    server of a cluster started for the run)."""
    return LAUNCHERS[s.launcher].for_scenario(s, run_id, address)


def path_variables(launcher: object) -> dict[str, str] | None:
    """The path variables a scenario naming ``launcher`` is loaded with (None: this machine's;
    an unknown name is validation's to refuse)."""
    found = LAUNCHERS.get(str(launcher))
    return found.variables() if found is not None else None
