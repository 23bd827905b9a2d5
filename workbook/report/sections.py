"""What the notebook's report cells display, and what a report built without a notebook shows.

Each function takes a run (a ``Run`` from ``workbook.run.steps``, a ``RunDir``, or a path) and
returns a :class:`Section`: the block's data (facts, rows, figures, notes) and, through
``_repr_html_``, its HTML from the one template of every section (``templates/``; the history of
the scenario, read from other runs too, from its own), so a notebook cell that ends with the call
displays it, and :func:`workbook.report.render.render_report` builds the same page from the run
directory, notebook or not. Images are inline base64 PNGs: the report is one self-contained file.
Every element carries a ``data-*`` attribute tests look for.

A section is computed once per state of its run directory (:mod:`workbook.report.cache`): the
page rendered at the end of a notebook reuses what its cells computed.
"""

from __future__ import annotations

from base64 import b64encode
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, TypeVar

from workbook import provenance
from workbook.checks.baseline_rules import BLESSED, IMPORTED
from workbook.core.clock import date_text
from workbook.core.layout import RUN_FILES
from workbook.core.status import RED, Verdict
from workbook.core.values import finite
from workbook.history.bisect_hint import BisectHint, hint_for
from workbook.history.changes import changes_since
from workbook.history.ledger import Entry, entry_of, last_green, read_ledger
from workbook.plots.compared import compared_band, compared_bands
from workbook.plots.panels import Panel, build_panels, regression_panel
from workbook.report.cache import kept
from workbook.report.links import report_href
from workbook.report.template import environment, section_html
from workbook.report.view import (
    RunView,
    duration_text,
    load_view,
)

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

D = TypeVar("D")
Facts = tuple[tuple[str, str], ...]  # (label, value) in the order shown


@dataclass(frozen=True)
class Section(Generic[D]):
    """One block of a report: its data, and its HTML (which Jupyter displays)."""

    key: str
    data: D

    @cached_property
    def html(self) -> str:
        return section_html(self.key, self.data)

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<report section {self.key}>"


@dataclass(frozen=True)
class Figure:
    """A drawn panel, its PNG inline (base64); ``metrics`` are those it draws, when known."""

    key: str
    title: str
    png: str
    metrics: tuple[str, ...] | None = None

    @property
    def metrics_text(self) -> str:
        return " ".join(self.metrics or ())

    @classmethod
    def of(cls, panel: Panel) -> Figure:
        return cls(panel.key, panel.title, encoded(panel.png), tuple(panel.metrics))


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
    def shown_changes(self) -> tuple[ChangeLine, ...]:
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


@dataclass(frozen=True)
class Parameters:
    command: str
    env: Facts
    params: str


@dataclass(frozen=True)
class Reproducibility:
    facts: Facts
    npu_smi: str = ""


@dataclass(frozen=True)
class Node:
    ip: str
    head: bool
    node_id: str
    alive: bool
    resources: str


@dataclass(frozen=True)
class Required:
    nodes: str
    devices_per_node: str
    device_resource: str
    address: str


@dataclass(frozen=True)
class Preflight:
    recorded: bool  # False: no pre-flight result in run.json
    nodes: tuple[Node, ...] = ()
    required: Required | None = None


def run_path(run: Any) -> Path:
    """The run directory of a pipeline ``Run``, a ``RunDir``, or a path."""
    for attr in ("run_dir", "path"):
        if hasattr(run, attr) and not isinstance(run, (str, Path)):
            return run_path(getattr(run, attr))
    return Path(run)


def view(run: Any) -> RunView:
    return load_view(run_path(run))


def banner(run: Any) -> Section[Banner]:
    """Verdict, its one-line reason, and the facts needed to place the run."""
    return _kept("banner", run, _banner)


def checks(run: Any) -> Section[Checks]:
    """The checks table with pass/fail colours; a failed comparison's curve against its band."""
    return _kept("checks", run, _checks)


def plots(run: Any) -> Section[Plots]:
    """Every panel the run's metrics allow; the baselines of the checks drawn as bands."""
    return _kept("plots", run, _plots)


