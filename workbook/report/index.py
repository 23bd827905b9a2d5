"""``index.html``: every run newest first, filterable, with per-scenario trends across nights.

A static file (inline CSS, a few lines of inline JavaScript for the filters, charts as inline
PNGs) so it can be published on any web server or CI artifact store and opened offline. Links
to reports are relative to the index. It is written to a temp file and renamed, so a run that
finishes and refreshes the index while another does the same never leaves a torn file. Each
scenario's last green night and the environment changes its trend chart marks come from the
ledger (:mod:`workbook.history.ledger`), and so does the nightly table above them
(:mod:`workbook.report.nightly`: red since when, what changed, improved nights, stale baselines).
"""

from __future__ import annotations

import hashlib
import html
import json
import secrets
from base64 import b64encode
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workbook.core.layout import (
    ALIGNMENT_FILE,
    ALIGNMENT_PAGE,
    BISECT_FILE,
    BISECT_PAGE,
    COMPARISON_PAGE,
    INDEX,
    RUN_FILES,
    SUITE_FILE,
    TREND_CACHE,
    read_json_object,
    write_atomic,
)
from workbook.core.status import SHOWN
from workbook.history.ledger import Entry, problems, read_all
from workbook.history.onsets import onsets as onsets_of
from workbook.plots.trends import ChangeMark, change_marks, trend_chart
from workbook.report import links
from workbook.report.bisect import BANNER as BISECT_BANNER
from workbook.report.nightly import nightly_html, nightly_rows
from workbook.report.page import page
from workbook.report.palette import ALIGNMENT_VERDICTS
from workbook.report.summary import HEADLINES, RunSummary, RunTree, scan, summarize
from workbook.report.view import date_text, duration_text

_e = html.escape

FILTER_JS = """
function wbFilter(){var s=document.getElementById('f-scenario').value,
v=document.getElementById('f-verdict').value,n=0;
document.querySelectorAll('#runs tbody tr').forEach(function(r){
var ok=(!s||r.dataset.scenario===s)&&(!v||r.dataset.verdict===v);r.hidden=!ok;if(ok)n++;});
document.getElementById('f-count').textContent=n+' shown';}
document.getElementById('f-scenario').addEventListener('change',wbFilter);
document.getElementById('f-verdict').addEventListener('change',wbFilter);wbFilter();
"""

INDEX_CSS = """<style>body{max-width:1500px}
.badge{display:inline-block;padding:1px 8px;border-radius:9px;font-weight:700;font-size:.8em;color:#fff}
.b-passed{background:#007a5a}
.b-improved{background:#00788a}
.b-suspect{background:#8a7d00}
.b-regressed{background:#b36b00}
.b-failed{background:#b84a00}
.b-running{background:#0072B2}
.b-stopped{background:#3d7ea6}
.b-pending{background:#999}
.b-unjudged,.b-unknown{background:#666}
#runs td{white-space:nowrap}
#runs td.reason{white-space:normal;max-width:26em;font-size:.85em;
overflow-wrap:anywhere}
.filters{margin:8px 0}
.filters label{margin-right:14px}
.tally .badge{margin-right:6px}
</style>"""


def write_index(runs_root: Path, out: Path | None = None, *, published: bool = False) -> Path:
    """Write ``index.html`` for every run under ``runs_root`` (into ``out``, a folder or file).

    ``published``: the tree is a published site, which keeps no summary cache files."""
    runs_root = Path(runs_root)
    target = _target(runs_root, out)
    tree = scan(runs_root)
    runs = sorted((summarize(p, cache_it=not published) for p in tree.runs),
                  key=lambda s: s.sort_key, reverse=True)
    ledgers = read_all(runs_root, store=not published)  # the history of each scenario
    body = (
        f'<h1>verl runs</h1><p class="wb-note">{len(runs)} runs, '
        f"newest first; generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}.</p>"
        + INDEX_CSS
        + _tally(runs)
        + _suites(tree, runs_root, target.parent)
        + _comparisons(tree, runs_root, target.parent)
        + _listed(tree, runs_root, target.parent, ALIGNMENTS)
        + _listed(tree, runs_root, target.parent, BISECTS)
        + _nightly(ledgers, runs_root, target.parent)
        + "<h2>All runs</h2>"
        + _filters(runs)
        + _table(runs, runs_root, target.parent)
        + _trends(runs, runs_root / TREND_CACHE, _nights(ledgers, runs_root))
        + f"<script>{FILTER_JS}</script>"
    )
    return write_atomic(target, page("verl runs", body))


