"""What a launcher is: everything the run steps ask of whichever launcher a scenario names.

``launcher: local`` (:class:`~workbook.launch.local.LocalLauncher`), ``ray``
(:class:`~workbook.launch.ray_job.RayJobLauncher`) and ``kuberay``
(:class:`~workbook.launch.kuberay.launcher.KubeRayLauncher`) each declare this protocol, so mypy
checks that they keep to it and the run steps need to know nothing else of them. Each says whose
paths the scenario names (:meth:`Launcher.variables`), makes the run's exact command
(:meth:`~Launcher.plan`), writes what the run directory holds before the run and the facts
``run.json`` records of it (:meth:`~Launcher.prepare`), and runs the plan: it sends each line of
the run's output to ``on_line`` as it goes into ``run.log`` (or, when the output cannot be
streamed, once it has been fetched), honours ``stop.request`` and ``timeout_s``, says how the run
ended in an :class:`~workbook.launch.outcome.Outcome`, and whether its processes ran on this
machine (:meth:`~Launcher.ran_here`: only then are this machine's conditions the run's).
The defaults are those of a run whose command runs with this machine's paths.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from workbook import interpreter, provenance
from workbook.command import as_json, as_shell, build_plan
from workbook.command.builder import ROLLOUTS_DIR
from workbook.command.plan import Plan
from workbook.core.layout import RunDir, write_redacted
from workbook.launch.outcome import LineSink, Outcome
from workbook.params import Scenario, assets_dir


def python_for(s: Scenario) -> str:
    """The training interpreter: ``--python``/``$WORKBOOK_PYTHON``, else the scenario's
    ``python:``, else the profile's (``cpu``: this very environment; accelerator images and
    every KubeRay pod bring their own ``python3``)."""
    return interpreter.choose(s.profile, s.launcher, s.python)


def plugin_dir() -> Path:
    """Where the CPU profile's import shims live (beside the tiny assets)."""
    return assets_dir() / "pythonpath"


@runtime_checkable
class Launcher(Protocol):
    """Runs a plan to its end; a failure of the run is an Outcome, a refusal a LaunchError."""

    @classmethod
    def for_scenario(cls, s: Scenario, run_id: str = "", address: str | None = None
                     ) -> Launcher:
        """The launcher of the run ``run_id`` of ``s``, aimed at ``address`` (a Ray job server)."""
        ...

    @staticmethod
    def variables() -> dict[str, str] | None:
        """The path variables of the machine whose paths the scenario names; None: this one's."""
        return None

    @classmethod
    def plan(cls, s: Scenario, run_dir: Path) -> Plan:
        """The exact command of a run into ``run_dir``."""
        plugin = str(plugin_dir()) if s.profile == "cpu" else None
        return build_plan(s, run_dir, python=python_for(s), plugin_path=plugin)

    def prepare(self, s: Scenario, plan: Plan, run_dir: RunDir) -> dict[str, Any]:
        """Write the command (and a pinned rollout dump) into the run; run.json's facts of it.

        verl replays a pinned dump from (and dumps any step it lacks into) ``<run>/rollouts``,
        so the pinned folder is never written and the run keeps the rollouts it trained on.
        """
        target = run_dir.path / ROLLOUTS_DIR
        if s.rollouts.replay and not target.exists():
            shutil.copytree(s.rollouts.replay, target)
        write_redacted(run_dir.file("command_json"), as_json(plan))
        write_redacted(run_dir.file("command_sh"), "#!/bin/sh\n" + as_shell(plan))
        return provenance.collect(verl_path=s.verl.path, python=python_for(s))

    def ran_here(self) -> bool:
        """Whether the run's processes ran on this machine, so its load and CPU are the run's
        conditions (asked once :meth:`run` has returned)."""
        return True

    def run(self, plan: Plan, run_dir: RunDir, *, on_line: LineSink | None = None,
            timeout_s: float | None = None) -> Outcome: ...
