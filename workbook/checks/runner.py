"""Checking a run end to end: gather its evidence and judge it (nothing is written here).

``workbook run`` (and the notebook), ``workbook check`` and ``workbook report`` all come here,
so a run is judged the same way whether it was just launched or is a verl log from elsewhere.
A run directory is judged with the nights before it by :mod:`workbook.history.judgement`, and
its verdict recorded by its closing (:mod:`workbook.run.life`) alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from workbook.checks.baseline import Baseline, load_baseline
from workbook.checks.confirmation import Previous, asks_confirmation
from workbook.checks.evidence import Evidence, gather, is_run_directory, params_dir_for
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.checks.verdict import RunVerdict, judge_checks
from workbook.core.layout import RUN_FILES
from workbook.errors import ParamsError


def check_path(path: Path, *, baseline: Path | None = None, expressions: Sequence[str] = (),
               scenario: tuple[Mapping[str, Any], Path] | None = None,
               out: Path | None = None) -> tuple[RunVerdict, Path]:
    """Judge a run directory, console log or JSONL bare (no previous nights: a run directory's
    own judgement is :func:`workbook.history.judgement.judge_night`); returns the verdict and
    where its checks.json would go (:func:`checks_json_for`). Writes nothing.

    A run directory is judged by its ``params.resolved.yaml`` (or ``scenario``'s) ``checks:``
    section; a bare file by the health checks, the defaults on the metrics the baseline names,
    and ``expressions``. ``scenario`` judges as that scenario: its resolved mapping (every default
    filled in, as in params.resolved.yaml) and the folder its relative baseline path is in.
    ``baseline`` replaces the spec's baseline.

    Raises:
        ExpressionError, BaselineError, ParamsError, InputError, MetricsError: bad input (exit 2).
    """
    resolved, params_dir = scenario if scenario is not None else (None, None)
    verdict = judge_run_dir(Path(path), scenario=resolved, params_dir=params_dir,
                            baseline=baseline, expressions=expressions, previous=None)
    return verdict, checks_json_for(path, out)


def checks_json_for(path: Path, out: Path | None = None) -> Path:
    """Where ``workbook check`` writes checks.json: never into an unrelated run directory.

    ``out`` wins (a folder gets ``checks.json`` inside it). A run directory gets its own; a log or
    JSONL file gets one next to it, named after it (``nightly.log.checks.json``) when its folder is
    a run directory, so judging a run's ``run.log`` bare never replaces the run's own verdict.
    The working directory plays no part.
    """
    if out is not None:
        out = Path(out)
        return out / RUN_FILES["checks"] if out.is_dir() else out
    path = Path(path)
    if path.is_dir():
        return path / RUN_FILES["checks"]
    folder = path.absolute().parent
    if is_run_directory(folder):
        return folder / f"{path.name}.{RUN_FILES['checks']}"
    return folder / RUN_FILES["checks"]


def judge_run_dir(path: Path, *, scenario: Mapping[str, Any] | None = None,
                  params_dir: Path | None = None, baseline: Path | None = None,
                  expressions: Sequence[str] = (),
                  previous: Callable[[], Previous] | None) -> RunVerdict:
    """Judge a run directory (or a log or JSONL) and write nothing.

    ``scenario`` is the validated scenario (a mapping); without it the run directory's
    ``params.resolved.yaml`` is read. ``params_dir`` is where its relative baseline path lives.
    ``baseline`` and ``expressions`` are a what-if's. ``previous`` gives the previous nights'
    baseline-row statuses per metric (the history layer reads them from the ledger; None: no
    history, as for a bare log); it is called only when a policy asks for ``confirm_nights``.
    """
    evidence = gather(Path(path), scenario=scenario)
    if params_dir is None:
        params_dir = params_dir_for(evidence.scenario, evidence.run)
    spec = spec_of(evidence.scenario, params_dir).with_baseline(baseline)
    spec = spec.with_expressions(list(expressions))
    nights = previous() if previous is not None and asks_confirmation(spec) else None
    return judge_evidence(evidence, spec, previous=nights)


def spec_of(scenario: Mapping[str, Any], params_dir: Path) -> CheckSpec:
    """The validated ``checks:`` section of a resolved scenario (ParamsError if invalid)."""
    spec, problems = parse_checks(scenario.get("checks"), params_dir=params_dir)
    if problems:
        raise ParamsError(problems, "checks")
    return spec


def judge_evidence(evidence: Evidence, spec: CheckSpec, *,
                   previous: Previous | None = None) -> RunVerdict:
    """The verdict with the spec's baseline loaded (BaselineError when it cannot be read)."""
    baseline: Baseline | None = load_baseline(spec.baseline) if spec.baseline else None
    return judge_checks(evidence, spec, baseline=baseline, previous=previous)
