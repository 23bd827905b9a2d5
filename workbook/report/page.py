"""The HTML page every report and index is wrapped in: inline CSS, nothing fetched, redacted.

A report must open offline, from ``file://`` or any static web server, so the page carries its
own stylesheet and no external script or stylesheet; any that slipped in is stripped here.
Every page passes through redaction on its way out, as the last line of defence. The page and
its stylesheet are ``templates/page.html.j2``; the colours are :mod:`workbook.report.palette`.
"""

from __future__ import annotations

import re

from workbook.core.redaction import redact_text
from workbook.report.template import page_html

_EXTERNAL = re.compile(
    r'<script\b[^>]*\bsrc=["\']?https?:[^>]*>\s*</script>|<link\b[^>]*href=["\']?https?:[^>]*>',
    re.IGNORECASE,
)


def page(title: str, body: str) -> str:
    """A complete, offline HTML page (inline CSS, no external resource), redacted."""
    return redact_text(_EXTERNAL.sub("", page_html(title, body)))
