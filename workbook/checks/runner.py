"""Checking a run end to end: read what it left behind, judge it, say where checks.json goes.

``workbook check`` and ``workbook run`` (at its end) both go through :func:`check_path`, so a
run is judged the same way whether it was just launched or is a verl log from elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from workbook.checks.baseline import load_baseline
from workbook.checks.inputs import (is_run_directory, load_run_metrics, params_dir_for,
                                    read_resolved_params, read_run)
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.checks.verdict import Verdict, judge
from workbook.errors import InputError, ParamsError
from workbook.metrics.diagnosis import diagnose
from workbook.runs import RUN_FILES, RunDir


def check_path(path: Path, *, baseline: Path | None = None, expressions: Sequence[str] = (),
               scenario: Path | None = None, spec: CheckSpec | None = None) -> tuple[Verdict, Path]:
    """Judge a run directory, console log or JSONL; returns the verdict and its checks.json path.

    A run directory is judged by its ``params.resolved.yaml`` ``checks:`` section (or
    ``scenario``'s); a file by the nightly defaults on the metrics the baseline names.
    ``baseline`` replaces the spec's baseline, ``expressions`` are added to its checks; a
    ready ``spec`` skips reading either.

    Raises:
        ExpressionError, BaselineError, ParamsError: bad input (exit 2).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"no such run directory or file: {path}")
    run_dir = is_run_directory(path)
    spec = (spec or spec_for(path if run_dir else None, scenario)).with_baseline(baseline)
    spec = spec.with_expressions(list(expressions))
    loaded = load_baseline(spec.baseline) if spec.baseline else None
    run = read_run(path) if run_dir else {}
    metrics = load_run_metrics(path)
    diagnosis = _diagnosis(path, run, has_metrics=bool(len(metrics)))
    verdict = judge(metrics, spec, baseline=loaded, run=run, diagnosis=diagnosis)
    out = path / RUN_FILES["checks"] if run_dir else Path.cwd() / RUN_FILES["checks"]
    return verdict, out


def judge_run_dir(run_dir: Path, *, scenario: Any = None,
                  params_dir: Path | None = None) -> Verdict:
    """Judge a finished run; write checks.json and the verdict into run.json (``workbook run``).

    ``scenario`` is the validated scenario (anything with a ``checks`` mapping) and
    ``params_dir`` the folder its file lives in; without them the run directory's
    ``params.resolved.yaml`` is read.
    """
    spec = None
    if scenario is not None:
        section = scenario.get("checks") if isinstance(scenario, dict) else scenario.checks
        spec, problems = parse_checks(section, params_dir=Path(params_dir or params_dir_for({})))
        if problems:
            raise ParamsError(problems, "checks")
    verdict, out = check_path(run_dir, spec=spec)
    verdict.write_json(out)
    rd = RunDir(Path(run_dir))
    if rd.file("run").exists():
        rd.update_run(verdict=verdict.summary())
    return verdict


def spec_for(run_dir: Path | None, scenario: Path | None) -> CheckSpec:
    """The checks of ``scenario`` if given, else of the run directory's resolved params."""
    if scenario is not None:
        from workbook.params.loader import resolve  # params builds on checks, not the reverse

        data, problems = resolve(scenario)
        if problems:
            raise ParamsError(problems, str(scenario))
        section, params_dir = data.get("checks"), Path(scenario).resolve().parent
    elif run_dir is not None:
        resolved = read_resolved_params(run_dir)
        section, params_dir = resolved.get("checks"), params_dir_for(resolved)
    else:
        return CheckSpec()
    spec, problems = parse_checks(section, params_dir=params_dir)
    if problems:
        raise ParamsError(problems, "checks")
    return spec


def _diagnosis(path: Path, run: dict[str, Any], *, has_metrics: bool) -> dict[str, Any] | None:
    """run.json's diagnosis, else a fresh one when the run (or the log's run) did not succeed."""
    if run.get("diagnosis"):
        return dict(run["diagnosis"])
    if run and run.get("status") == "succeeded" and has_metrics:
        return None
    if path.is_dir() and not any((path / RUN_FILES[k]).exists() for k in ("log", "metrics")):
        return None
    found = diagnose(path).to_dict()
    return None if found.get("status") == "succeeded" else found