def _target(runs_root: Path, out: Path | None) -> Path:
    if out is None:
        return runs_root / INDEX
    out = Path(out)
    return out if out.suffix == ".html" else out / INDEX


def _tally(runs: list[RunSummary]) -> str:
    """How many runs have each verdict, as badges in the filters' order (a word the workbook
    does not know after them, as it is): an ``improved`` night stands out from the passes, a ``suspect`` one from the regressions."""
    counts = Counter(r.verdict for r in runs)
    words = [v for v in SHOWN if counts[v]] + sorted(w for w in counts if w not in SHOWN)
    badges = "".join(f'<span class="badge b-{_e(w)}" data-count="{_e(w)}">{counts[w]} {_e(w)}'
                     "</span>" for w in words)
    return f'<p class="tally">{badges}</p>' if badges else ""


def _filters(runs: list[RunSummary]) -> str:
    scenarios = sorted({r.scenario for r in runs})
    verdicts = [
        v
        for v in SHOWN
        if any(r.verdict == v for r in runs)
    ]

    def options(values: list[str]) -> str:
        return "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in values)

    return (
        '<div class="filters"><label>scenario <select id="f-scenario"><option value="">all</option>'
        f'{options(scenarios)}</select></label><label>verdict <select id="f-verdict">'
        f'<option value="">all</option>{options(verdicts)}</select></label>'
        '<span id="f-count"></span></div>'
    )


def _table(runs: list[RunSummary], runs_root: Path, base: Path) -> str:
    columns = ["date", "scenario", "verdict", "steps", "duration"]
    columns += [f"{h} ({unit})" for h, (_m, unit) in HEADLINES.items()] + ["report", "reason"]
    head = "".join(f"<th>{_e(h)}</th>" for h in columns)
    rows = []
    for r in runs:
        report = Path(r.path) / RUN_FILES["report"]
        link = (
            f'<a href="{_e(links.href(report, base))}">report</a>'
            if r.has_report and _linkable(report, runs_root)
            else '<span data-pruned>pruned (older than the nights kept in full)</span>'
            if r.pruned else f"no report ({_e(r.status)})"
        )
        steps = (
            ""
            if r.steps is None
            else str(r.steps) + (f"/{r.expected_steps}" if r.expected_steps else "")
        )
        numbers = "".join(f'<td class="num">{_e(_fmt(r.headline.get(h)))}</td>' for h in HEADLINES)
        rows.append(
            f'<tr data-scenario="{_e(r.scenario)}" data-verdict="{_e(r.verdict)}" data-run="{_e(r.run_id)}">'
            f"<td>{_e(date_text(r.started_at) if r.started_at else r.run_id)}</td><td>{_e(r.scenario)}</td>"
            f'<td><span class="badge b-{_e(r.verdict)}">{_e(r.verdict)}</span></td><td class="num">{steps}</td>'
            f"<td>{_e(duration_text(r.wall_time_s) if r.wall_time_s is not None else '')}</td>{numbers}"
            f'<td>{link}</td><td class="reason">{_e(r.reason)}</td></tr>'
        )
    return f'<table id="runs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _suites(tree: RunTree, runs_root: Path, base: Path) -> str:
    """One table per suite night (newest first): each entry's verdict and a link to its report."""
    nights = sorted((p for p in tree.holding(SUITE_FILE) if _linkable(p, runs_root)),
                    key=lambda p: (p.parent.name, p.parent.parent.name), reverse=True)
    parts = []
    for path in nights:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        entries = [e for e in data.get("entries", []) if isinstance(e, dict)]
        rows = []
        for e in entries:
            # <suite dir>/<entry>/<run_id>: found from the suite's own folder, so the links hold
            # in a published copy of the tree too
            run_dir = Path(str(e.get("run_dir") or "."))
            report = path.parent.joinpath(*run_dir.parts[-2:], RUN_FILES["report"])
            link = (f'<a href="{_e(links.href(report, base))}">report</a>'
                    if e.get("run_dir") and _linkable(report, runs_root) else "no report")
            duration = duration_text(e.get("duration_s")) if e.get("duration_s") else ""
            rows.append(f'<tr data-entry="{_e(str(e.get("key")))}"><td>{_e(str(e.get("key")))}</td>'
                        f'<td><span class="badge b-{_e(str(e.get("status")))}">'
                        f'{_e(str(e.get("status")))}</span></td><td>{_e(duration)}</td>'
                        f'<td>{link}</td><td class="reason">{_e(str(e.get("reason") or ""))}</td></tr>')
        worst = max((e.get("exit_code") or 0 for e in entries), default=0)
        parts.append(
            f'<section data-suite="{_e(str(data.get("suite")))}" data-night="{_e(path.parent.name)}">'
            f'<h3>suite {_e(str(data.get("suite")))} · {_e(path.parent.name)} · exit {worst}</h3>'
            '<table class="suite"><thead><tr><th>entry</th><th>verdict</th><th>duration</th>'
            f'<th>report</th><th>reason</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
            "</section>")
    return ("<h2>Suites</h2>" + "".join(parts)) if parts else ""


