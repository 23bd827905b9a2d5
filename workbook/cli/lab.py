"""``workbook lab [NOTEBOOK]``: JupyterLab on working copies of the project's notebooks.

The tracked notebooks stay clean: JupyterLab's autosave writes outputs and edited parameters
into the file it has open, so researchers open a working copy (``<project>/lab/``, ignored by
git) made from ``notebooks/`` the first time (never overwritten unless ``--fresh``). The kernel's
working directory is then ``lab/``, which the notebooks do not depend on: scenarios resolve
against the project and runs land in the one runs root.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
from pathlib import Path

from workbook.core.project import notebook, root
from workbook.errors import InputError

EPILOG = """examples:
  workbook lab                    # lab/gspo.ipynb in JupyterLab (copied from notebooks/ once)
  workbook lab compare --fresh    # a new working copy of notebooks/compare.ipynb
  workbook lab --port 8890 --no-browser --jupyter-arg=--ServerApp.ip=0.0.0.0"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lab", help="open a notebook in JupyterLab (a working copy, git stays clean)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("notebook", nargs="?", default="gspo",
                   help="gspo (default), ppo_multinode or compare")
    p.add_argument("--dir", type=Path, help="folder of the working copies (default <project>/lab)")
    p.add_argument("--fresh", action="store_true", help="copy the notebook again (edits are lost)")
    p.add_argument("--port", type=int, help="JupyterLab's port (default: its own choice)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--jupyter-arg", action="append", default=[], metavar="ARG",
                   help="any other jupyter lab option, e.g. --jupyter-arg=--ServerApp.ip=0.0.0.0")
    p.set_defaults(handler=run_command)


def working_copy(name: str, folder: Path, *, fresh: bool = False) -> Path:
    """``folder/<name>.ipynb``, copied from ``notebooks/`` unless it is there already."""
    source = notebook(Path(name).stem)
    if not source.is_file():
        known = ", ".join(p.stem for p in sorted((root() / "notebooks").glob("*.ipynb")))
        raise InputError(f"no notebook {name!r}; the project has {known}")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    if fresh or not target.exists():
        shutil.copyfile(source, target)
    return target


def run_command(args: argparse.Namespace) -> int:
    folder = (args.dir or root() / "lab").resolve()
    notebook = working_copy(args.notebook, folder, fresh=args.fresh)
    extra = list(args.jupyter_arg) + ([f"--port={args.port}"] if args.port else []) + (
        ["--no-browser"] if args.no_browser else [])
    if importlib.util.find_spec("jupyterlab") is None:
        raise InputError("workbook lab needs JupyterLab: pip install 'verl-workbook[jupyter]'")
    argv = [sys.executable, "-m", "jupyter", "lab", str(notebook),
            f"--ServerApp.root_dir={folder}", *extra]
    if os.geteuid() == 0 and "--allow-root" not in extra:
        argv.append("--allow-root")  # containers and CI machines run as root; JupyterLab refuses
    print(f"JupyterLab on {notebook} (working copy of notebooks/{notebook.name})", flush=True)
    os.execv(sys.executable, argv)
    return 0  # not reached: jupyter lab replaces this process
