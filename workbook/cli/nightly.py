"""``workbook nightly sync --verl PATH [--recipe PATH] [--write]``: verl's Ascend nightly against
the scenarios that reproduce it. Exit 0 nothing moved, 1 drift (the report says where), 2 bad
input (a checkout missing, a job or script that cannot be read)."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbook.errors import EXIT_PASSED, EXIT_REGRESSED

EPILOG = """examples:
  workbook nightly sync --verl ~/verl
  workbook nightly sync --verl ~/verl --recipe ~/verl-ascend-recipe --write > drift.md

Each script runs in a temporary folder under bash with stand-ins only (python3 records what it
is handed; other commands do nothing), as the script facts were recorded. --write rewrites the
facts of the jobs that drifted (params/nightly/) and imports the recipe's baselines that moved
(params/baselines/); the scenarios are left for a person to change."""


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("nightly", help="verl's Ascend nightly and the scenarios that "
                           "reproduce it").add_subparsers(dest="nightly_cmd", required=True)
    p = group.add_parser(
        "sync", help="report how verl's nightly jobs and baselines moved from the scenarios",
        description="Re-derive each nightly job's command and environment from a verl checkout's "
        "workflows and scripts, and its baseline from a verl-ascend-recipe checkout, and report "
        "job by job what no longer matches the scenario reproducing it: a new or removed job, "
        "a changed entry, override, environment variable or baseline value. Exit 1 on drift.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--verl", type=Path, required=True, metavar="PATH", help="a verl checkout")
    p.add_argument("--recipe", type=Path, metavar="PATH",
                   help="a verl-ascend-recipe checkout (its baseline/<a2|a3>/nightly_log/ files)")
    p.add_argument("--write", action="store_true", help="rewrite the script facts of the jobs "
                   "that drifted and import the baselines that moved, with their provenance")
    p.add_argument("--timeout-per-script", type=float, default=60.0, metavar="SECONDS",
                   help="how long one script may run under the stand-ins (default 60)")
    p.set_defaults(handler=run_sync)


def run_sync(args: argparse.Namespace) -> int:
    from workbook.errors import InputError
    from workbook.nightly.sync import sync

    if args.timeout_per_script <= 0:
        raise InputError("--timeout-per-script must be more than 0 seconds")
    report = sync(args.verl, args.recipe, write=args.write, timeout_s=args.timeout_per_script)
    print(report.text(), end="")
    return EXIT_REGRESSED if report.drifted else EXIT_PASSED
