"""verl-workbook: validate verl RL runs, from a scenario file to one verdict and its report.

The flow, one package per stage, each importing only the ones before it (a layers contract in
``pyproject.toml`` keeps it so):

    core      paths and names of the project and the run tree, redaction, atomic writes
    params    a scenario file -> a validated Scenario          command   Scenario -> exact verl argv
    launch    local, Ray Jobs, KubeRay, local clusters          metrics   verl's logs -> RunMetrics
    checks    evidence -> one verdict (health, baseline)        plots     panels of verl metrics
    align     do two runs train alike? (record, plot, JUnit)    report    pages, the index, publish
    run       one run's life                                    batch     suites and sweeps
    bisect    a red night -> verl's culprit commit              cli       the ``workbook`` command

The names below are what the notebooks use (``from workbook import pipeline, sections``); they are
loaded on first use, so importing a part of
the package (a vLLM worker loads ``workbook.profiles.cpu``) never imports the whole of it.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC: dict[str, tuple[str, str | None]] = {  # name -> (module, attribute; None: the module)
    # a run's steps as its notebook calls them: pipeline.prepare, launch, judge, finish
    "pipeline": ("workbook.run.steps", None),
    "sections": ("workbook.report.sections", None),  # the report cells, one call each
    "WorkbookError": ("workbook.errors", "WorkbookError"),
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'workbook' has no attribute {name!r}")
    where, attribute = _PUBLIC[name]
    module = importlib.import_module(where)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
