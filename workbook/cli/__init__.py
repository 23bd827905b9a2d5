"""The ``workbook`` command: thin subcommands over the library, errors caught once here.

Exit codes: 0 all checks passed, 1 a check failed (regression), 2 bad input or usage,
3 the run itself failed (crash, timeout, infrastructure, stopped).

1 is only ever a verdict. An error the workbook explains exits with its own code; once a run
has started (a handler sets ``args.active_run`` or ``args.started``) even bad input found late is
a failed run (3). Anything unexpected prints one line, keeps its traceback (in the run
directory when there is one) and exits 3, or 2 when nothing had started yet. Everything a
command prints is redacted (:func:`~workbook.cli.terminal.redacted_output`), but for the product
a command was asked for (``plan``'s command, ``rayjob``'s manifest, which the user pipes on).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from workbook.cli.terminal import redacted_output
from workbook.core.layout import ERROR_LOG
from workbook.core.redaction import redact_text
from workbook.errors import EXIT_BAD_INPUT, EXIT_RUN_FAILED, WorkbookError

# One module per subcommand family, each with register(subparsers).
SUBCOMMAND_MODULES = (
    "workbook.cli.scenario",  # validate, plan, run
    "workbook.cli.data",  # data prepare
    "workbook.cli.assets",
    "workbook.cli.metrics",
    "workbook.cli.diagnose",
    "workbook.cli.check",
    "workbook.cli.bless",
    "workbook.cli.report",
    "workbook.cli.cluster",
    "workbook.cli.rayjob",
    "workbook.cli.suite",
    "workbook.cli.sweep",
    "workbook.cli.bisect",
    "workbook.cli.compare",
    "workbook.cli.align",
    "workbook.cli.lab",
    "workbook.cli.nightly",  # nightly sync
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 too; keep the message short
        self.print_usage(sys.stderr)
        print(f"workbook: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="workbook", description="Validate verl RL runs: params -> run -> checks -> report.")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    raw = getattr(args, "raw_output", None)  # set_defaults(raw_output=lambda args: ...)
    if raw is not None and raw(args):  # the product itself: plan's command, a manifest
        return _handle(args)
    with redacted_output():
        return _handle(args)


def _handle(args: argparse.Namespace) -> int:
    try:
        return int(args.handler(args))
    except WorkbookError as exc:
        print(redact_text(f"{type(exc).__name__}: {exc.message}"), file=sys.stderr)
        return max(exc.exit_code, EXIT_RUN_FAILED) if _started(args) else exc.exit_code
    except KeyboardInterrupt:
        print("workbook: interrupted", file=sys.stderr)
        return EXIT_RUN_FAILED if _started(args) else EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - the one place a surprise becomes an exit code
        where = _keep_traceback(getattr(args, "active_run", None))
        print(redact_text(f"workbook: internal error: {type(exc).__name__}: {exc} "
                          f"(traceback: {where})"), file=sys.stderr)
        return EXIT_RUN_FAILED if _started(args) else EXIT_BAD_INPUT


def _started(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "active_run", None) or getattr(args, "started", False))


def _keep_traceback(run_dir: Path | None) -> Path:
    """Write the current exception's traceback to the run directory (else a temp file)."""
    text = traceback.format_exc()
    if run_dir is not None and Path(run_dir).is_dir():
        path = Path(run_dir) / ERROR_LOG
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
        return path
    fd, name = tempfile.mkstemp(prefix="workbook-error-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return Path(name)


if __name__ == "__main__":
    sys.exit(main())
