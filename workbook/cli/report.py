"""``workbook report``, ``index`` and ``publish``: thin shells over the library."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from workbook.cli import terminal
from workbook.core.clock import now_iso
from workbook.core.layout import RUN_FILES, RunDir, default_root, is_run_dir
from workbook.core.status import ACTIVE, RunStatus
from workbook.errors import EXIT_BAD_INPUT, InputError, RunFailed
from workbook.report.retention import KEEP_NIGHTS

REPORT_EPILOG = """examples:
  workbook report runs/gspo-tiny-1n1cpu-fsdp2-vllm/20261129T181829Z-1a2b3c
  workbook report nightly-console.log --out runs      # import a log into runs/imported/<id>/
  workbook report metrics.jsonl

The report's path is printed last. Exit codes are the verdict's: 0 passed, 1 regressed, 3 failed
or stopped (or not judged yet: a run still running), 2 bad input."""


def register(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser(
        "report",
        help="render report.html for a run directory, or import a log and render it",
        description="Render report.html (verdict, checks, plots, failure, parameters, "
        "reproducibility) for a run directory. A verl console log or file-logger JSONL from "
        "elsewhere is first imported into a new run directory (scenario 'imported').",
        epilog=REPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument("path", type=Path, help="run directory, verl console log or JSONL")
    report.add_argument(
        "--out",
        type=Path,
        help="runs root for an imported log; for a run "
        "directory, a folder that also receives a copy of report.html",
    )
    report.set_defaults(handler=report_command)

    index = sub.add_parser(
        "index",
        help="write index.html listing every run, newest first",
        epilog="example:\n  workbook index runs --out public",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    index.add_argument("runs_root", type=Path)
    index.add_argument("--out", type=Path, help="folder (or .html file) for the index")
    index.set_defaults(handler=index_command)

    publish = sub.add_parser(
        "publish",
        help="add reports, redacted run files and the ledger to the site DEST (never through a "
        "link; what DEST held stays), then write its index",
        epilog="examples:\n  workbook publish runs /srv/www/verl-nightly\n"
        "  workbook publish runs site --keep-nights 60   # site: a checkout of the Pages branch",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    publish.add_argument("runs_root", type=Path)
    publish.add_argument("dest", type=Path)
    publish.add_argument("--keep-nights", type=_nights, default=KEEP_NIGHTS, metavar="N",
                         help="full run pages for the newest N nights; older runs keep their "
                         f"index line, verdict and trend point, the ledger keeps every night "
                         f"(default {KEEP_NIGHTS})")
    publish.set_defaults(handler=publish_command)

    seed = sub.add_parser(
        "seed",
        help="seed a runs root with what a published site remembers (its ledger, and what the "
        "across-nights features read of each run) before a night on a fresh runner",
        epilog="example:\n  workbook seed --from site            # into $WORKBOOK_RUNS\n"
        "  workbook seed --from site runs",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    seed.add_argument("--from", dest="site", type=Path, required=True, metavar="SITE",
                      help="a checkout of the site's branch, or a folder `workbook publish` wrote")
    seed.add_argument("runs_root", type=Path, nargs="?",
                      help="default: $WORKBOOK_RUNS, else the project's runs/")
    seed.set_defaults(handler=seed_command)


def report_command(args: argparse.Namespace) -> int:
    """Close the run (judged again only if its inputs changed), render, exit with the verdict.

    A run still running is rendered as it stands and not judged: it has not passed (3). It is
    never ended here while the process driving it lives (``run.life.close``); one whose driver
    died is recorded failed, and only the processes carrying its tag are ended.
    """
    from workbook.checks.verdict import exit_code_of
    from workbook.metrics.loading import input_kind
    from workbook.run.life import close, judge

    path: Path = args.path
    if input_kind(path) == "run directory":  # MetricsError (exit 2): not a run, log or JSONL
        if not is_run_dir(path):
            raise InputError(
                f"{path}: not a run directory (no {RUN_FILES['run']} or {RUN_FILES['log']})"
            )
        rd = RunDir(path.resolve())
    else:
        rd = import_log(path, args.out or default_root())
    judge(rd)  # bad input (a baseline that cannot be read) is exit 2, before anything is written
    done = close(rd, announce=False, rerender=True)
    terminal.closing_errors(done.errors, rd.path)
    if done.report is None:
        raise RunFailed(f"{rd.path}: the report could not be rendered: "
                        + "; ".join(done.errors))
    report = done.report
    if args.out and not rd.path.is_relative_to(Path(args.out).resolve()):
        args.out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(report, args.out / report.name)
        report = args.out / report.name
    print(report)
    status = rd.verdict().get("status") if rd.read_json("run").get("status") not in ACTIVE else None
    return exit_code_of(status)


def import_log(source: Path, runs_root: Path) -> RunDir:
    """A new run directory (scenario ``imported``) holding a log or JSONL from elsewhere."""
    from workbook.metrics.loading import is_jsonl_file, load_metrics
    from workbook.metrics.reading import diagnose

    metrics = load_metrics(source)  # MetricsError (exit 2) when unreadable
    run = RunDir.create(Path(runs_root), "imported")
    shutil.copyfile(source, run.file("metrics" if is_jsonl_file(source) else "log"))
    diagnosis = diagnose(run.path, metrics=metrics).to_dict()
    run.update_run(
        run_id=run.run_id,
        scenario="imported",
        status=RunStatus.IMPORTED.value,  # no process ended here: the log's own words are the evidence
        exit_code=None,
        started_at=now_iso(),
        message=f"imported from {source.resolve()}",
        source=str(source.resolve()),
        runs_root=str(Path(runs_root).resolve()),
        diagnosis=diagnosis,
    )  # versions and host of the original run are unknown
    return run


def index_command(args: argparse.Namespace) -> int:
    from workbook.report.index import write_index

    if not args.runs_root.is_dir():
        raise InputError(f"{args.runs_root}: not a directory")
    print(write_index(args.runs_root, args.out))
    return 0


def publish_command(args: argparse.Namespace) -> int:
    """Publish; every file refused (a link, not a regular file) is named on stderr, and a
    publication that copied no file of any run exits 2: the site would list nothing."""
    from workbook.report.publish import publish_site

    done = publish_site(args.runs_root, args.dest, keep_nights=args.keep_nights)
    for line in done.skipped:
        print(f"publish: skipped {line}", file=sys.stderr)
    print(done.index)
    if not done.copied:
        print(f"publish: no file of any run copied from {args.runs_root}"
              + (f" ({len(done.skipped)} skipped)" if done.skipped else ""), file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def seed_command(args: argparse.Namespace) -> int:
    """Seed; every file refused is named on stderr, then what was taken."""
    from workbook.report.seed import seed

    root = args.runs_root or default_root()
    done = seed(args.site, root)
    for line in done.skipped:
        print(f"seed: skipped {line}", file=sys.stderr)
    print(f"{root}: {len(done.runs)} run(s) and {done.entries} ledger entr"
          f"{'y' if done.entries == 1 else 'ies'} seeded from {args.site}")
    return 0


def _nights(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number of nights, at least 1")
    return value
