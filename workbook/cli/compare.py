"""``workbook compare RUN_DIR... | SWEEP_DIR``: several runs on one page."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbook.core.layout import COMPARISONS_DIR
from workbook.errors import InputError

EPILOG = """examples:
  workbook compare runs/sweeps/gspo-tiny-1n1cpu-fsdp2-vllm/3f2a9c01d4
  workbook compare runs/gspo-tiny-1n1cpu-fsdp2-vllm/LAST_NIGHT runs/gspo-tiny-1n1cpu-fsdp2-vllm/TONIGHT

The first run is the reference the differences are taken against. The page's path is printed
last (a sweep's goes into the sweep directory, other comparisons into runs/comparisons/)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="overlay runs (or a sweep's points) on one page",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", type=Path, nargs="+", metavar="RUN_DIR|SWEEP_DIR")
    p.add_argument("--out", type=Path, help="folder for the page (runs compared only)")
    p.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from workbook.core.layout import SWEEP_FILE, RunDir, default_root, is_run_dir, new_run_id
    from workbook.run.notebook import execute_comparison

    paths = [p.resolve() for p in args.paths]
    if len(paths) == 1 and (paths[0] / SWEEP_FILE).is_file():
        page = execute_comparison({"sweep": str(paths[0])}, paths[0])
    else:
        missing = [str(p) for p in paths if not is_run_dir(p)]
        if missing or len(paths) < 2:
            raise InputError("compare takes two or more run directories, or one sweep "
                             f"directory; not run directories: {', '.join(missing) or '-'}")
        for path in paths:  # InputError naming a run.json that is no readable object
            RunDir(path).read_json("run")
        folder = (args.out or default_root() / COMPARISONS_DIR / new_run_id()).resolve()
        page = execute_comparison({"runs": [str(p) for p in paths], "out": str(folder)}, folder)
    print(page)
    return 0
