"""``report.html``: the executed notebook, code hidden, as one self-contained, redacted page.

The one module that imports nbconvert. nbconvert's ``lab`` and ``classic`` templates pull
require.js and MathJax from CDNs; a report must open offline, so the notebook is exported with
the ``basic`` template (body only, no scripts) and wrapped in this module's own page with inline
CSS. The papermill ``parameters``/``injected-parameters`` cells and papermill metadata are dropped
(they carry paths and possibly secrets), so are cells tagged ``notebook-only`` (narration of the
interactive steps), live and launch outputs are dropped (only cells tagged
``report`` keep their outputs, plus errors), and the banner cell moves to the top so the verdict
is readable without scrolling.

When the notebook is missing, unreadable or never reached its report cells (papermill crashed,
the kernel died), the same sections are built straight from the run directory's files: a crashed
run always gets a report.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import nbformat
from nbconvert import HTMLExporter

from workbook.report import sections
from workbook.report.page import page
from workbook.runs import RUN_FILES, write_atomic

REPORT_TAG, BANNER_TAG = "report", "banner"
# parameters carry paths and maybe secrets; notebook-only cells narrate the interactive steps
DROP_TAGS = {"parameters", "injected-parameters", "notebook-only"}


def render_report(run_dir: Path) -> Path:
    """Write ``report.html`` into the run directory (from the notebook when it ran through)."""
    run_dir = Path(run_dir)
    notebook = _load_notebook(run_dir / RUN_FILES["notebook"])
    body, why = "", "is missing or unreadable"
    if notebook is not None and _reached_report(notebook):
        try:
            body = notebook_body(notebook)
        except Exception as exc:  # noqa: BLE001 - a notebook nbconvert chokes on still gets a report
            why = f"could not be converted ({type(exc).__name__})"
    elif notebook is not None:
        why = "did not reach its report cells"
    if not body:
        note = f'<p class="wb-note">Built from the run directory: the notebook {why}.</p>'
        body = "".join(s.html for s in sections.report_sections(run_dir)) + note
    view = sections.view(run_dir)
    title = f"{view.verdict[0].upper()} · {view.scenario} · {view.run_id}"
    return write_atomic(run_dir / RUN_FILES["report"], page(title, body))


def notebook_body(notebook: Any) -> str:
    """The notebook's HTML body: inputs and prompts hidden, report outputs only."""
    exporter = HTMLExporter(
        template_name="basic",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    body, _ = exporter.from_notebook_node(prepare(notebook))
    return body


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
    nb.cells = title + banners + rest[len(title) :]
    return nb


def _reached_report(notebook: Any) -> bool:
    """Whether the banner cell ran and displayed something (else the notebook broke early)."""
    for cell in notebook.cells:
        if BANNER_TAG in cell.get("metadata", {}).get("tags", []):
            return any(
                o.get("output_type") in ("display_data", "execute_result")
                for o in cell.get("outputs", [])
            )
    return False


def _load_notebook(path: Path) -> Any:
    try:
        return nbformat.read(str(path), as_version=4)
    except Exception:  # noqa: BLE001 - any unreadable notebook means: build from the run dir
        return None
