"""``workbook check PATH``: judge a run directory, verl console log or JSONL; print the table.

A run directory is judged by the one judgement its closing uses; only closing records it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from workbook.checks.evidence import is_run_directory
from workbook.checks.junit import verdict_suite, write_junit
from workbook.checks.runner import check_path, checks_json_for
from workbook.checks.verdict import RunVerdict
from workbook.cli import terminal
from workbook.core.layout import RUN_FILES, RunDir
from workbook.core.status import ACTIVE
from workbook.core.values import number_text
from workbook.errors import InputError
from workbook.metrics.loading import input_kind
from workbook.scenario import load_scenario

EPILOG = """examples:
  workbook check runs/gspo-tiny-1n1cpu-fsdp2-vllm/20261129T181829Z-1a2b3c
  workbook check RUN_DIR --baseline candidate.json --out whatif.json    # a what-if, kept aside
  workbook check nightly.log --baseline baseline_gspo_qwen3_8b_fsdp2_npu.txt
  workbook check metrics.jsonl --expr 'median(data["actor/pg_clipfrac"]) < 0.5' --junit checks.xml
  workbook check nightly.log --out results/checks.json

A run directory is judged as its closing judges it (with the nights before it in the ledger).
When the verdict it recorded is stale, the run is closed again, so checks.json, run.json, the
report and the ledger agree; otherwise nothing in it is written. With --baseline, --expr or
--scenario the verdict is a what-if: it is printed, written only to --out, and the run's own
verdict stays as it is. A run still running is judged and printed, never closed.

exit codes: 0 passed, improved or suspect, 1 regressed, 2 bad input (expression, baseline; a
path that is not a run directory, log or JSONL file), 3 the run failed, was stopped or
completed no training step"""
COLUMNS = ("status", "check", "value", "expected", "message")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "check", help="judge a run against its checks and baseline",
        description="Judge a run directory (its scenario's checks: section, with the nights "
        "before it) or a verl console log / JSONL (health checks, the defaults on the metrics "
        "the baseline names, plus --expr) and print the table. A run directory whose recorded "
        "verdict is stale is closed again; a what-if (--baseline, --expr, --scenario) on a run "
        "directory is written only to --out. A log or JSONL gets checks.json next to it (or at "
        "--out).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path, help="run directory, console log or metrics JSONL")
    parser.add_argument("--baseline", type=Path, help="baseline file (JSON, YAML or Ascend .txt)")
    parser.add_argument("--expr", action="append", default=[], metavar="EXPR",
                        help="an expression check; repeatable")
    parser.add_argument("--junit", type=Path, help="also write JUnit XML here")
    parser.add_argument("--out", type=Path, metavar="PATH",
                        help="write checks.json here (a file, or a folder to hold it): for a "
                        "log, instead of next to it; for a run directory, a copy (a what-if's "
                        "only copy); never one of the run's own files")
    parser.add_argument("--scenario", type=Path, metavar="PARAMS",
                        help="judge as this scenario: its checks, its expected steps, its "
                        "settings")
    parser.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    scenario = None
    if args.scenario is not None:  # as a run records it: every default filled in
        loaded = load_scenario(args.scenario, check_files=False)
        scenario = (loaded.model_dump(mode="json"), Path(args.scenario).resolve().parent)
    if input_kind(args.path) == "run directory":
        verdict = _check_run(args, scenario)
    else:
        verdict, out = check_path(args.path, baseline=args.baseline, expressions=args.expr,
                                  scenario=scenario, out=args.out)
        terminal.show(verdict_table(verdict), terminal.verdict_line(verdict.status,
                                                                    verdict.reason))
        _write(verdict, out)
    if args.junit:
        write_junit([verdict_suite(verdict, _suite(args.path))], args.junit)
    return verdict.exit_code


def _check_run(args: argparse.Namespace, scenario: tuple[dict[str, Any], Path] | None
               ) -> RunVerdict:
    """A run directory: judged as its closing judges it; a what-if printed (and written to
    ``--out`` only); the run's own verdict, when stale, recorded again by closing it."""
    from workbook.history.judgement import judge_night
    from workbook.run import life

    run_dir = Path(args.path).resolve()
    out = checks_json_for(run_dir, args.out) if args.out is not None else None
    own = {(run_dir / name).resolve() for name in RUN_FILES.values()}
    if out is not None and out.resolve() in own:
        raise InputError(f"--out {args.out}: names the run's own {out.name}, which only the "
                         "run's closing writes; give a path outside the run's files")
    verdict = judge_night(run_dir, baseline=args.baseline, expressions=args.expr,
                          scenario=scenario)  # bad input (exit 2) before anything is written
    terminal.show(verdict_table(verdict), terminal.verdict_line(verdict.status, verdict.reason))
    if out is not None:
        _write(verdict, out)
    rd = RunDir(run_dir)
    status = rd.json_object("run").get("status")
    if args.baseline or args.expr or scenario is not None:
        print(f"workbook: a what-if verdict: {f'written to {out}' if out else 'nothing written'}"
              f"; the run's recorded verdict is unchanged"
              + ("" if out else " (give --out PATH to keep this one)"), file=sys.stderr)
    elif status in (None, *ACTIVE):
        print(f"workbook: the run is {status or 'not recorded as ended'}: it is not closed, "
              "and nothing in it is written", file=sys.stderr)
    elif not life.recorded(rd, verdict):
        done = life.close(rd, announce=False, rejudge=True)
        terminal.closing_errors(done.errors, rd.path)
        print("workbook: the run's recorded verdict was missing or stale: the run was closed "
              f"(checks.json, run.json, report and ledger now say {rd.verdict().get('status')})",
              file=sys.stderr)
    return verdict


def _write(verdict: RunVerdict, out: Path) -> None:
    try:
        verdict.write_json(out)
    except OSError as exc:
        raise InputError(f"{out}: cannot write checks.json ({exc.strerror or exc}); give a "
                         "writable --out PATH") from None


def verdict_table(verdict: RunVerdict) -> object:
    """The checks as a terminal table, one row per check."""
    rows = [(row.status, row.name, number_text(row.value, 6),
             row.expected, row.message) for row in verdict.rows]
    return terminal.table("checks", COLUMNS, rows, status_column=0)


def _suite(path: Path) -> str:
    path = Path(path)
    return path.parent.name if is_run_directory(path) else path.stem
