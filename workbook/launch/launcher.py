"""What a launcher is: the one call ``workbook run`` makes of whichever launcher a scenario names.

``launcher: local`` (:class:`~workbook.launch.local.LocalLauncher`), ``ray``
(:class:`~workbook.launch.ray_job.RayJobLauncher`) and ``kuberay``
(:class:`~workbook.launch.kuberay.launcher.KubeRayLauncher`) each declare this protocol, so mypy
checks that they keep to it and the run steps need to know nothing else of them. Each runs a plan
for one run directory, sends each line of the run's output to ``on_line`` as it goes into
``run.log`` (or, when the output cannot be streamed, once it has been fetched), honours
``stop.request`` and ``timeout_s``, and says how the run ended in an
:class:`~workbook.launch.outcome.Outcome`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from workbook.command.plan import Plan
from workbook.core.layout import RunDir
from workbook.launch.outcome import LineSink, Outcome


@runtime_checkable
class Launcher(Protocol):
    """Runs a plan to its end; a failure of the run is an Outcome, a refusal a LaunchError."""

    def run(
        self,
        plan: Plan,
        run_dir: RunDir,
        *,
        on_line: LineSink | None = None,
        timeout_s: float | None = None,
    ) -> Outcome: ...
