"""Where the project's folders are, whoever asks: the CLI, papermill, or a JupyterLab kernel.

A notebook opened in JupyterLab runs with ``notebooks/`` as its working directory, papermill
with the caller's, a CI job with the checkout's: so nothing may resolve ``params/...`` or
``runs/`` against the working directory alone. The project root is the folder holding
``params/`` and ``notebooks/`` next to the installed package (an editable install from a
checkout, as the README's commands make); ``$WORKBOOK_PARAMS`` and ``$WORKBOOK_RUNS`` move the
scenarios and the runs elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from workbook.errors import InputError

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # workbook/ (this file is workbook/core/...)
PROJECT_ROOT = PACKAGE_DIR.parent


def root() -> Path:
    """The checkout holding ``params/`` and ``notebooks/`` (the package's parent folder)."""
    return PROJECT_ROOT


def params_dir() -> Path:
    """``$WORKBOOK_PARAMS``, else the project's ``params/``."""
    chosen = os.environ.get("WORKBOOK_PARAMS")
    return Path(chosen).expanduser().resolve() if chosen else root() / "params"


def nightly_dir() -> Path:
    """The script facts of verl's nightly jobs, one ``<scenario>.script.json`` per scenario that
    reproduces one (``workbook nightly sync`` reads and rewrites them)."""
    return params_dir() / "nightly"


def runs_root() -> Path:
    """``$WORKBOOK_RUNS``, else the project's ``runs/``: the one runs root, whoever starts a run."""
    chosen = os.environ.get("WORKBOOK_RUNS")
    return Path(chosen).expanduser().resolve() if chosen else root() / "runs"


def notebook(name: str) -> Path:
    """A notebook template of the project (``gspo`` -> ``<root>/notebooks/gspo.ipynb``)."""
    return root() / "notebooks" / (name if name.endswith(".ipynb") else f"{name}.ipynb")


def run_notebook(launcher: str | None) -> str:
    """The notebook that drives a launcher's runs and renders their reports: a local run the
    GSPO one, a Ray or KubeRay job the multinode one."""
    return "gspo" if launcher in (None, "", "local") else "ppo_multinode"


def find_scenario(path: str | Path) -> Path:
    """A scenario file as written on a command line or in a notebook's parameters cell.

    Tried in order: as given (absolute, or relative to the working directory); relative to the
    project root (``params/gspo.yaml``); relative to the params folder (``gspo.yaml``).
    """
    given = Path(path).expanduser()
    candidates = [given] if given.is_absolute() else [
        given, root() / given, params_dir() / given,
        params_dir() / Path(*given.parts[1:]) if given.parts[:1] == ("params",) else given,
    ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    tried = ", ".join(dict.fromkeys(str(c) for c in candidates))
    raise InputError(f"no such scenario file: {path} (looked for {tried})")