def failure(run: Any, lines: int = 50) -> Section[Failure]:
    """For a failed run only: the diagnosis, its evidence and the end of the log."""
    return _kept("failure", run, lambda v: _failure(v, lines), lines)


def parameters(run: Any) -> Section[Parameters]:
    """The resolved parameters and the exact command (environment included), redacted."""
    return _kept("parameters", run, _parameters)


def reproducibility(run: Any) -> Section[Reproducibility]:
    """Versions, commits, OS, Python, host and hardware the run ran with."""
    return _kept("reproducibility", run, _reproducibility)


def preflight(run: Any) -> Section[Preflight]:
    """The Ray launcher's pre-flight: the nodes it found, their resources, what was required."""
    return _kept("preflight", run, _preflight)


def history(run: Any) -> Section[History]:
    """The baseline the run was judged against and where its numbers came from; for a red
    night, the last green night before it in this runs root and what changed since."""
    path = run_path(run)
    return kept(path, ("history",),
                lambda: HistorySection("history", _history(load_view(path))))


SECTION_CALLS: dict[str, Callable[[Any], Section[Any]]] = {
    "banner": banner, "plots": plots, "checks": checks, "failure": failure, "history": history,
    "parameters": parameters, "reproducibility": reproducibility, "preflight": preflight,
}
# The report's order, for a reader: the verdict and what failed (the banner), the curves, the
# checks table, then why it failed, the baseline and history, and what ran. The notebooks'
# report cells follow it (tests/report/test_notebooks.py).
ORDER = ("banner", "plots", "checks", "failure", "history", "parameters", "reproducibility")


def report_sections(run: Any) -> list[Section[Any]]:
    """All sections in report order (what a report built from the run directory shows)."""
    return [SECTION_CALLS[name](run) for name in ORDER]


def encoded(png: bytes) -> str:
    """PNG bytes as the base64 text of a ``data:`` URL."""
    return b64encode(png).decode("ascii")


