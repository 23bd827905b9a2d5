"""The HTML page every report and index is wrapped in: inline CSS, nothing fetched, redacted.

A report must open offline, from ``file://`` or any static web server, so the page carries its
own stylesheet and no external script or stylesheet; any that slipped in is stripped here.
Every page passes through redaction on its way out, as the last line of defence.
"""

from __future__ import annotations

import html
import re

from workbook.core.redaction import redact_text

_EXTERNAL = re.compile(
    r'<script\b[^>]*\bsrc=["\']?https?:[^>]*>\s*</script>|<link\b[^>]*href=["\']?https?:[^>]*>',
    re.IGNORECASE,
)

# One palette (colour-blind safe, Okabe-Ito) for the stylesheet and for the inline styles the
# notebook's outputs carry: JupyterLab shows a cell's HTML without the report's stylesheet, so
# banner and status cells also style themselves and look the same in both.
VERDICT_COLOURS = {  # verdict -> (border, background)
    "passed": ("#009E73", "#e3f4ee"), "regressed": ("#E69F00", "#fdf1dc"),
    "failed": ("#D55E00", "#fbe5da"), "stopped": ("#56B4E9", "#eef4f8"),
    "running": ("#0072B2", "#e1eef7"),
}
STATUS_COLOURS = {  # check row status -> (background, text)
    "pass": ("#cfeee2", "#005c45"), "fail": ("#f8d3c2", "#8a2f00"), "error": ("#fde3b0", "#6b4700"),
    "not_measured": ("#eeeeee", "#666666"), "not_comparable": ("#eeeeee", "#666666"),
}


def banner_style(verdict: str) -> str:
    border, background = VERDICT_COLOURS.get(verdict, ("#777777", "#f2f2f2"))
    return (f"border-radius:6px;padding:10px 16px;margin:8px 0 14px;"
            f"border-left:10px solid {border};background:{background}")


def status_style(status: str) -> str:
    background, colour = STATUS_COLOURS.get(status, ("#ffffff", "#1a1a1a"))
    return f"background:{background};color:{colour};font-weight:700"


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1240px;
padding:12px 20px;color:#1a1a1a;background:#fff;line-height:1.45}
h1{font-size:1.4em;margin:.3em 0}
h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:2px}
.wb-banner{border-radius:6px;padding:10px 16px;margin:8px 0 14px;border-left:10px solid #777;background:#f2f2f2}
.wb-verdict{font-size:1.6em;font-weight:700;letter-spacing:.04em}
.wb-reason{font-size:1.05em;margin:2px 0 8px}
.wb-banner dl{display:flex;flex-wrap:wrap;gap:4px 22px;margin:0}
.wb-banner dt{font-size:.75em;color:#555}
.wb-banner dd{margin:0;font-weight:600}
table{border-collapse:collapse;font-size:.9em;margin:6px 0}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.wb-row-not_measured td,.wb-row-not_comparable td{color:#777}
figure{margin:8px 0}
img{max-width:100%;height:auto}
[data-section=plots] figure{display:inline-block;width:49%;margin:4px 0;vertical-align:top}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:.8em;white-space:pre-wrap;word-break:break-all}
.wb-note{color:#555;font-size:.85em}
.jp-OutputArea-output pre{background:none}
""" + "".join(f".wb-{v}{{border-color:{b};background:{bg}}}" for v, (b, bg) in VERDICT_COLOURS.items()) \
    + "".join(f".wb-row-{s} td.wb-status{{background:{bg};color:{c};font-weight:700}}"
              for s, (bg, c) in STATUS_COLOURS.items())


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
