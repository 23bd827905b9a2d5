"""Executing a scenario notebook with papermill: the one module that imports papermill.

The executed copy lands in the run directory as ``notebook.ipynb``; its outputs and the injected
parameters are redacted right after execution (a parameter or a printed environment can carry a
token), whether the notebook ran through or not. The kernel runs with the repository root as its
working directory so the notebook's relative paths (``params/...``, ``runs``) mean the same as on
the command line.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import papermill
from papermill.exceptions import PapermillExecutionError

from workbook.core import project
from workbook.core.layout import COMPARISON_NOTEBOOK, COMPARISON_PAGE, RUN_FILES
from workbook.core.redaction import redact_file, redact_text
from workbook.errors import InputError, RunFailed

REPO_ROOT = project.root()


def execute(
    template: Path,
    run_dir: Path,
    parameters: dict[str, Any],
    *,
    cwd: Path | None = None,
    stream: bool = True,
    kernel_name: str | None = None,
) -> Path:
    """Run ``template`` with ``parameters`` into ``run_dir/notebook.ipynb``; return its path.

    Raises:
        InputError: a parameter the notebook does not declare (papermill only warns).
        RunFailed: a cell raised; the executed notebook is still written (and redacted).
    """
    template, out = Path(template), Path(run_dir) / RUN_FILES["notebook"]
    unknown = sorted(set(parameters) - set(declared_parameters(template)))
    if unknown:
        raise InputError(f"{template}: unknown notebook parameter(s): {', '.join(unknown)}")
    handler = _stream_handler() if stream else None
    try:
        papermill.execute_notebook(
            str(template),
            str(out),
            parameters=parameters,
            cwd=str(cwd or REPO_ROOT),
            log_output=stream,
            progress_bar=False,
            kernel_name=kernel_name,
        )
    except PapermillExecutionError as exc:
        raise RunFailed(
            f"{out}: cell {exc.exec_count} raised {exc.ename}: {redact_text(str(exc.evalue))}"
        ) from None
    finally:
        if handler is not None:
            logging.getLogger("papermill").removeHandler(handler)
        if out.exists():
            redact_notebook(out)
    return out


def execute_comparison(parameters: dict[str, Any], folder: Path) -> Path:
    """Run ``notebooks/compare.ipynb`` into ``folder`` (``comparison.ipynb``); its last cell
    renders ``comparison.html`` there. Returns the page."""
    from workbook.core.project import notebook

    folder.mkdir(parents=True, exist_ok=True)
    out = folder / COMPARISON_NOTEBOOK
    try:
        papermill.execute_notebook(str(notebook("compare")), str(out), parameters=parameters,
                                   progress_bar=False, log_output=False)
    except PapermillExecutionError as exc:
        raise RunFailed(f"{out}: cell {exc.exec_count} raised {exc.ename}: "
                        f"{redact_text(str(exc.evalue))}") from None
    return folder / COMPARISON_PAGE


def declared_parameters(template: Path) -> dict[str, Any]:
    """The notebook's ``parameters`` cell as ``{name: default text}`` (papermill's view)."""
    found = papermill.inspect_notebook(str(template))
    return {name: info.get("default") for name, info in found.items()}


def redact_notebook(path: Path) -> Path:
    """Redact every cell's source, outputs and metadata in place (images left as they are),
    inside the notebook's structure so it stays a valid notebook."""
    return redact_file(Path(path), Path(path), form="ipynb")


def _stream_handler() -> logging.Handler:
    """Papermill logs each cell output line; show them as the run goes."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("papermill")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return handler
