"""``workbook diagnose PATH``: why a run failed, as JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbook.core.redaction import dump_json
from workbook.metrics.reading import diagnose

EPILOG = """examples:
  workbook diagnose runs/gspo-tiny/20261129T181829Z-1a2b3c    # uses run.json's exit code
  workbook diagnose nightly.log --exit-code 1 --expected-steps 15
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "diagnose",
        help="say why a run failed (JSON: status, category, summary, evidence, last_step)",
        description="Diagnose a run from its console log, metrics JSONL or run directory. A run "
        "with no completed training step is 'failed', category 'no_metrics', as in "
        "'workbook check'; a path that is neither is bad input (exit 2).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("path", type=Path, help="log file, JSONL file or run directory")
    parser.add_argument(
        "--exit-code",
        type=int,
        default=None,
        help="the run's exit code (a run directory's run.json is used otherwise)",
    )
    parser.add_argument(
        "--expected-steps",
        type=int,
        default=None,
        help="steps a complete run reaches (fewer is 'incomplete')",
    )
    parser.set_defaults(handler=run_diagnose)


def run_diagnose(args: argparse.Namespace) -> int:
    """Print the diagnosis; exit 0 whatever the verdict (the verdict is in the JSON).

    A FIFO, a device, binary data or a folder that is no run directory is refused before
    anything is read (MetricsError, exit 2), so the command never blocks.
    """
    result = diagnose(args.path, exit_code=args.exit_code, expected_steps=args.expected_steps)
    sys.stdout.write(dump_json(result.to_dict()))  # redacted: CI logs can be public
    return 0
