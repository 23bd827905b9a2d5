"""``workbook suite run|validate SUITE``: many scenarios, one verdict, one JUnit file, one index."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from workbook.cli import terminal
from workbook.cli.scenario import add_python_arg, use_python
from workbook.core.layout import default_root
from workbook.core.redaction import redact_text
from workbook.core.values import number_text
from workbook.history.bisect_hint import hint_for_run

if TYPE_CHECKING:
    from workbook.batch.records import Record

EPILOG = """examples:
  workbook suite validate params/suites/nightly-npu-a2.txt
  workbook suite run params/suites/smoke-cpu.txt --junit junit.xml
  workbook suite run params/suites/smoke-cpu.txt --only 'gspo-*' --timeout-per-scenario 1800
  workbook suite run params/suites/smoke-cpu.txt --rerun      # run finished entries again

Each entry runs into its own run directory under one suite directory, printed last. The same
command on the same UTC day resumes the suite there. Exit code: the worst entry's (0 passed,
1 regressed, 3 failed or stopped); 2 when an entry is invalid (then nothing starts)."""
COLUMNS = ("entry", "verdict", "duration", "step time (s)", "reward", "clip fraction", "report")


def register(sub: argparse._SubParsersAction) -> None:
    suite = sub.add_parser("suite", help="run or validate a suite of scenarios",
                           epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = suite.add_subparsers(dest="suite_action", required=True, metavar="{run,validate}")
    run = actions.add_parser("run", help="validate every entry, then run them in order",
                             epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("suite", type=Path, help="suite file (params/suites/<name>.txt)")
    run.add_argument("--only", metavar="PATTERN", help="run the entries whose scenario matches")
    run.add_argument("--timeout-per-scenario", type=float, metavar="S", dest="timeout",
                     help="end an entry after S seconds (it fails; the suite goes on)")
    run.add_argument("--junit", type=Path, metavar="FILE", help="write one JUnit XML file here")
    run.add_argument("--rerun", action="store_true", help="run entries that already finished")
    run.add_argument("--dir", type=Path, help="suite directory (default: "
                     "<runs>/suites/<suite>/<UTC date>, so a rerun the same day resumes)")
    run.add_argument("--runs", type=Path, help="runs root (default $WORKBOOK_RUNS or runs/)")
    run.add_argument("--echo", action="store_true", help="stream each run's log to the terminal")
    run.add_argument("--verl", type=Path, help="the verl checkout every entry runs ($WORKBOOK_VERL)")
    add_python_arg(run)
    run.set_defaults(handler=run_command)
    check = actions.add_parser("validate", help="validate every entry; nothing is launched")
    check.add_argument("suite", type=Path)
    add_python_arg(check)
    check.set_defaults(handler=validate_command)


def validate_command(args: argparse.Namespace) -> int:
    from workbook.batch.suite import validate_suite

    use_python(args)
    entries = validate_suite(args.suite)  # every problem of every line and entry at once
    print(f"{args.suite}: {len(entries)} entries, all valid")
    return 0


def run_command(args: argparse.Namespace) -> int:
    from workbook.batch.junit import write_batch_junit
    from workbook.batch.suite import run_suite
    from workbook.report.index import write_index
    from workbook.report.summary import summarize

    root = (args.runs or default_root()).resolve()
    use_python(args)  # every entry, and the notebook each runs in, launches verl with it
    if args.verl:  # every entry, and the notebook each runs in, loads its scenario with it
        os.environ["WORKBOOK_VERL"] = str(args.verl.expanduser().resolve())

    def started(directory: Path) -> None:
        args.started = True  # a surprise from here on is a failed suite (3), not bad input
        print(f"suite directory: {directory}", flush=True)

    result = run_suite(args.suite, runs_root=root, directory=args.dir, only=args.only,
                       timeout_s=args.timeout, rerun=args.rerun, echo=args.echo,
                       on_start=started)
    rows = []
    for record in result.entries:
        headline: dict[str, float | None] = {}
        if record.run_dir and Path(record.run_dir).is_dir():
            headline = summarize(Path(record.run_dir)).headline
        rows.append((record.key, record.status, _seconds(record.duration_s),
                     number_text(headline.get("mean step time")), number_text(headline.get("final reward")),
                     number_text(headline.get("clip fraction")), record.report or "-"))
    terminal.show(terminal.table(f"suite {result.name}", COLUMNS, rows, status_column=1))
    for line in bisect_hints(result.entries, root):
        print(line)
    if result.interrupted:
        print("suite: stopped by the user; entries after the stopped one did not run")
    if args.junit:  # from each run's own verdict: a run is judged once
        print(f"junit: {write_batch_junit(result.entries, args.junit)}")
    print(f"index: {write_index(root)}")
    print(result.directory)
    return result.exit_code


def bisect_hints(records: list[Record], root: Path) -> list[str]:
    """The lines the summary prints for each red entry: its ``workbook bisect`` command, and
    what the command still needs when the ledger does not know it (redacted)."""
    lines = []
    for record in records:
        if not record.run_dir or not Path(record.run_dir).is_dir():
            continue
        hint = hint_for_run(Path(record.run_dir), root)
        if hint is None:
            continue
        said = [hint.note] if hint.note else []
        said += [f"the verl commit it started at: {hint.command}"] if hint.command else []
        lines += [redact_text(f"suite: {record.key}: {line}") for line in said]
    return lines


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} s"

