"""How a run ended, as its report shows it: the banner (the verdict, its reason, what failed and
the last green night), the checks table, the curves with the checks' bands, the failure."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from workbook.core.clock import date_text
from workbook.core.layout import RunRef
from workbook.core.status import RED, Verdict
from workbook.core.values import finite, number_text
from workbook.history.changes import Change
from workbook.plots.compared import compared_band, compared_bands
from workbook.plots.panels import build_panels, regression_panel
from workbook.report.facts import hardware_text
from workbook.report.last_green import LastGreen, history
from workbook.report.section import Facts, Figure, Section, kept_section
from workbook.report.view import RunView, duration_text

CHECKS_NOTE = (
    "Every check is a row: its value, what was expected and whether it held. A comparison with "
    "the baseline allows k sigma of the blessed runs' spread (or a floor, or the scenario's own "
    "tolerance): 'band from' says which. NOT MEASURED (the hardware does not measure the metric) "
    "and NOT COMPARABLE (other hardware, other settings, or replayed rollouts) are neither passes "
    "nor failures. IMPROVED is a one-sided comparison (time, throughput, memory) that held by "
    "more than its band allows, beyond the band's edge mirrored to the good side: the run is fine "
    "and the baseline is stale. SUSPECT is a comparison of a noisy metric (confirm_nights) that "
    "did not hold on fewer nights in a row than it asks: another such night makes it a failure. "
    "A failed comparison is drawn below the table against its band."
)
PLOTS_NOTE = (
    "Clip fraction: the share of tokens whose importance ratio left [1 - clip_ratio_low, "
    "1 + clip_ratio_high] (the configured ratios are in its title). A panel whose metrics the run "
    "did not log is left out. Where a check compared the metric with a baseline, the panel shows "
    "what it compared: each step's own band (a per-step comparison), or the window statistic as "
    "one marked point with its band at the window's middle."
)
FAILING_ROWS = ("fail", "error")  # check rows whose metric is drawn against its band
NEWS = ("fail", "error", "suspect", "improved")  # check rows shown above the collapsed rest
SHOWN_CHANGES = 4  # what changed since the last green night, listed in the first screen

@dataclass(frozen=True)
class Banner:
    """The first screen: the verdict and its reason; for a red run also what failed (the failing
    checks, the diagnosis) and the last green night with what changed since."""

    verdict: str
    reason: str
    facts: Facts
    failing: tuple[CheckLine, ...] = ()
    diagnosis: str = ""
    red: bool = False
    green: LastGreen | None = None

    @property
    def shown_changes(self) -> tuple[Change, ...]:
        return self.green.changes[:SHOWN_CHANGES] if self.green else ()

    @property
    def more_changes(self) -> int:
        return max(len(self.green.changes) - SHOWN_CHANGES, 0) if self.green else 0


@dataclass(frozen=True)
class CheckLine:
    """One row of the checks table, every cell as text."""

    name: str
    metric: str
    value: str
    expected: str
    band: str
    status: str
    message: str

    @property
    def status_label(self) -> str:
        return self.status.replace("_", " ").upper()


@dataclass(frozen=True)
class Checks:
    rows: tuple[CheckLine, ...]
    figures: tuple[Figure, ...] = ()  # failed comparisons against their bands (drawn in plots)
    note: str = CHECKS_NOTE

    @property
    def news(self) -> tuple[CheckLine, ...]:
        """The rows a reader must see: failures first, then suspect and improved ones."""
        return tuple(sorted((r for r in self.rows if r.status in NEWS),
                            key=lambda r: NEWS.index(r.status)))

    @property
    def rest(self) -> tuple[CheckLine, ...]:
        """Passes and the grey rows (not measured, not comparable): collapsed to a count."""
        return tuple(r for r in self.rows if r.status not in NEWS)

    @property
    def rest_text(self) -> str:
        """'12 passed, 4 not comparable': what the collapsed rows are."""
        counts: dict[str, int] = {}
        for r in self.rest:
            counts[r.status] = counts.get(r.status, 0) + 1
        words = {"pass": "passed"}
        return ", ".join(f"{n} {words.get(k, k.replace('_', ' '))}" for k, n in counts.items())


@dataclass(frozen=True)
class Plots:
    logged: bool  # False: the run logged no metrics
    figures: tuple[Figure, ...] = ()
    note: str = PLOTS_NOTE
    failing: tuple[Figure, ...] = ()  # failed comparisons against their bands, shown first


@dataclass(frozen=True)
class Failure:
    """Shown for a failed run only; ``category`` is None when the run has no diagnosis."""

    failed: bool
    category: str | None = None
    summary: str = ""
    last_step: str | None = None
    evidence: str = ""
    tail: tuple[str, ...] = ()

    @property
    def tail_text(self) -> str:
        return "\n".join(self.tail)


def banner(run: RunRef) -> Section[Banner]:
    """Verdict, its one-line reason, and the facts needed to place the run."""
    return kept_section("banner", run, _banner)


def checks(run: RunRef) -> Section[Checks]:
    """The checks table with pass/fail colours; a failed comparison's curve against its band."""
    return kept_section("checks", run, _checks)


