"""``workbook metrics PATH``: the metrics of a log, a JSONL file or a run directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbook.errors import MetricsError
from workbook.metrics.formats import jsonl_lines, summary_table, write_csv
from workbook.metrics.loading import load_metrics

EPILOG = """examples:
  workbook metrics runs/gspo-tiny/20261129T181829Z-1a2b3c        # summary of a run directory
  workbook metrics run.log --format jsonl > metrics.jsonl        # console log -> file-logger JSONL
  workbook metrics metrics.jsonl --format csv > metrics.csv      # wide table for a spreadsheet
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "metrics",
        help="print the metrics of a verl log, JSONL file or run directory",
        description="Read every step's metrics from a verl console log, a file-logger JSONL "
        "file or "
        "a run directory (metrics.jsonl wins, run.log fills gaps).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("path", type=Path, help="log file, JSONL file or run directory")
    parser.add_argument(
        "--format",
        choices=("table", "jsonl", "csv"),
        default="table",
        help="table: short summary (default); jsonl: one {step, data} per line; csv: wide",
    )
    parser.set_defaults(handler=run_metrics)


def run_metrics(args: argparse.Namespace) -> int:
    """Print the metrics; exit 2 when the input holds no training step (nothing to print)."""
    run = load_metrics(args.path)
    if not len(run):
        raise MetricsError(f"{args.path}: no training step in it (no 'step:N - name:value' line, "
                           "no file-logger record): no metrics to print")
    out = sys.stdout
    if args.format == "jsonl":
        for line in jsonl_lines(run):
            out.write(line + "\n")
    elif args.format == "csv":
        write_csv(run, out)
    else:
        out.write(summary_table(run, title=str(args.path)) + "\n")
    return 0
