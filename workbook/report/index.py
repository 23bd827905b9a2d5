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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from workbook.core.clock import date_text, now_iso
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
from workbook.core.values import number_text
from workbook.history.ledger import Entry, problems, read_all
from workbook.history.onsets import onsets as onsets_of
from workbook.plots.trends import ChangeMark, change_marks, trend_chart
from workbook.report import links
from workbook.report.nightly import NightlyRow, nightly_html, nightly_rows
from workbook.report.page import page
from workbook.report.palette import ALIGNMENT_VERDICTS, BISECT_BANNER
from workbook.report.sparkline import sparkline
from workbook.report.summary import HEADLINES, RunSummary, RunTree, scan, summarize
from workbook.report.template import environment
from workbook.report.view import duration_text

_e = html.escape
TEMPLATE = "index.html.j2"

FILTER_JS = """
function wbFilter(){var s=document.getElementById('f-scenario').value,
v=document.getElementById('f-verdict').value,n=0;
document.querySelectorAll('#runs tbody tr').forEach(function(r){
var ok=(!s||r.dataset.scenario===s)&&(!v||r.dataset.verdict===v);r.hidden=!ok;if(ok)n++;});
document.getElementById('f-count').textContent=n+' shown';}
document.getElementById('f-scenario').addEventListener('change',wbFilter);
document.getElementById('f-verdict').addEventListener('change',wbFilter);wbFilter();
"""



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
        f"newest first; generated {date_text(now_iso())}.</p>"
        + _tally(runs)
        + _nightly(ledgers, runs_root, target.parent, runs)
        + _suites(tree, runs_root, target.parent)
        + _comparisons(tree, runs_root, target.parent)
        + _listed(tree, runs_root, target.parent, ALIGNMENTS)
        + _listed(tree, runs_root, target.parent, BISECTS)
        + "<h2>All runs</h2>"
        + _filters(runs)
        + _table(runs, runs_root, target.parent)
        + _trends(runs, runs_root / TREND_CACHE, _nights(ledgers, runs_root), store=not published)
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


@dataclass(frozen=True)
class RunLine:
    """A run as its line of the index shows it, every cell as text."""

    run_id: str
    scenario: str
    verdict: str
    status: str
    date: str
    steps: str
    duration: str
    numbers: tuple[str, ...]
    href: str | None  # its report, relative to the index
    reason: str
    pruned: bool = False  # a published site's retention removed its report and log


@dataclass(frozen=True)
class Runs:
    headlines: tuple[tuple[str, str], ...]  # (name, unit)
    rows: tuple[RunLine, ...]


@dataclass(frozen=True)
class EntryLine:
    key: str
    status: str
    duration: str
    href: str | None
    reason: str


@dataclass(frozen=True)
class SuiteNight:
    """A suite's night: its line (the verdicts counted) and its entries."""

    suite: str
    night: str
    exit: int
    counts: tuple[tuple[str, int], ...]
    entries: tuple[EntryLine, ...]


def _macro(name: str, data: object) -> str:
    return str(getattr(environment().get_template(TEMPLATE).module, name)(data)).strip()


def _table(runs: list[RunSummary], runs_root: Path, base: Path) -> str:
    lines = []
    for r in runs:
        report = Path(r.path) / RUN_FILES["report"]
        steps = ("" if r.steps is None
                 else str(r.steps) + (f"/{r.expected_steps}" if r.expected_steps else ""))
        lines.append(RunLine(
            run_id=r.run_id, scenario=r.scenario, verdict=r.verdict, status=r.status,
            date=date_text(r.started_at) if r.started_at else r.run_id, steps=steps,
            duration=duration_text(r.wall_time_s) if r.wall_time_s is not None else "",
            numbers=tuple(number_text(r.headline.get(h)) for h in HEADLINES),
            href=(links.href(report, base) if r.has_report and _linkable(report, runs_root)
                  else None),
            reason=r.reason, pruned=r.pruned))
    headlines = tuple((h, unit) for h, (_m, unit) in HEADLINES.items())
    return _macro("runs", Runs(headlines, tuple(lines)))


