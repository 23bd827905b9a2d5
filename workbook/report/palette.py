"""The colours of verdicts and check statuses, for the stylesheet and for inline styles.

One palette (colour-blind safe, Okabe-Ito). JupyterLab shows a cell's HTML without the report's
stylesheet, so the banner and the status cells also carry inline styles from here and look the
same in a notebook as in report.html. ``improved`` (a run, or a check, better than its baseline
by more than the band allows) is a blue-green, apart from the pass green: still good news, but
news (the baseline is stale). ``suspect`` (a noisy metric beyond its band, not yet confirmed by
the nights before) is a yellow amber, apart from the regressed orange: worth a look, not a page.
The two verdicts of ``workbook align`` wear the pass and regression colours; its warnings and the
rows where the two runs differ, the suspect amber.
"""

from __future__ import annotations

from workbook.core.status import Shown, Verdict

VERDICT_COLOURS = {  # verdict -> (border, background)
    Verdict.PASSED.value: ("#009E73", "#e3f4ee"),
    Verdict.IMPROVED.value: ("#0092A8", "#e0f2f6"),
    Verdict.SUSPECT.value: ("#F0E442", "#fcf8dc"),
    Verdict.REGRESSED.value: ("#E69F00", "#fdf1dc"),
    Verdict.FAILED.value: ("#D55E00", "#fbe5da"),
    Verdict.STOPPED.value: ("#56B4E9", "#eef4f8"),
    Shown.RUNNING.value: ("#0072B2", "#e1eef7"),
}
# workbook align's verdicts -> the run verdict whose colours each wears (banner and index badge)
ALIGNMENT_VERDICTS = {"aligned": Verdict.PASSED.value, "not aligned": Verdict.REGRESSED.value}
BISECT_BANNER = {"found": "regressed", "ambiguous": "suspect", "stopped": "stopped",
                 "green": "passed", "failed": "failed", "running": "running"}  # result -> its colour
STATUS_COLOURS = {  # check row status -> (background, text)
    "pass": ("#cfeee2", "#005c45"), "fail": ("#f8d3c2", "#8a2f00"), "error": ("#fde3b0", "#6b4700"),
    "improved": ("#cdecf2", "#005566"), "suspect": ("#f7f0b5", "#5c5200"),
    "not_measured": ("#eeeeee", "#666666"), "not_comparable": ("#eeeeee", "#666666"),
}


# an index badge (white text on the colour, in light and dark mode alike) -> its background
BADGE_COLOURS = {
    "passed": "#007a5a", "improved": "#00788a", "suspect": "#8a7d00", "regressed": "#b36b00",
    "failed": "#b84a00", "running": "#0072B2", "stopped": "#3d7ea6", "pending": "#999999",
    "unjudged": "#666666", "unknown": "#666666",
}
DARK_PAGE = "#16181b"  # the page's background in dark mode (templates/page.css.j2)


def dark_tint(colour: str, share: float = 0.28) -> str:
    """``colour`` mixed into the dark page's background: a verdict's banner in dark mode."""
    mixed = (round(int(colour[i:i + 2], 16) * share + int(DARK_PAGE[i:i + 2], 16) * (1 - share))
             for i in (1, 3, 5))
    return "#" + "".join(f"{c:02x}" for c in mixed)


def banner_style(verdict: str) -> str:
    border, background = VERDICT_COLOURS.get(ALIGNMENT_VERDICTS.get(verdict, verdict),
                                             ("#777777", "#f2f2f2"))
    return (f"border-radius:6px;padding:10px 16px;margin:8px 0 14px;"
            f"border-left:10px solid {border};background:{background}")


def status_style(status: str) -> str:
    background, colour = STATUS_COLOURS.get(status, ("#ffffff", "#1a1a1a"))
    return f"background:{background};color:{colour};font-weight:700"


def warning_style() -> str:
    """A warning beside a verdict (an alignment of runs not made deterministic)."""
    border, background = VERDICT_COLOURS[Verdict.SUSPECT.value]
    return f"border-left:6px solid {border};background:{background};padding:4px 10px;margin:4px 0"


def differs_style() -> str:
    """A table row whose two runs differ."""
    return f"background:{VERDICT_COLOURS[Verdict.SUSPECT.value][1]}"