def _comparisons(tree: RunTree, runs_root: Path, base: Path) -> str:
    """Links to every comparison page: sweeps' and ad-hoc ones (newest first)."""
    pages = [p for p in tree.holding(COMPARISON_PAGE) if _linkable(p, runs_root)]
    if not pages:
        return ""
    items = []
    for found in sorted(pages, key=lambda p: p.stat().st_mtime, reverse=True):
        label = "/".join(found.parent.relative_to(runs_root).parts)
        items.append(f'<li data-comparison="{_e(label)}"><a href="{_e(links.href(found, base))}">'
                     f"{_e(label)}</a></li>")
    return f"<h2>Comparisons</h2><ul>{''.join(items)}</ul>"


@dataclass(frozen=True)
class Listed:
    """A kind of page the index lists by itself: its file, the record beside it, and how a
    record reads in a line (its status word and what it says)."""

    heading: str
    attribute: str  # the list item's data-* name
    page: str
    record: str
    read: Callable[[dict[str, Any]], tuple[str, str]]


def _alignment_line(record: dict[str, Any]) -> tuple[str, str]:
    return (str(record["verdict"]["status"]),
            f'{record["run_a"]["run_id"]} vs {record["run_b"]["run_id"]}')


def _bisect_line(record: dict[str, Any]) -> tuple[str, str]:
    result = record["result"]
    return str(result["status"]), str(result["message"])


ALIGNMENTS = Listed("Alignments", "alignment", ALIGNMENT_PAGE, ALIGNMENT_FILE, _alignment_line)
BISECTS = Listed("Bisects", "bisect", BISECT_PAGE, BISECT_FILE, _bisect_line)
# a status word's badge colour, as its own page's banner shows it (an aligned pair green, a found
# culprit in the colour of the regression it found)
_BADGES = {**ALIGNMENT_VERDICTS, **BISECT_BANNER}


def _listed(tree: RunTree, runs_root: Path, base: Path, kind: Listed) -> str:
    """Links to every page of ``kind`` with its status and what its record says, newest first
    (a record that cannot be read says so; the page is still linked)."""
    pages = [p for p in tree.holding(kind.page) if _linkable(p, runs_root)]
    items = []
    for found in sorted(pages, key=lambda p: p.stat().st_mtime, reverse=True):
        label = "/".join(found.parent.relative_to(runs_root).parts)
        try:
            status, said = kind.read(read_json_object(found.parent / kind.record))
        except (KeyError, TypeError):  # {}: missing or broken; or not the shape it should be
            status, said = "unknown", f"its {kind.record} cannot be read"
        badge = _BADGES.get(status, "unknown" if status == "unknown" else "regressed")
        items.append(f'<li data-{kind.attribute}="{_e(label)}"><span class="badge b-{badge}">'
                     f'{_e(status)}</span> <a href="{_e(links.href(found, base))}">{_e(label)}</a>: '
                     f"{_e(said)}</li>")
    return f"<h2>{kind.heading}</h2><ul>{''.join(items)}</ul>" if items else ""


def _trends(runs: list[RunSummary], cache: Path, nights: dict[str, Entry] | None = None) -> str:
    """Per scenario with at least two runs: the headline numbers across runs, oldest first; the
    nights (``nights``: ledger entries by run directory) whose environment changed marked."""
    parts = ["<h2>Trends per scenario</h2>"]
    for scenario in sorted({r.scenario for r in runs}):
        mine = sorted((r for r in runs if r.scenario == scenario), key=lambda s: s.sort_key)
        if len(mine) < 2:
            continue
        labels = [r.started_at[:10] or r.run_id for r in mine]
        series = {h: [r.headline.get(h) for r in mine] for h in HEADLINES}
        first_out = {
            h: next(i for i, r in enumerate(mine) if h in r.out_of_band)
            for h in HEADLINES
            if any(h in r.out_of_band for r in mine)
        }
        changed = change_marks([(nights or {}).get(_resolved(r.path)) for r in mine])
        levels = {h: found for h in HEADLINES if (found := onsets_of(series[h]))}
        png = _cached_chart(cache, f"{scenario}: {len(mine)} runs", labels, series, first_out,
                            [(m.x, m.label) for m in changed], levels)
        marks = "; ".join(
            f"{h} first left its baseline band in run {mine[i].run_id}"
            for h, i in first_out.items()
        )
        parts.append(
            f'<figure data-trend="{_e(scenario)}"><img alt="trends of {_e(scenario)}"'
            f'{_hover(changed, labels)} '
            f'src="data:image/png;base64,{b64encode(png).decode("ascii")}">'
            f"<figcaption>{_e(marks or 'every headline number within its baseline band')}</figcaption>"
            f"{_changes_list(changed, labels)}{_onsets_list(levels, labels, mine)}</figure>"
        )
    return "".join(parts) if len(parts) > 1 else ""


