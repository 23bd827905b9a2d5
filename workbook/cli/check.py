"""``workbook check PATH``: judge a run directory, verl console log or JSONL; print the table."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbook.checks.evidence import is_run_directory
from workbook.checks.junit import verdict_suite, write_junit
from workbook.checks.runner import check_path
from workbook.checks.verdict import Verdict
from workbook.cli import terminal
from workbook.errors import InputError
from workbook.scenario import load_scenario

EPILOG = """examples:
  workbook check runs/gspo-tiny-1n1cpu-fsdp2-vllm/20261129T181829Z-1a2b3c
  workbook check nightly.log --baseline baseline_gspo_qwen3_8b_fsdp2_npu.txt
  workbook check metrics.jsonl --expr 'median(data["actor/pg_clipfrac"]) < 0.5' --junit checks.xml
  workbook check nightly.log --out results/checks.json

exit codes: 0 passed, 1 regressed, 2 bad input (expression, baseline; a path that is not a run
directory, log or JSONL file), 3 the run failed, was stopped or completed no training step"""
COLUMNS = ("status", "check", "value", "expected", "message")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "check", help="judge a run against its checks and baseline",
        description="Judge a run directory (its scenario's checks: section) or a verl console "
        "log / JSONL (health checks, the defaults on the metrics the baseline names, plus "
        "--expr). Prints the table and writes checks.json into the run directory, or next to "
        "the log or JSONL file (or to --out).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path, help="run directory, console log or metrics JSONL")
    parser.add_argument("--baseline", type=Path, help="baseline file (JSON, YAML or Ascend .txt)")
    parser.add_argument("--expr", action="append", default=[], metavar="EXPR",
                        help="an expression check; repeatable")
    parser.add_argument("--junit", type=Path, help="also write JUnit XML here")
    parser.add_argument("--out", type=Path, metavar="PATH",
                        help="write checks.json here (a file, or a folder to hold it) instead of "
                        "into the run directory or next to the log")
    parser.add_argument("--scenario", type=Path, metavar="PARAMS",
                        help="judge as this scenario: its checks, its expected steps, its "
                        "settings")
    parser.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    scenario = None
    if args.scenario is not None:  # as a run records it: every default filled in
        loaded = load_scenario(args.scenario, check_files=False)
        scenario = (loaded.model_dump(mode="json"), Path(args.scenario).resolve().parent)
    verdict, out = check_path(args.path, baseline=args.baseline, expressions=args.expr,
                              scenario=scenario, out=args.out)
    terminal.show(verdict_table(verdict), terminal.verdict_line(verdict.status, verdict.reason))
    try:
        verdict.write_json(out)
    except OSError as exc:
        raise InputError(f"{out}: cannot write checks.json ({exc.strerror or exc}); give a "
                         "writable --out PATH") from None
    if args.junit:
        write_junit([verdict_suite(verdict, _suite(args.path))], args.junit)
    return verdict.exit_code


def verdict_table(verdict: Verdict) -> object:
    """The checks as a terminal table, one row per check."""
    rows = [(row.status, row.name, "-" if row.value is None else f"{row.value:.6g}",
             row.expected, row.message) for row in verdict.rows]
    return terminal.table("checks", COLUMNS, rows, status_column=0)


def _suite(path: Path) -> str:
    path = Path(path)
    return path.parent.name if is_run_directory(path) else path.stem
