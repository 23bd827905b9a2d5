"""``report.html``: the executed notebook, code hidden, as one self-contained, redacted page.

The one module that imports nbconvert. nbconvert's ``lab`` and ``classic`` templates pull
require.js and MathJax from CDNs; a report must open offline, so the notebook is exported with
the ``basic`` template (body only, no scripts) and wrapped in this module's own page with inline
CSS. The papermill ``parameters``/``injected-parameters`` cells and papermill metadata are dropped
(they carry paths and possibly secrets), live and launch outputs are dropped (only cells tagged
``report`` keep their outputs, plus errors), and the banner cell moves to the top so the verdict
is readable without scrolling.

When the notebook is missing, unreadable or never reached its report cells (papermill crashed,
the kernel died), the same sections are built straight from the run directory's files: a crashed
run always gets a report.
"""

from __future__ import annotations

import copy
import html
import re
from pathlib import Path
from typing import Any

import nbformat
from nbconvert import HTMLExporter

from workbook.report import sections
from workbook.report.redaction import redact_text
from workbook.runs import RUN_FILES, write_atomic

REPORT_TAG, BANNER_TAG, DROP_TAGS = "report", "banner", {"parameters", "injected-parameters"}
_EXTERNAL = re.compile(r'<script\b[^>]*\bsrc=["\']?https?:[^>]*>\s*</script>|<link\b[^>]*href=["\']?https?:[^>]*>',
                       re.IGNORECASE)

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1000px;
padding:12px 20px;color:#1a1a1a;background:#fff;line-height:1.45}
h1{font-size:1.4em;margin:.3em 0}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:2px}
.wb-banner{border-radius:6px;padding:10px 16px;margin:8px 0 14px;border-left:10px solid #777;background:#f2f2f2}
.wb-passed{border-color:#009E73;background:#e3f4ee}.wb-regressed{border-color:#E69F00;background:#fdf1dc}
.wb-failed{border-color:#D55E00;background:#fbe5da}.wb-running{border-color:#0072B2;background:#e1eef7}
.wb-verdict{font-size:1.6em;font-weight:700;letter-spacing:.04em}.wb-reason{font-size:1.05em;margin:2px 0 8px}
.wb-banner dl{display:flex;flex-wrap:wrap;gap:4px 22px;margin:0}.wb-banner dt{font-size:.75em;color:#555}
.wb-banner dd{margin:0;font-weight:600}
table{border-collapse:collapse;font-size:.9em;margin:6px 0}td,th{border:1px solid #ccc;padding:3px 7px;
text-align:left;vertical-align:top}td.num{text-align:right;font-variant-numeric:tabular-nums}
.wb-row-pass td.wb-status{background:#cfeee2;color:#005c45;font-weight:700}
.wb-row-fail td.wb-status{background:#f8d3c2;color:#8a2f00;font-weight:700}
.wb-row-error td.wb-status{background:#fde3b0;color:#6b4700;font-weight:700}
figure{margin:8px 0}img{max-width:100%;height:auto}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:.8em;white-space:pre-wrap;word-break:break-all}
.wb-note{color:#555;font-size:.85em}.jp-OutputArea-output pre{background:none}
"""


def render_report(run_dir: Path) -> Path:
    """Write ``report.html`` into the run directory (from the notebook when it ran through)."""
    run_dir = Path(run_dir)
    notebook = _load_notebook(run_dir / RUN_FILES["notebook"])
    if notebook is not None and _reached_report(notebook):
        body = notebook_body(notebook)
    else:
        note = ('<p class="wb-note">Built from the run directory: the notebook '
                + ("is missing or unreadable" if notebook is None else "did not reach its report cells")
                + ".</p>")
        body = "".join(s.html for s in sections.report_sections(run_dir)) + note
    view = sections.view(run_dir)
    title = f"{view.verdict[0].upper()} · {view.scenario} · {view.run_id}"
    return write_atomic(run_dir / RUN_FILES["report"], page(title, body))


def page(title: str, body: str) -> str:
    """A complete, offline HTML page (inline CSS, no external resource), redacted."""
    markup = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
              f'<meta name="viewport" content="width=device-width, initial-scale=1">'
              f"<title>{html.escape(title)}</title><style>{CSS}</style></head>"
              f"<body>{body}</body></html>\n")
    return redact_text(_EXTERNAL.sub("", markup))


def notebook_body(notebook: Any) -> str:
    """The notebook's HTML body: inputs and prompts hidden, report outputs only."""
    exporter = HTMLExporter(template_name="basic", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
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
    nb.cells = title + banners + rest[len(title):]
    return nb


def _reached_report(notebook: Any) -> bool:
    """Whether the banner cell ran and displayed something (else the notebook broke early)."""
    for cell in notebook.cells:
        if BANNER_TAG in cell.get("metadata", {}).get("tags", []):
            return any(o.get("output_type") in ("display_data", "execute_result")
                       for o in cell.get("outputs", []))
    return False


def _load_notebook(path: Path) -> Any:
    try:
        return nbformat.read(str(path), as_version=4)
    except Exception:  # noqa: BLE001 - any unreadable notebook means: build from the run dir
        return None