def _cached_chart(
    cache: Path,
    title: str,
    labels: list[str],
    series: dict[str, list[float | None]],
    first_out: dict[str, int],
    marks: list[tuple[int, str]] | None = None,
    levels: dict[str, list[int]] | None = None,
) -> bytes:
    units = {h: unit for h, (_m, unit) in HEADLINES.items()}
    drawn = [title, labels, series, first_out, units] + ([marks] if marks else [])
    drawn += [levels] if levels else []
    key = hashlib.sha256(json.dumps(drawn).encode()).hexdigest()[:24]
    path = cache / f"{key}.png"
    try:
        return path.read_bytes()
    except OSError:
        pass
    # drawn without the keyword when no series changed level: the chart as it was before onsets
    extra = {"onsets": levels} if levels else {}
    png = trend_chart(title, labels, series, units, first_out, marks or (), **extra)
    try:
        cache.mkdir(exist_ok=True)
        tmp = cache / f".{key}.{secrets.token_hex(4)}.tmp"
        tmp.write_bytes(png)
        tmp.replace(path)
    except OSError:
        pass  # a read-only runs root still gets its index
    return png


def _nightly(ledgers: dict[tuple[str, str], list[Entry]], runs_root: Path, base: Path) -> str:
    """Per scenario and hardware: red since when and what changed, the last green night, the
    improved nights and the baseline's state (:mod:`workbook.report.nightly`)."""
    def link(path: Path) -> str | None:
        return links.href(path, base) if _linkable(path, runs_root) else None

    notes = "".join(f"<li>{_e(p)}</li>" for p in problems(runs_root))  # lines kept aside, FIFOs
    return (nightly_html(nightly_rows(ledgers, runs_root, link))
            + (f'<ul class="wb-note" data-ledger-problems>{notes}</ul>' if notes else ""))


def _nights(ledgers: dict[tuple[str, str], list[Entry]], runs_root: Path) -> dict[str, Entry]:
    """Every ledger entry by its run directory (resolved), as the trend charts look them up."""
    return {_resolved(e.run_dir(runs_root)): e for entries in ledgers.values() for e in entries}


def _resolved(path: str | Path) -> str:
    return str(Path(path).resolve())


def _changes_list(changed: list[ChangeMark], labels: list[str]) -> str:
    """The environment changes a chart marks, one line per night (what the dotted lines name)."""
    if not changed:
        return ""
    items = "".join(f'<li data-change="{_e(m.run_id)}">{_e(labels[m.x])} ({_e(m.run_id)}): '
                    f"{_e(m.text)}</li>" for m in changed)
    return f'<ul class="wb-note" data-changes>{items}</ul>'


def _onsets_list(levels: dict[str, list[int]], labels: list[str],
                 runs: list[RunSummary]) -> str:
    """The onsets a chart marks, one line per series and night (what the dashed lines name)."""
    items = "".join(f'<li data-onset="{_e(runs[x].run_id)}" data-series="{_e(name)}">'
                    f"{_e(name)}: a new level from {_e(labels[x])} ({_e(runs[x].run_id)})</li>"
                    for name, found in levels.items() for x in found)
    return f'<ul class="wb-note" data-onsets>{items}</ul>' if items else ""


def _hover(changed: list[ChangeMark], labels: list[str]) -> str:
    """The chart's hover text: the changes it marks."""
    if not changed:
        return ""
    return f' title="{_e(" | ".join(f"{labels[m.x]}: {m.text}" for m in changed))}"'


def _linkable(path: Path, runs_root: Path) -> bool:
    """The index links only a regular file of the tree itself: never a link, never a file a
    suite entry's ``run_dir`` points at outside the runs root."""
    path = Path(path)
    if path.is_symlink() or not path.is_file():
        return False
    return Path(runs_root).resolve() in path.resolve().parents


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"
