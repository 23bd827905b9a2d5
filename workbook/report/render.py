"""``report.html``: a run's notebook, code hidden, as one self-contained, redacted page.

The one module that imports nbconvert and nbformat. The page is rendered from the notebook
template the run used (``run.json``'s ``notebook``) with the parameters it ran with and, for
every report cell, the output that cell's library call gives for this run directory *now*
(each report cell is one ``sections.<name>(run)`` call that reads only the run's files). So
the report is the same whether the run was driven from JupyterLab, by plain papermill or by
``workbook run``, and whether or not its notebook survived: a crashed run always gets one.
Rendered at the end of a notebook, in its kernel, the page reuses the sections its cells just
computed (kept while the run's files are unchanged: :mod:`workbook.report.cache`) rather than
drawing them again. The same notebook, with those outputs, is written as the run's
``notebook.ipynb`` when the run directory has none (a JupyterLab or plain-papermill run keeps
its own copy elsewhere).

nbconvert's ``lab`` and ``classic`` templates pull require.js and MathJax from CDNs; a report
must open offline, so the notebook is exported with the ``basic`` template (body only, no
scripts) and wrapped in this package's own page with inline CSS. Parameter cells, papermill
metadata and cells tagged ``notebook-only`` (narration of the interactive steps) are dropped;
only cells tagged ``report`` or ``banner`` keep outputs, and the banner moves to the top.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import nbformat
from nbconvert import HTMLExporter

from workbook.core.layout import (
    ALIGNMENT_PAGE,
    COMPARISON_FILE,
    COMPARISON_NOTEBOOK,
    COMPARISON_PAGE,
    RUN_FILES,
    write_atomic,
    write_redacted,
)
from workbook.core.project import notebook as project_notebook
from workbook.core.project import run_notebook
from workbook.core.redaction import redact_mapping
from workbook.report import alignment, compare, sections
from workbook.report.page import page
from workbook.report.section import Section
from workbook.report.sections import BANNER_TAG, REPORT_TAG

# parameters carry paths and maybe secrets; notebook-only cells narrate the interactive steps
DROP_TAGS = {"parameters", "injected-parameters", "notebook-only"}
# a report cell is one call on the run (comparison, alignment) folder, by position or by keyword
_CALL = re.compile(r"^\s*((?:sections|compare|alignment)\.\w+)\(\s*(?:\w+\s*=\s*)?\w+\s*\)\s*$")
CALLS: dict[str, Callable[[Path], Section[Any]]] = {  # the only calls a report cell may make
    **{f"sections.{c.name}": c.call for c in sections.SECTIONS},
    "compare.table": compare.table, "compare.curves": compare.curves,
    "alignment.verdict": alignment.verdict, "alignment.table": alignment.table,
    "alignment.curves": alignment.curves, "alignment.runs": alignment.runs,
}


def render_report(run_dir: Path) -> Path:
    """Write ``report.html`` (and ``notebook.ipynb`` if missing) into the run directory."""
    run_dir = Path(run_dir)
    view = sections.view(run_dir)
    template = template_of(view.run)
    body, why = "", "no notebook template is recorded or found"
    if template is not None:
        try:
            notebook = executed_notebook(template, run_dir, view.run.get("notebook_parameters"))
            if not (run_dir / RUN_FILES["notebook"]).exists():
                write_redacted(run_dir / RUN_FILES["notebook"], nbformat.writes(notebook) + "\n")
            body = notebook_body(notebook)
        except Exception as exc:  # noqa: BLE001 - any notebook trouble still gets a report
            why = f"the notebook could not be rendered ({type(exc).__name__}: {exc})"
    if not body:
        note = f'<p class="wb-note">Built from the run directory: {why}.</p>'
        body = "".join(s.html for s in sections.report_sections(run_dir)) + note
    status, _ = view.verdict
    title = f"{status.upper()} · {view.scenario} · {view.run_id}"
    return write_atomic(run_dir / RUN_FILES["report"], page(title, body))


def render_comparison(folder: Path) -> Path:
    """Write ``comparison.html`` (and ``comparison.ipynb`` if missing) into a comparison folder."""
    folder = Path(folder)
    notebook = executed_notebook(project_notebook("compare"), folder,
                                 json.loads((folder / COMPARISON_FILE).read_text()))
    if not (folder / COMPARISON_NOTEBOOK).exists():
        write_redacted(folder / COMPARISON_NOTEBOOK, nbformat.writes(notebook) + "\n")
    return write_atomic(folder / COMPARISON_PAGE,
                        page(f"comparison · {folder.name}", notebook_body(notebook)))


def render_alignment(folder: Path) -> Path:
    """Write ``alignment.html`` into an alignment's folder from ``notebooks/align.ipynb``'s
    report cells, each computed from the folder's ``alignment.json``."""
    folder = Path(folder)
    record = alignment.load(folder)
    notebook = executed_notebook(project_notebook("align"), folder, alignment.inputs_of(folder))
    title = f"{record.alignment.status} · alignment · {folder.name}"
    return write_atomic(folder / ALIGNMENT_PAGE, page(title, notebook_body(notebook)))


