"""``workbook check PATH``: judge a run directory, verl console log or JSONL; print the table."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from workbook.checks.baseline import load_baseline
from workbook.checks.inputs import (is_run_directory, load_run_metrics, params_dir_for,
                                    read_resolved_params, read_run)
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.checks.table import format_table
from workbook.checks.verdict import Verdict, judge
from workbook.errors import InputError, ParamsError
from workbook.metrics.diagnosis import diagnose
from workbook.runs import RUN_FILES

EPILOG = """examples:
  workbook check runs/gspo-tiny-1n1cpu-fsdp2-vllm/20261129T181829Z-1a2b3c
  workbook check nightly.log --baseline baseline_gspo_qwen3_8b_fsdp2_npu.txt
  workbook check metrics.jsonl --expr 'median(data["actor/pg_clipfrac"]) < 0.5' --junit checks.xml

exit codes: 0 passed, 1 regressed, 2 bad input (expression, baseline), 3 the run failed"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "check", help="judge a run against its checks and baseline",
        description="Judge a run directory (its scenario's checks: section) or a verl console "
        "log / JSONL (the nightly defaults on the metrics the baseline names, plus --expr). "
        "Prints the table and writes checks.json next to the run (or in the current folder).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path, help="run directory, console log or metrics JSONL")
    parser.add_argument("--baseline", type=Path, help="baseline file (JSON, YAML or Ascend .txt)")
    parser.add_argument("--expr", action="append", default=[], metavar="EXPR",
                        help="an expression check; repeatable")
    parser.add_argument("--junit", type=Path, help="also write JUnit XML here")
    parser.add_argument("--scenario", type=Path, metavar="PARAMS",
                        help="take the checks: section from this scenario file")
    parser.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    verdict, out = check_path(args.path, baseline=args.baseline, expressions=args.expr,
                              scenario=args.scenario)
    print(format_table(verdict))
    verdict.write_json(out)
    if args.junit:
        verdict.write_junit(args.junit, suite=f"workbook.checks.{_suite(args.path)}")
    return verdict.exit_code


def check_path(path: Path, *, baseline: Path | None = None, expressions: list[str] = (),  # type: ignore[assignment]
               scenario: Path | None = None) -> tuple[Verdict, Path]:
    """Judge ``path``; returns the verdict and where its checks.json belongs."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"no such run directory or file: {path}")
    run_dir = is_run_directory(path)
    spec = _spec(path if run_dir else None, scenario).with_baseline(baseline)
    spec = spec.with_expressions(list(expressions))
    loaded = load_baseline(spec.baseline) if spec.baseline else None
    run = read_run(path) if run_dir else {}
    metrics = load_run_metrics(path)
    diagnosis = _diagnosis(path, run, has_metrics=bool(len(metrics)))
    verdict = judge(metrics, spec, baseline=loaded, run=run, diagnosis=diagnosis)
    out = path / RUN_FILES["checks"] if run_dir else Path.cwd() / RUN_FILES["checks"]
    return verdict, out


def _spec(run_dir: Path | None, scenario: Path | None) -> CheckSpec:
    if scenario is not None:
        from workbook.params.loader import resolve

        data, problems = resolve(scenario)
        if problems:
            raise ParamsError(problems, str(scenario))
        section, params_dir = data.get("checks"), scenario.resolve().parent
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
        return run["diagnosis"]
    if run and run.get("status") == "succeeded" and has_metrics:
        return None
    if path.is_dir() and not any((path / RUN_FILES[k]).exists() for k in ("log", "metrics")):
        return None
    found = diagnose(path).to_dict()
    return None if found.get("status") == "succeeded" else found


def _suite(path: Path) -> str:
    path = Path(path)
    return path.parent.name if is_run_directory(path) else path.stem
