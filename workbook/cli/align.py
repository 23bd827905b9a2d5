"""``workbook align RUN_A RUN_B`` and ``workbook align --replay-from RUN_A PARAMS``: do two runs
train alike? (Precision alignment of a scenario ported to another chip or verl version.)

Exit codes: 0 aligned, 1 not aligned, 2 bad input (not run directories, runs of different
scenarios, a run without metrics, a malformed threshold; for ``--replay-from`` also a run A
without a rollouts dump and an invalid scenario, all before anything starts), 3 anything
unexpected once the alignment is recorded (its page or the index not written), or run B failed
or was stopped.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from workbook.align.junit import alignment_suite
from workbook.checks.junit import write_junit
from workbook.cli.scenario import launch, validated
from workbook.cli.terminal import closing_errors, table, verdict_line
from workbook.cli.terminal import show as print_all
from workbook.core.layout import ROLLOUTS_DIR, RunDir, is_run_dir
from workbook.core.serialization import load_yaml
from workbook.errors import EXIT_RUN_FAILED, InputError, WorkbookError

if TYPE_CHECKING:
    from workbook.report.alignment import Record
    from workbook.run.driver import RunResult

EPILOG = """examples:
  workbook align runs/SCENARIO/RUN_A runs/SCENARIO/RUN_B
  workbook align runs/SCENARIO/RUN_A runs/SCENARIO/RUN_B --threshold actor/grad_norm=5 \\
      --metric critic/score/mean --min-throughput-ratio 0.8 --junit align.xml
  workbook align --replay-from runs/SCENARIO/RUN_A params/SCENARIO.yaml -s profile=npu

Run A is the reference. Thresholds are the largest mean error in % of A's scale: actor/pg_loss 2
and critic/rewards/mean 4 by default, then run A's scenario's alignment: section, then
--threshold. --replay-from runs PARAMS as `workbook run` does, replaying run A's rollouts (the
pinned dump run A replayed, else RUN_A/rollouts), and aligns A with the new run. The page's path
is printed last.
Exit 0 aligned, 1 not aligned, 2 bad input, 3 unexpected (or run B failed)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("align", help="judge whether two runs train alike (precision alignment)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", type=Path, nargs="+", metavar="PATH",
                   help="RUN_A RUN_B: the reference run directory and the one judged against it; "
                   "with --replay-from, PARAMS: the scenario run B runs")
    p.add_argument("--replay-from", type=Path, default=None, metavar="RUN_A",
                   help="run PARAMS first, replaying this run's rollouts, then align it with them")
    p.add_argument("--threshold", action="append", default=[], metavar="METRIC=PCT",
                   help="largest mean error of a metric in %% (repeatable; over the defaults)")
    p.add_argument("--metric", action="append", default=[], metavar="METRIC",
                   help="another metric to report (repeatable)")
    p.add_argument("--min-throughput-ratio", type=float, default=None, metavar="R",
                   help="judge B's throughput over the first 4 steps: at least R x A's")
    p.add_argument("--out", type=Path, default=None,
                   help="folder for alignment.json and the page (default <runs>/alignments/<id>)")
    p.add_argument("--junit", type=Path, default=None, metavar="FILE", help="write JUnit XML")
    run = p.add_argument_group("with --replay-from: how run B runs (as in workbook run)")
    run.add_argument("-s", "--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                     help="override a field of PARAMS (repeatable; later wins)")
    run.add_argument("--verl", type=Path, default=None, metavar="PATH",
                     help="the verl checkout under test (same as -s verl.path=PATH)")
    run.add_argument("--runs", type=Path, default=None, help="runs root (default $WORKBOOK_RUNS)")
    run.add_argument("--quiet", action="store_true", help="do not stream run B's log")
    p.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace,
                execute: Callable[..., RunResult] | None = None) -> int:
    """Align two runs, or run B on run A's rollouts first (``execute`` stands in for the run's
    :func:`~workbook.run.driver.execute_run` in tests)."""
    from workbook.align.compute import parse_threshold

    thresholds = dict(parse_threshold(t) for t in args.threshold)
    result = None
    if args.replay_from is None:
        if args.sets or args.verl or args.runs:
            raise InputError("-s, --verl and --runs describe the run --replay-from starts; two "
                             "existing runs take none of them")
        if len(args.paths) != 2:
            raise InputError("align takes two run directories, RUN_A RUN_B (or --replay-from "
                             f"RUN_A PARAMS); got {len(args.paths)} path(s)")
        run_a, run_b = args.paths
        if is_run_dir(run_a) and _same_dir(run_a, run_b):
            raise InputError(f"align judges two runs; {run_a} and {run_b} are one run directory")
    else:
        if len(args.paths) != 1:
            raise InputError("--replay-from RUN_A takes one scenario, PARAMS; got "
                             f"{len(args.paths)} path(s)")
        run_a = args.replay_from
        result = replay(args, run_a, execute)
        run_b = result.run_dir
        print(f"run B: {run_b} ({result.verdict}: {result.reason})", flush=True)
    record, errors = align_and_report(args, run_a, run_b, thresholds)
    failed = bool(errors) or result is not None and (
        result.exit_code == EXIT_RUN_FAILED or bool(result.errors))
    print(record.page)
    return EXIT_RUN_FAILED if failed else record.alignment.judgement.exit_code