def plots(run: RunRef) -> Section[Plots]:
    """Every panel the run's metrics allow; the baselines of the checks drawn as bands."""
    return kept_section("plots", run, _plots)


def failure(run: RunRef, lines: int = 50) -> Section[Failure]:
    """For a failed run only: the diagnosis, its evidence and the end of the log."""
    return kept_section("failure", run, lambda v: _failure(v, lines), lines)


def _banner(v: RunView) -> Banner:
    status, reason = v.verdict
    shown = Banner(status, reason, _facts(v))
    if status not in RED:
        return shown
    failing = tuple(r for r in _check_lines(v) if r.status in FAILING_ROWS)
    diagnosis = v.run.get("diagnosis") or {}
    said = ""
    if status == Verdict.FAILED.value and diagnosis:
        last = diagnosis.get("last_step")
        said = (f"{diagnosis.get('category', 'unknown')}: {diagnosis.get('summary', '')}"
                + (f" (last step {last})" if last is not None else ""))
    return replace(shown, failing=failing, diagnosis=said, red=True,
                   green=history(v.path).data.green)


def _facts(v: RunView) -> Facts:
    expected = v.run.get("expected_steps")
    steps = v.steps_reached
    facts = {
        "scenario": v.scenario,
        "run": v.run_id,
        "date": date_text(v.started),
        "duration": duration_text(v.run.get("wall_time_s")),
        "hardware": hardware_text(v.run),
        "steps reached": (
            f"{steps if steps is not None else 0}" + (f" of {expected}" if expected else "")
        ),
        "run status": v.status,
    }
    replayed = (v.run.get("diagnosis") or {}).get("replayed_steps") or []
    if replayed:
        facts["rollouts"] = (f"replayed from a dump (steps {replayed[0]}-{replayed[-1]})"
                             if len(replayed) > 1 else f"replayed from a dump (step {replayed[0]})")
    return tuple((k, str(val)) for k, val in facts.items())


def _check_lines(v: RunView) -> tuple[CheckLine, ...]:
    def shown(value: Any) -> str:
        return number_text(value, absent="") if value is None or isinstance(value, float) else str(value)

    return tuple(
        CheckLine(
            name=str(r.get("name", "")),
            metric=str(r.get("metric") or ""),
            value=shown(r.get("value")),
            expected=str(r.get("expected", "")),
            band=str(r.get("band") or ""),
            status=str(r.get("status", "")),
            message=str(r.get("message", "")),
        )
        for r in v.rows
    )


def _checks(v: RunView) -> Checks:
    rows = v.rows
    lines = _check_lines(v)
    figures = []
    for row in rows:
        band = compared_band(row)
        if row.get("status") in FAILING_ROWS and row.get("metric") and band is not None:
            panel = regression_panel(
                v.metrics,
                str(row["metric"]),
                band,
                f"{row['metric']} against its baseline ({row.get('name')})",
            )
            if panel is not None:
                figures.append(Figure.of(panel))
    return Checks(lines, tuple(figures))


def _plots(v: RunView) -> Plots:
    if not v.metrics.steps:
        return Plots(logged=False)
    panels = build_panels(
        v.metrics,
        clip_ratio_low=finite(v.run.get("clip_ratio_low")),
        clip_ratio_high=finite(v.run.get("clip_ratio_high")),
        bands=compared_bands(v.rows),
    )
    return Plots(logged=True, figures=tuple(Figure.of(p) for p in panels),
                 failing=checks(v.path).data.figures)


def _failure(v: RunView, lines: int) -> Failure:
    status, _ = v.verdict
    if status != Verdict.FAILED.value:
        return Failure(failed=False)
    diagnosis = v.run.get("diagnosis") or {}
    last = diagnosis.get("last_step")
    return Failure(
        failed=True,
        category=str(diagnosis.get("category", "unknown")) if diagnosis else None,
        summary=str(diagnosis.get("summary", "")),
        last_step=None if last is None else str(last),
        evidence="\n".join(str(x) for x in diagnosis.get("evidence") or []),
        tail=tuple(v.log_tail(lines)),
    )


