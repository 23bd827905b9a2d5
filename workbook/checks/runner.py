"""Checking a run end to end: gather its evidence, judge it, write checks.json.

``workbook run`` (and the notebook), ``workbook check`` and ``workbook report`` all come here,
so a run is judged the same way whether it was just launched or is a verl log from elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from workbook.checks.baseline import Baseline, load_baseline
from workbook.checks.confirmation import Previous, asks_confirmation
from workbook.checks.evidence import Evidence, gather, is_run_directory, params_dir_for
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.checks.verdict import Verdict, judge
from workbook.core.layout import RUN_FILES, RunDir
from workbook.errors import ParamsError


def check_path(path: Path, *, baseline: Path | None = None, expressions: Sequence[str] = (),
               scenario: tuple[Mapping[str, Any], Path] | None = None,
               out: Path | None = None) -> tuple[Verdict, Path]:
    """Judge a run directory, console log or JSONL; returns the verdict and its checks.json path.

    A run directory is judged by its ``params.resolved.yaml`` (or ``scenario``'s) ``checks:``
    section; a bare file by the health checks, the defaults on the metrics the baseline names,
    and ``expressions``. ``scenario`` judges as that scenario: its resolved mapping (every default
    filled in, as in params.resolved.yaml) and the folder its relative baseline path is in. ``baseline`` replaces the spec's baseline. The checks.json path is
    ``out`` when given, else :func:`checks_json_for`.

    Raises:
        ExpressionError, BaselineError, ParamsError, InputError, MetricsError: bad input (exit 2).
    """
    path = Path(path)
    resolved, params_dir = scenario if scenario is not None else (None, None)
    evidence = gather(path, scenario=resolved)
    if params_dir is None:
        params_dir = params_dir_for(evidence.scenario, evidence.run)
    spec = spec_of(evidence.scenario, params_dir).with_baseline(baseline)
    spec = spec.with_expressions(list(expressions))
    verdict = judge_evidence(evidence, spec)
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


def judge_run_dir(run_dir: Path, *, scenario: Mapping[str, Any] | None = None,
                  params_dir: Path | None = None,
                  previous: Callable[[], Previous] | None = None) -> Verdict:
    """Judge a finished run; write checks.json and the verdict summary into run.json.

    ``scenario`` is the validated scenario (a mapping); without it the run directory's
    ``params.resolved.yaml`` is read. ``params_dir`` is where its relative baseline path lives.
    ``previous`` gives the previous nights' baseline-row statuses per metric (the run layer
    reads them from the ledger); it is called only when a policy asks for ``confirm_nights``.
    """
    evidence = gather(Path(run_dir), scenario=scenario)
    spec = spec_of(evidence.scenario, params_dir or params_dir_for(evidence.scenario, evidence.run))
    nights = previous() if previous is not None and asks_confirmation(spec) else None
    verdict = judge_evidence(evidence, spec, previous=nights)
    verdict.write_json(Path(run_dir) / RUN_FILES["checks"])
    rd = RunDir(Path(run_dir))
    if rd.file("run").exists():
        rd.update_run(verdict=verdict.summary())
    return verdict


def spec_of(scenario: Mapping[str, Any], params_dir: Path) -> CheckSpec:
    """The validated ``checks:`` section of a resolved scenario (ParamsError if invalid)."""
    spec, problems = parse_checks(scenario.get("checks"), params_dir=params_dir)
    if problems:
        raise ParamsError(problems, "checks")
    return spec


def judge_evidence(evidence: Evidence, spec: CheckSpec, *,
                   previous: Previous | None = None) -> Verdict:
    """The verdict with the spec's baseline loaded (BaselineError when it cannot be read)."""
    baseline: Baseline | None = load_baseline(spec.baseline) if spec.baseline else None
    return judge(evidence, spec, baseline=baseline, previous=previous)
