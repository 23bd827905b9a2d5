"""The one module that imports Jinja2: report data in, HTML out.

Every block of a report (banner, checks, plots, ...) and the page around it is written once, in
``templates/``; the sections and comparisons hand this module plain data. Values are escaped the
way :func:`html.escape` does (``&quot;``, ``&#x27;``), the forms the page's last redaction pass
recognises inside quotes, rather than Jinja's own ``&#34;``.
"""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from workbook.report.palette import (
    BADGE_COLOURS,
    DARK_PAGE,
    STATUS_COLOURS,
    VERDICT_COLOURS,
    banner_style,
    dark_tint,
    status_style,
)

TEMPLATES = Path(__file__).with_name("templates")
SECTIONS_FILE = "sections.html.j2"
PAGE_FILE = "page.html.j2"


def _escaped(value: Any) -> Any:
    """What an expression prints: markup as it is, anything else escaped (None prints nothing)."""
    if hasattr(value, "__html__"):
        return value
    return Markup(html.escape("" if value is None else str(value)))


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        finalize=_escaped,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals.update(banner_style=banner_style, status_style=status_style,
                       verdict_colours=VERDICT_COLOURS, status_colours=STATUS_COLOURS,
                       badge_colours=BADGE_COLOURS, dark_tint=dark_tint, dark_page=DARK_PAGE)
    return env


def section_html(key: str, data: Any) -> str:
    """The HTML of one section: the macro named after its key (``compare-table``: ``compare_table``)."""
    macros = environment().get_template(SECTIONS_FILE).module
    return str(getattr(macros, key.replace("-", "_"))(data)).strip()


def page_html(title: str, body: str) -> str:
    """A whole page: the stylesheet inline, ``body`` (already HTML) as it is."""
    return environment().get_template(PAGE_FILE).render(title=title, body=Markup(body))
