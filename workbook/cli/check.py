"""``workbook check PATH``: judge a run directory, verl console log or JSONL; print the table."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbook.checks.inputs import is_run_directory
from workbook.checks.runner import check_path
from workbook.checks.table import format_table

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


def _suite(path: Path) -> str:
    path = Path(path)
    return path.parent.name if is_run_directory(path) else path.stem