def _kept(key: str, run: Any, build: Callable[[RunView], D], *args: Any) -> Section[D]:
    """The section ``key`` of ``run``, built from its view unless kept for its current files."""
    path = run_path(run)
    return kept(path, (key, *args), lambda: Section(key, build(load_view(path))))


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
        "hardware": _hardware_text(v.run),
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
    return tuple(
        CheckLine(
            name=str(r.get("name", "")),
            metric=str(r.get("metric") or ""),
            value=_fmt(r.get("value")),
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


def _parameters(v: RunView) -> Parameters:
    command = v.command()
    env = command.get("env") or {}
    shell = v.text("command_sh") or " ".join(str(a) for a in command.get("argv") or [])
    return Parameters(
        command=shell or "not recorded",
        env=tuple((str(k), str(val)) for k, val in sorted(env.items())),
        params=v.text("params") or "not recorded",
    )


def _hardware_text(run: dict[str, Any]) -> str:
    """This machine's hardware, or for a run in pods what they were given (never this one's)."""
    if run.get("hardware"):
        return provenance.describe(run)
    pods = (run.get("machines") or {}).get("pods")
    if isinstance(pods, dict):
        size = f"{run.get('nodes')} x {run.get('devices_per_node')} {run.get('profile') or ''}"
        return f"KubeRay pods ({size.strip()}), image {pods.get('image') or 'unknown'}"
    return "unknown"


def _reproducibility(v: RunView) -> Reproducibility:
    r = v.run
    hw = r.get("hardware") or {}
    rows: list[tuple[str, Any]] = [("workbook", (r.get("versions") or {}).get("verl-workbook"))]
    rows += [(f"{k} commit", c) for k, c in (r.get("commits") or {}).items()]
    rows += [(k, ver) for k, ver in (r.get("versions") or {}).items() if k != "verl-workbook"]
    rows += [
        ("python", r.get("python")),
        ("os", r.get("os")),
        ("host", r.get("host")),
        ("cpu", hw.get("cpu")),
        ("cpus", hw.get("cpus")),
        ("memory (GB)", hw.get("memory_gb")),
        ("gpus", ", ".join(hw.get("gpus") or [])),
        ("CANN", r.get("cann_version")),
        ("launcher", r.get("launcher")),
        ("profile", r.get("profile")),
        ("metrics from", v.metrics.origin.text() if v.metrics.origin else None),
        (
            "nodes x devices",
            f"{r.get('nodes')} x {r.get('devices_per_node')}" if r.get("nodes") else None,
        ),
    ]
    for machine, group in (r.get("machines") or {}).items():  # a KubeRay run: by machine
        if isinstance(group, dict):
            rows += [(f"{machine}: {k}", val) for k, val in group.items()
                     if k != "about" and isinstance(val, (str, int, float))]
    facts = tuple((k, str(val)) for k, val in rows if val not in (None, ""))
    return Reproducibility(facts, str(r["npu_smi"]) if r.get("npu_smi") else "")


def _preflight(v: RunView) -> Preflight:
    info = v.run
    found = next(
        (
            d
            for d in (
                info.get("preflight"),
                (info.get("ray_job") or {}).get("preflight"),
                (info.get("launch_details") or {}).get("preflight"),
            )
            if d
        ),
        None,
    )
    if not isinstance(found, dict):
        return Preflight(recorded=False)
    nodes = tuple(
        Node(
            ip=str(n.get("ip", "")),
            head=bool(n.get("is_head")),
            node_id=str(n.get("node_id", ""))[:12],
            alive=bool(n.get("alive")),
            resources=_resources(n.get("resources") or {}),
        )
        for n in found.get("nodes") or []
        if isinstance(n, dict)
    )
    need = found.get("required") or {}
    required = Required(
        nodes=str(need.get("nodes")),
        devices_per_node=str(need.get("devices_per_node")),
        device_resource=str(need.get("device_resource", "device")),
        address=str(found.get("address", "")),
    ) if need else None
    return Preflight(recorded=True, nodes=nodes, required=required)


def _resources(resources: dict[str, Any]) -> str:
    """CPU, GPU/NPU and memory first; Ray's per-node bookkeeping resources left out."""
    shown = {k: v for k, v in resources.items() if not k.startswith(("node:", "accelerator_type"))}
    parts = []
    for key, value in sorted(
        shown.items(), key=lambda kv: (kv[0] not in ("CPU", "GPU", "NPU"), kv[0])
    ):
        if "memory" in key and isinstance(value, (int, float)):
            parts.append(f"{key} {value / 1024**3:.1f} GB")
        else:
            parts.append(
                f"{key} {value:g}" if isinstance(value, (int, float)) else f"{key} {value}"
            )
    return ", ".join(parts)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


# --- the baseline and the history of the scenario (templates/history.html.j2) ---------------------

HISTORY_TEMPLATE = "history.html.j2"
NO_PROVENANCE = "no provenance"


@dataclass(frozen=True)
class ChangeLine:
    """One row of "What changed since": a fact, then and now."""

    kind: str
    name: str
    old: str
    new: str


@dataclass(frozen=True)
class LastGreen:
    """The last green night before a red one, and what changed since."""

    date: str
    run_id: str
    href: str | None  # its report, relative to this one's (None: not in this runs root)
    verl_commit: str
    workbook_commit: str
    changes: tuple[ChangeLine, ...] = ()


@dataclass(frozen=True)
class History:
    """What the history block shows: the baseline and, for a red night, its last green night."""

    baseline: str = ""  # the baseline file the run was judged against ('' without one)
    provenance: str = NO_PROVENANCE  # where its numbers came from
    blessed: bool = False  # its provenance is bless's record of runs and versions
    red: bool = False  # regressed or failed: the last green night is shown
    green: LastGreen | None = None  # None on a red night: never green in this runs root
    bisect: BisectHint | None = None  # a red night: the command that finds verl's culprit


@dataclass(frozen=True)
class HistorySection(Section[D]):
    """A section whose macro lives in its own template file."""

    @cached_property
    def html(self) -> str:
        macros = environment().get_template(HISTORY_TEMPLATE).module
        return str(getattr(macros, self.key)(self.data)).strip()


def _history(v: RunView) -> History:
    used = v.checks.get("baseline")  # what the checks were judged against (checks.json)
    used = used if isinstance(used, dict) else {}
    record = used.get("provenance")
    shown = History(baseline=str(used.get("path") or ""), provenance=_provenance_text(record),
                    blessed=isinstance(record, dict) and record.get("source") == BLESSED)
    status, _ = v.verdict
    if status not in RED:
        return shown
    root = _runs_root(v)
    this = entry_of(v.path, root, verdict=status, judged_now=True)  # judged with the file as it is
    green = last_green(read_ledger(root, this.scenario, this.hardware), before=this) if this else None
    hint = hint_for(v.run, this, green) if this else None
    if this is None or green is None:
        return replace(shown, red=True, bisect=hint)
    changes = tuple(ChangeLine(c.kind, c.name, c.old, c.new) for c in changes_since(green, this))
    return replace(shown, red=True, bisect=hint, green=LastGreen(
        date=date_text(green.date) if green.date else "unknown", run_id=green.run_id,
        href=_report_link(v.path, root, green), verl_commit=green.commits.get("verl") or "unknown",
        workbook_commit=green.commits.get("workbook") or "unknown", changes=changes))


def _runs_root(v: RunView) -> Path:
    """The runs root the run joined (run.json's ``runs_root``), else the folder above its
    scenario's."""
    recorded = v.run.get("runs_root")
    if recorded and Path(str(recorded)).is_dir():
        return Path(str(recorded))
    return v.path.parents[1]


def _report_link(run_dir: Path, root: Path, green: Entry) -> str | None:
    """The green night's report relative to this run's, when it is a file of this runs root."""
    night = green.run_dir(root)
    if Path(root).resolve() not in (night / RUN_FILES["report"]).resolve().parents:
        return None
    return report_href(night, run_dir)


def _provenance_text(record: Any) -> str:
    """Where a baseline's numbers came from, in one line; NO_PROVENANCE when it does not say."""
    if not isinstance(record, dict) or record.get("source") not in (BLESSED, IMPORTED):
        return NO_PROVENANCE
    if record["source"] == IMPORTED:
        origin = record.get("origin") or record.get("imported_from")
        return (f"{NO_PROVENANCE}: verl's Ascend baseline text" + (f" ({origin})" if origin else "")
                + "; it records no versions or runs")
    runs = record.get("runs") or record.get("run_ids") or []
    created = record.get("created")
    facts = [f"verl {record['verl_version']}" if record.get("verl_version") else None,
             f"verl commit {str(record['verl_commit'])[:12]}" if record.get("verl_commit") else None,
             f"workbook commit {str(record['workbook_commit'])[:12]}"
             if record.get("workbook_commit") else None,
             f"image {_image_text(record['image'])}" if record.get("image") else None]
    shown = ", ".join(f for f in facts if f)
    return (f"blessed {date_text(str(created)) if created else '(date not recorded)'} from "
            f"{len(runs)} runs" + (f" ({shown})" if shown else "") + _runs_differ_text(record))


def _runs_differ_text(record: dict[str, Any]) -> str:
    """What the blessed runs differed in among themselves (bless records the first run's):
    ``runs_differ``, else the older ``package_versions_differ``; '' when they agreed."""
    differ = record.get("runs_differ")
    names = ([str(d.get("name")) for d in differ if isinstance(d, dict)]
             if isinstance(differ, list) else [str(n) for n in
                                               record.get("package_versions_differ") or []])
    if not names:
        return ""
    listed = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return f"; its runs differed in {listed} (the first run's are recorded)"


def _image_text(image: Any) -> str:
    if not isinstance(image, dict):
        return str(image)
    return str(image.get("ref") or image.get("digest") or image.get("id") or "unknown")
