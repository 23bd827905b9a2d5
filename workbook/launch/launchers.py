"""Which launcher runs a scenario: its ``launcher:`` names one of :data:`LAUNCHERS`.

Every entry makes a :class:`~workbook.launch.launcher.Launcher` (mypy checks each against the
protocol), so a new launcher is one entry here and one value of the scenario's ``launcher``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbook.errors import LaunchError
from workbook.launch.launcher import Launcher
from workbook.params import Scenario


@dataclass(frozen=True)
class Target:
    """Where a run goes, beyond its scenario: the Ray job server of a cluster started for it
    (``launcher: ray``), the RayJob's name (``launcher: kuberay``)."""

    address: str | None = None
    rayjob: str | None = None


def _local(s: Scenario, target: Target) -> Launcher:
    from workbook.launch.local import LocalLauncher

    return LocalLauncher()


def _ray(s: Scenario, target: Target) -> Launcher:
    from workbook.launch.cluster.on_demand import device_resource
    from workbook.launch.ray_job import RayJobLauncher

    return RayJobLauncher(
        target.address or s.ray.address,
        nodes=s.nodes,
        devices_per_node=s.devices_per_node,
        device_resource=device_resource(s.profile),
        verl_checkout=s.verl.path,  # shipped to every node, and checked there
    )


def _kuberay(s: Scenario, target: Target) -> Launcher:
    from workbook.launch.kuberay.launcher import KubeRayLauncher

    if not target.rayjob:
        raise LaunchError("a KubeRay run needs its RayJob's name (run.json's rayjob.name)")
    return KubeRayLauncher.for_scenario(s, target.rayjob)


LAUNCHERS: dict[str, Callable[[Scenario, Target], Launcher]] = {
    "local": _local,
    "ray": _ray,
    "kuberay": _kuberay,
}


def launcher_of(s: Scenario, target: Target | None = None) -> Launcher:
    """The launcher ``s`` names, aimed at ``target``."""
    return LAUNCHERS[s.launcher](s, target or Target())