def _suites(tree: RunTree, runs_root: Path, base: Path) -> str:
    """One line per suite night (newest first, open): its verdicts counted, opening to each
    entry's verdict and a link to its report."""
    paths = sorted((p for p in tree.holding(SUITE_FILE) if _linkable(p, runs_root)),
                   key=lambda p: (p.parent.name, p.parent.parent.name), reverse=True)
    nights = []
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        entries = [e for e in data.get("entries", []) if isinstance(e, dict)]
        lines = []
        for e in entries:
            # <suite dir>/<entry>/<run_id>: found from the suite's own folder, so the links hold
            # in a published copy of the tree too
            run_dir = Path(str(e.get("run_dir") or "."))
            report = path.parent.joinpath(*run_dir.parts[-2:], RUN_FILES["report"])
            lines.append(EntryLine(
                key=str(e.get("key")), status=str(e.get("status")),
                duration=duration_text(e.get("duration_s")) if e.get("duration_s") else "",
                href=(links.href(report, base)
                      if e.get("run_dir") and _linkable(report, runs_root) else None),
                reason=str(e.get("reason") or "")))
        counts = Counter(line.status for line in lines)
        nights.append(SuiteNight(
            suite=str(data.get("suite")), night=path.parent.name,
            exit=max((e.get("exit_code") or 0 for e in entries), default=0),
            counts=tuple(sorted(counts.items(), key=lambda kv: _order(kv[0]))),
            entries=tuple(lines)))
    return _macro("suites", nights)


def _order(word: str) -> tuple[int, str]:
    """A verdict word's place in the filters' order (a word the workbook does not know last)."""
    return (SHOWN.index(word) if word in SHOWN else len(SHOWN), word)


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


def _trends(runs: list[RunSummary], cache: Path, nights: dict[str, Entry] | None = None, *,
            store: bool = True) -> str:
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
        levels = {h: found for h in HEADLINES if (found := _cached_onsets(cache, series[h], store=store))}
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


def _cached_onsets(cache: Path, series: list[float | None], *, store: bool) -> list[int]:
    """The series' onsets, kept in the trend cache beside the charts: the change-point search
    is the index's slowest step (seconds for a thousand nights), and its answer depends on the
    numbers alone. Not stored in a published site (``store`` False), which holds charts only."""
    key = hashlib.sha256(json.dumps(["onsets", series]).encode()).hexdigest()[:24]
    path = cache / f"{key}.onsets.json"
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(found, list) and all(isinstance(x, int) for x in found):
            return found
    except (OSError, ValueError):
        pass
    found = onsets_of(series)
    if store:
        _keep(path, json.dumps(found).encode("utf-8"))
    return found


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
    png = trend_chart(title, labels, series, units, first_out, marks or (), onsets=levels or None)
    _keep(path, png)
    return png


def _keep(path: Path, data: bytes) -> None:
    """Put a chart or a series' onsets in the trend cache, through a temp file and a rename."""
    try:
        path.parent.mkdir(exist_ok=True)
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError:
        pass  # a read-only runs root still gets its index


def _nightly(ledgers: dict[tuple[str, str], list[Entry]], runs_root: Path, base: Path,
             runs: list[RunSummary]) -> str:
    """Per scenario and hardware: the newest verdict, the headline number across the nights,
    red since when and what changed, the last green night, the improved nights and the
    baseline's state (:mod:`workbook.report.nightly`)."""
    def link(path: Path) -> str | None:
        return links.href(path, base) if _linkable(path, runs_root) else None

    by_dir = {_resolved(r.path): r for r in runs}
    rows = []
    for row in nightly_rows(ledgers, runs_root, link):
        nights = [by_dir.get(_resolved(e.run_dir(runs_root)))
                  for e in ledgers.get((row.scenario, row.hardware), [])]
        rows.append(_with_trend(row, [n for n in nights if n is not None]))
    notes = "".join(f"<li>{_e(p)}</li>" for p in problems(runs_root))  # lines kept aside, FIFOs
    return (nightly_html(rows)
            + (f'<ul class="wb-note" data-ledger-problems>{notes}</ul>' if notes else ""))


def _with_trend(row: NightlyRow, nights: list[RunSummary]) -> NightlyRow:
    """The row with its sparkline: the first headline number its nights logged twice."""
    for name, (_metrics, unit) in HEADLINES.items():
        line = sparkline(f"{name} ({unit})", [(n.headline.get(name), n.verdict) for n in nights])
        if line is not None:
            return replace(row, spark=line, spark_label=name)
    return row


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