def replay(args: argparse.Namespace, run_a: Path,
           execute: Callable[..., RunResult] | None = None) -> RunResult:
    """Run ``args.paths[0]`` replaying run A's rollouts (:func:`dump_of`) the way ``workbook
    run`` does; refused before anything starts when run A has no dump, no metrics, or is of
    another scenario than PARAMS."""
    from workbook.align.runs import evidence_of, scenario_name

    reference = evidence_of(run_a, "A")
    dump = dump_of(run_a)
    if not dump.is_dir() or not any(dump.iterdir()):
        raise InputError(f"run A has no rollouts dump ({dump}): make the reference run with "
                         "-s rollouts.record=true (or replaying a dump) so run B can replay it")
    args.params = args.paths[0]
    args.sets = [*args.sets, *replay_sets(dump)]
    params, s = validated(args)  # rollouts.replay last: it wins over a -s of the same key
    if s.name != scenario_name(reference):
        raise InputError(f"runs of different scenarios: run A is {scenario_name(reference)!r}, "
                         f"{params} is {s.name!r}; replay into the scenario run A ran")
    return launch(args, params, s, execute)


def dump_of(run_a: Path) -> Path:
    """What run B replays to train on run A's rollouts: the pinned dump run A replayed, when it
    replayed one that is still there (the same rollouts, and the same setting as A's, so B is
    compared with A's baseline too), else the dump run A wrote (``RUN_A/rollouts``)."""
    try:
        params = load_yaml(RunDir(run_a.resolve()).file("params"))
    except WorkbookError:
        params = None
    rollouts = params.get("rollouts") if isinstance(params, dict) else None
    pinned = rollouts.get("replay") if isinstance(rollouts, dict) else None
    if isinstance(pinned, str) and Path(pinned).is_dir() and any(Path(pinned).iterdir()):
        return Path(pinned)
    return run_a.resolve() / ROLLOUTS_DIR


def replay_sets(dump: Path) -> list[str]:
    """The override that makes run B replay run A's rollouts."""
    return [f"rollouts.replay={dump}"]


def align_and_report(args: argparse.Namespace, run_a: Path, run_b: Path,
                     thresholds: dict[str, float]) -> tuple[Record, list[str]]:
    """Align and record (bad input stops here, exit 2), then render the page and index it
    (a step that fails is named, its traceback kept in the folder: exit 3); print the table;
    write JUnit if asked."""
    from workbook.report.alignment import prepare
    from workbook.run.life import close

    record = prepare(run_a, run_b, thresholds=thresholds, metrics=args.metric,
                     min_throughput_ratio=args.min_throughput_ratio,
                     out=args.out.resolve() if args.out else "")
    args.started = True  # recorded: from here on a surprise is exit 3, never a verdict
    errors = close(record, announce=False).errors
    closing_errors(errors, record.folder)
    if args.junit:
        write_junit([alignment_suite(record.alignment, page=str(record.page))], args.junit)
    show(record)
    return record, errors


def show(record: Record) -> None:
    """The verdict, the warnings and one row per metric, on stdout."""
    from workbook.align.compute import percent_text, threshold_text

    a = record.alignment
    rows = [(m.metric, threshold_text(m.threshold), percent_text(m.mae),
             percent_text(m.max_error), m.first_beyond or "-", m.status) for m in a.metrics]
    ratio = a.throughput.ratio
    print_all(table(f"{a.b.label} against {a.a.label}",
                    ("metric", "threshold", "mean error", "largest", "first step beyond",
                     "status"), rows, status_column=5),
              f"throughput ratio B/A over steps {_steps(a.throughput.steps)}: "
              + ("not measured" if ratio is None else f"{ratio:.3g}"),
              *(f"warning: {w}" for w in a.judgement.warnings),
              verdict_line(a.status, a.judgement.reason))
    sys.stdout.flush()


def _steps(steps: Sequence[int]) -> str:
    return ", ".join(map(str, steps)) or "-"


def _same_dir(a: Path, b: Path) -> bool:
    """Whether two paths name one directory (through a link or another spelling)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
