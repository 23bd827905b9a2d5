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

The names below are what the four notebooks import (``from workbook import pipeline, sections``;
``compare``, ``alignment``), typed, and nothing else (``tests/test_public_api.py``); they are
loaded on first use, so importing a part of the package (a vLLM worker loads
``workbook.profiles.cpu``) never imports the whole of it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what mypy checks a notebook's calls against
    from workbook.report import alignment, compare, sections
    from workbook.run import steps as pipeline

_PUBLIC = {  # name -> its module
    "pipeline": "workbook.run.steps",  # a run's steps: pipeline.prepare, launch, judge, finish
    "sections": "workbook.report.sections",  # a run's report cells, one call each
    "compare": "workbook.report.compare",  # a comparison's: compare.prepare, table, curves
    "alignment": "workbook.report.alignment",  # an alignment's: prepare, verdict, table, ...
}
__all__ = ["alignment", "compare", "pipeline", "sections"]  # the keys of _PUBLIC


def __getattr__(name: str) -> ModuleType:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'workbook' has no attribute {name!r}")
    module = globals()[name] = importlib.import_module(_PUBLIC[name])
    return module


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
