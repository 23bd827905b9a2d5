"""The HTML page every report and index is wrapped in: inline CSS, nothing fetched, redacted.

A report must open offline, from ``file://`` or any static web server, so the page carries its
own stylesheet and no external script or stylesheet; any that slipped in is stripped here.
Every page passes through redaction on its way out, as the last line of defence.
"""

from __future__ import annotations

import html
import re

from workbook.report.redaction import redact_text

_EXTERNAL = re.compile(
    r'<script\b[^>]*\bsrc=["\']?https?:[^>]*>\s*</script>|<link\b[^>]*href=["\']?https?:[^>]*>',
    re.IGNORECASE,
)

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1240px;
padding:12px 20px;color:#1a1a1a;background:#fff;line-height:1.45}
h1{font-size:1.4em;margin:.3em 0}
h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:2px}
.wb-banner{border-radius:6px;padding:10px 16px;margin:8px 0 14px;border-left:10px solid #777;background:#f2f2f2}
.wb-passed{border-color:#009E73;background:#e3f4ee}
.wb-regressed{border-color:#E69F00;background:#fdf1dc}
.wb-failed{border-color:#D55E00;background:#fbe5da}
.wb-running{border-color:#0072B2;background:#e1eef7}
.wb-verdict{font-size:1.6em;font-weight:700;letter-spacing:.04em}
.wb-reason{font-size:1.05em;margin:2px 0 8px}
.wb-banner dl{display:flex;flex-wrap:wrap;gap:4px 22px;margin:0}
.wb-banner dt{font-size:.75em;color:#555}
.wb-banner dd{margin:0;font-weight:600}
table{border-collapse:collapse;font-size:.9em;margin:6px 0}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.wb-row-pass td.wb-status{background:#cfeee2;color:#005c45;font-weight:700}
.wb-row-fail td.wb-status{background:#f8d3c2;color:#8a2f00;font-weight:700}
.wb-row-error td.wb-status{background:#fde3b0;color:#6b4700;font-weight:700}
figure{margin:8px 0}
img{max-width:100%;height:auto}
[data-section=plots] figure{display:inline-block;width:49%;margin:4px 0;vertical-align:top}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:.8em;white-space:pre-wrap;word-break:break-all}
.wb-note{color:#555;font-size:.85em}
.jp-OutputArea-output pre{background:none}
"""


def page(title: str, body: str) -> str:
    """A complete, offline HTML page (inline CSS, no external resource), redacted."""
    markup = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head>"
        f"<body>{body}</body></html>\n"
    )
    return redact_text(_EXTERNAL.sub("", markup))
