"""The ``workbook`` command: thin subcommands over the library, errors caught once here.

Exit codes: 0 all checks passed, 1 a check failed (regression), 2 bad input or usage,
3 the run itself failed (crash, timeout, infrastructure).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from workbook.errors import EXIT_BAD_INPUT, WorkbookError

# One module per subcommand family, each with register(subparsers).
SUBCOMMAND_MODULES = (
    "workbook.cli.scenario",  # validate, plan, run
    "workbook.cli.assets",
    "workbook.cli.metrics",
    "workbook.cli.diagnose",
    "workbook.cli.check",
    "workbook.cli.bless",
    "workbook.cli.report",
    "workbook.cli.cluster",
    "workbook.cli.rayjob",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep the message short
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
    try:
        return int(args.handler(args))
    except WorkbookError as exc:
        print(f"{type(exc).__name__}: {exc.message}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