def template_of(run: dict[str, Any]) -> Path | None:
    """The notebook a run was driven by (``gspo``, ``ppo_multinode``, or a path), if it exists."""
    name = str(run.get("notebook") or run_notebook(run.get("launcher")))
    path = Path(name) if name.endswith(".ipynb") and Path(name).is_absolute() else project_notebook(name)
    return path if path.is_file() else None


def executed_notebook(template: Path, folder: Path, parameters: dict[str, Any] | None) -> Any:
    """The template with its parameters injected and every report cell's output for ``folder``
    (a run directory, or a comparison's folder)."""
    nb = nbformat.read(str(template), as_version=4)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        tags = cell.get("metadata", {}).get("tags", [])
        if "parameters" in tags and parameters:
            cells.append(_injected(parameters))
        match = _CALL.match(cell.source) if cell.cell_type == "code" else None
        if match and match.group(1) in CALLS and {REPORT_TAG, BANNER_TAG} & set(tags):
            section = CALLS[match.group(1)](folder)
            cell.outputs = [nbformat.v4.new_output(
                "display_data", data={"text/html": section.html, "text/plain": repr(section)})]
    nb.cells = cells
    return nb


def notebook_body(notebook: Any) -> str:
    """The notebook's HTML body: inputs and prompts hidden, report outputs only."""
    body, _ = _exporter().from_notebook_node(prepare(notebook))
    return body


@cache
def _exporter() -> HTMLExporter:
    """One exporter a process: it compiles nbconvert's templates once, not once a page."""
    return HTMLExporter(
        template_name="basic",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        exclude_anchor_links=True,  # no pilcrow beside each heading
    )


def prepare(notebook: Any) -> Any:
    """A copy without parameter cells or papermill metadata, the banner first, live output gone."""
    nb = copy.deepcopy(notebook)
    nb.metadata.pop("papermill", None)
    kept = []
    for cell in nb.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & DROP_TAGS:
            continue
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code" and not tags & {REPORT_TAG, BANNER_TAG}:
            cell.outputs = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        kept.append(cell)
    banners = [c for c in kept if BANNER_TAG in c.get("metadata", {}).get("tags", [])]
    rest = [c for c in kept if c not in banners]
    title = rest[:1] if rest and rest[0].cell_type == "markdown" else []
    nb.cells = title + banners + rest[len(title):]
    return nb


def _injected(parameters: dict[str, Any]) -> Any:
    """A cell like papermill's ``injected-parameters`` (redacted: it may carry a token)."""
    lines = ["# Parameters"] + [f"{k} = {v!r}" for k, v in redact_mapping(parameters).items()]
    cell = nbformat.v4.new_code_cell("\n".join(lines))
    cell.metadata["tags"] = ["injected-parameters"]
    return cell
