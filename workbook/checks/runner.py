"""Checking a run end to end: gather its evidence, judge it, write checks.json.

``workbook run`` (and the notebook), ``workbook check`` and ``workbook report`` all come here,
so a run is judged the same way whether it was just launched or is a verl log from elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbook.checks.baseline import Baseline, load_baseline
from workbook.checks.evidence import Evidence, gather, params_dir_for
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.checks.verdict import Verdict, judge
from workbook.errors import ParamsError
from workbook.runs import RUN_FILES, RunDir


def check_path(path: Path, *, baseline: Path | None = None, expressions: Sequence[str] = (),
               scenario: Path | None = None) -> tuple[Verdict, Path]:
    """Judge a run directory, console log or JSONL; returns the verdict and its checks.json path.

    A run directory is judged by its ``params.resolved.yaml`` (or ``scenario``'s) ``checks:``
    section; a bare file by the health checks, the defaults on the metrics the baseline names,
    and ``expressions``. ``baseline`` replaces the spec's baseline.

    Raises:
        ExpressionError, BaselineError, ParamsError, InputError: bad input (exit 2).
    """
    path = Path(path)
    resolved, params_dir = _scenario(scenario) if scenario is not None else (None, None)
    evidence = gather(path, scenario=resolved)
    if params_dir is None:
        params_dir = params_dir_for(evidence.scenario, evidence.run)
    spec = spec_of(evidence.scenario, params_dir).with_baseline(baseline)
    spec = spec.with_expressions(list(expressions))
    verdict = judge_evidence(evidence, spec)
    out = path / RUN_FILES["checks"] if evidence.is_run_dir else Path.cwd() / RUN_FILES["checks"]
    return verdict, out


def judge_run_dir(run_dir: Path, *, scenario: Mapping[str, Any] | None = None,
                  params_dir: Path | None = None) -> Verdict:
    """Judge a finished run; write checks.json and the verdict summary into run.json.

    ``scenario`` is the validated scenario (a mapping); without it the run directory's
    ``params.resolved.yaml`` is read. ``params_dir`` is where its relative baseline path lives.
    """
    evidence = gather(Path(run_dir), scenario=scenario)
    spec = spec_of(evidence.scenario, params_dir or params_dir_for(evidence.scenario, evidence.run))
    verdict = judge_evidence(evidence, spec)
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


def judge_evidence(evidence: Evidence, spec: CheckSpec) -> Verdict:
    """The verdict with the spec's baseline loaded (BaselineError when it cannot be read)."""
    baseline: Baseline | None = load_baseline(spec.baseline) if spec.baseline else None
    return judge(evidence, spec, baseline=baseline)


def _scenario(path: Path) -> tuple[dict[str, Any], Path]:
    """The scenario as a run records it (every default filled in, as in params.resolved.yaml)."""
    from workbook.params import load_scenario  # params builds on checks, not the reverse

    scenario = load_scenario(path, check_files=False)
    return scenario.model_dump(mode="json"), Path(path).resolve().parent
