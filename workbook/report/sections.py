"""What the notebook's report cells display, and what a report built without a notebook shows.

Each function takes a run (a ``Run`` from ``workbook.run.steps``, a ``RunDir``, or a path) and
returns a :class:`Section`: HTML with ``_repr_html_``, so a notebook cell that ends with the call
displays it, and :func:`workbook.report.render.render_report` can build the same page straight
from the run directory when the notebook crashed. Images are inline base64 PNGs: the report is
one self-contained file. Every element carries a ``data-*`` attribute that tests look for.
"""

from __future__ import annotations

import html
from base64 import b64encode
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbook import provenance
from workbook.plots.panels import Panel, build_panels, regression_panel
from workbook.report.page import banner_style, status_style
from workbook.report.view import (
    RunView,
    band_of,
    bands,
    date_text,
    duration_text,
    finite_number,
    load_view,
)

_e = html.escape
CHECKS_NOTE = (
    "Every check is a row: its value, what was expected and whether it held. A comparison with "
    "the baseline allows k sigma of the blessed runs' spread (or a floor, or the scenario's own "
    "tolerance): 'band from' says which. NOT MEASURED (the hardware does not measure the metric) "
    "and NOT COMPARABLE (other hardware, other settings, or replayed rollouts) are neither passes "
    "nor failures. A failed comparison is drawn below the table against its band."
)
PLOTS_NOTE = (
    "Clip fraction: the share of tokens whose importance ratio left [1 - clip_ratio_low, "
    "1 + clip_ratio_high] (the configured ratios are in its title). A panel whose metrics the run "
    "did not log is left out; a baseline, where the checks have one, is a shaded band."
)


@dataclass(frozen=True)
class Section:
    """One block of a report; displays itself in Jupyter."""

    key: str
    html: str

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<report section {self.key}>"


def run_path(run: Any) -> Path:
    """The run directory of a pipeline ``Run``, a ``RunDir``, or a path."""
    for attr in ("run_dir", "path"):
        if hasattr(run, attr) and not isinstance(run, (str, Path)):
            return run_path(getattr(run, attr))
    return Path(run)


def view(run: Any) -> RunView:
    return load_view(run_path(run))


def banner(run: Any) -> Section:
    """Verdict, its one-line reason, and the facts needed to place the run."""
    v = view(run)
    status, reason = v.verdict
    expected = v.run.get("expected_steps")
    steps = v.steps_reached
    facts = {
        "scenario": v.scenario,
        "run": v.run_id,
        "date": date_text(v.started),
        "duration": duration_text(v.run.get("wall_time_s")),
        "hardware": provenance.describe(v.run) if v.run.get("hardware") else "unknown",
        "steps reached": (
            f"{steps if steps is not None else 0}" + (f" of {expected}" if expected else "")
        ),
        "run status": v.status,
    }
    replayed = (v.run.get("diagnosis") or {}).get("replayed_steps") or []
    if replayed:
        facts["rollouts"] = (f"replayed from a dump (steps {replayed[0]}-{replayed[-1]})"
                             if len(replayed) > 1 else f"replayed from a dump (step {replayed[0]})")
    items = "".join(
        f'<div><dt>{_e(k)}</dt><dd data-fact="{_e(k)}">{_e(str(val))}</dd></div>'
        for k, val in facts.items()
    )
    body = (
        f'<section class="wb-banner wb-{_e(status)}" id="verdict-banner" data-verdict="{_e(status)}"'
        f' style="{banner_style(status)}">'
        f'<div class="wb-verdict" style="font-size:1.6em;font-weight:700">{_e(status.upper())}</div>'
        f'<div class="wb-reason" data-reason>{_e(reason)}</div>'
        f'<dl style="display:flex;flex-wrap:wrap;gap:4px 22px;margin:0">{items}</dl></section>'
    )
    return Section("banner", body)


def checks(run: Any) -> Section:
    """The checks table with pass/fail colours; a failed comparison's curve against its band."""
    v = view(run)
    rows = v.rows
    if not rows:
        return Section(
            "checks",
            '<section data-section="checks"><h2>Checks</h2>'
            "<p>No checks were evaluated for this run.</p></section>",
        )
    cells = "".join(
        f'<tr class="wb-row-{_e(str(r.get("status")))}" data-check="{_e(str(r.get("name")))}">'
        f"<td>{_e(str(r.get('name', '')))}</td><td>{_e(str(r.get('metric') or ''))}</td>"
        f'<td class="num">{_e(_fmt(r.get("value")))}</td><td>{_e(str(r.get("expected", "")))}</td>'
        f"<td>{_e(str(r.get('band') or ''))}</td>"
        f'<td class="wb-status" style="{status_style(str(r.get("status")))}">'
        f'{_e(str(r.get("status", "")).replace("_", " ").upper())}</td>'
        f"<td>{_e(str(r.get('message', '')))}</td></tr>"
        for r in rows
    )
    table = (
        '<table class="wb-checks"><thead><tr><th>check</th><th>metric</th><th>value</th>'
        "<th>expected</th><th>band from</th><th>status</th><th>message</th></tr></thead>"
        f"<tbody>{cells}</tbody></table>"
    )
    figures = []
    for row in rows:
        band = band_of(row)
        if row.get("status") in ("fail", "error") and row.get("metric") and band is not None:
            panel = regression_panel(
                v.metrics,
                str(row["metric"]),
                band,
                f"{row['metric']} against its baseline ({row.get('name')})",
            )
            if panel is not None:
                figures.append(_figure(panel))
    return Section(
        "checks",
        f'<section data-section="checks"><h2>Checks</h2><p class="wb-note">{CHECKS_NOTE}</p>'
        f"{table}{''.join(figures)}</section>",
    )


def plots(run: Any) -> Section:
    """Every panel the run's metrics allow; the baselines of the checks drawn as bands."""
    v = view(run)
    if not v.metrics.steps:
        return Section(
            "plots",
            '<section data-section="plots"><h2>Plots</h2>'
            "<p>The run logged no metrics.</p></section>",
        )
    panels = build_panels(
        v.metrics,
        clip_ratio_low=finite_number(v.run.get("clip_ratio_low")),
        clip_ratio_high=finite_number(v.run.get("clip_ratio_high")),
        bands=bands(v.rows),
    )
    return Section(
        "plots",
        f'<section data-section="plots"><h2>Plots</h2><p class="wb-note">{PLOTS_NOTE}</p>'
        + "".join(_figure(p) for p in panels)
        + "</section>",
    )


def failure(run: Any, lines: int = 50) -> Section:
    """For a failed run only: the diagnosis, its evidence and the end of the log."""
    v = view(run)
    status, _ = v.verdict
    if status != "failed":
        return Section("failure", "")
    diagnosis = v.run.get("diagnosis") or {}
    evidence = "\n".join(str(x) for x in diagnosis.get("evidence") or [])
    parts = ['<section class="wb-failure" data-section="failure"><h2>Why it failed</h2>']
    if diagnosis:
        parts.append(
            f"<p><strong data-category>{_e(str(diagnosis.get('category', 'unknown')))}</strong>: "
            f"{_e(str(diagnosis.get('summary', '')))}"
            + (
                f" (last step {_e(str(diagnosis['last_step']))})"
                if diagnosis.get("last_step") is not None
                else ""
            )
            + "</p>"
        )
    if evidence:
        parts.append(f"<h3>Evidence</h3><pre data-evidence>{_e(evidence)}</pre>")
    tail = v.log_tail(lines)
    parts.append(
        f"<h3>Last {len(tail)} lines of the log</h3><pre data-log-tail>{_e(chr(10).join(tail))}</pre>"
    )
    return Section("failure", "".join(parts) + "</section>")


def parameters(run: Any) -> Section:
    """The resolved parameters and the exact command (environment included), redacted."""
    v = view(run)
    command = v.command()
    env = command.get("env") or {}
    env_rows = "".join(
        f"<tr><td>{_e(str(k))}</td><td>{_e(str(val))}</td></tr>" for k, val in sorted(env.items())
    )
    shell = v.text("command_sh") or " ".join(str(a) for a in command.get("argv") or [])
    body = (
        '<section data-section="parameters"><h2>Parameters and command</h2>'
        f"<details open><summary>Command</summary><pre data-command>{_e(shell or 'not recorded')}</pre></details>"
        + (
            f'<details><summary>Environment ({len(env)})</summary><table class="wb-kv">{env_rows}</table></details>'
            if env
            else ""
        )
        + f"<details><summary>Resolved parameters</summary><pre data-params>{_e(v.text('params') or 'not recorded')}</pre>"
        "</details></section>"
    )
    return Section("parameters", body)


def reproducibility(run: Any) -> Section:
    """Versions, commits, OS, Python, host and hardware the run ran with."""
    r = view(run).run
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
        (
            "nodes x devices",
            f"{r.get('nodes')} x {r.get('devices_per_node')}" if r.get("nodes") else None,
        ),
    ]
    table = "".join(
        f"<tr><td>{_e(k)}</td><td>{_e(str(val))}</td></tr>"
        for k, val in rows
        if val not in (None, "")
    )
    npu = f"<h3>npu-smi info</h3><pre>{_e(str(r['npu_smi']))}</pre>" if r.get("npu_smi") else ""
    return Section(
        "reproducibility",
        '<section data-section="reproducibility"><h2>Reproducibility</h2>'
        f'<table class="wb-kv">{table or "<tr><td>not recorded</td></tr>"}</table>{npu}</section>',
    )


def preflight(run: Any) -> Section:
    """The Ray launcher's pre-flight: the nodes it found, their resources, what was required."""
    info = view(run).run
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
    head = '<section data-section="preflight"><h2>Pre-flight</h2>'
    if not isinstance(found, dict):
        return Section(
            "preflight",
            head + "<p>No pre-flight result recorded (local launcher, "
            "or the run did not reach the cluster).</p></section>",
        )
    rows = "".join(
        f"<tr data-node><td>{_e(str(n.get('ip', '')))}{' (head)' if n.get('is_head') else ''}</td>"
        f"<td>{_e(str(n.get('node_id', ''))[:12])}</td><td>{'yes' if n.get('alive') else 'no'}</td>"
        f"<td>{_e(_resources(n.get('resources') or {}))}</td></tr>"
        for n in found.get("nodes") or []
        if isinstance(n, dict)
    )
    need = found.get("required") or {}
    wanted = (
        (
            f"<p>Required: {_e(str(need.get('nodes')))} nodes x {_e(str(need.get('devices_per_node')))} "
            f"{_e(str(need.get('device_resource', 'device')))} per node; cluster at "
            f"<code>{_e(str(found.get('address', '')))}</code>.</p>"
        )
        if need
        else ""
    )
    table = (
        (
            '<table class="wb-kv"><tr><th>node</th><th>id</th><th>alive</th><th>resources</th></tr>'
            f"{rows}</table>"
        )
        if rows
        else "<p>No alive node reported.</p>"
    )
    return Section("preflight", head + wanted + table + "</section>")


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


def report_sections(run: Any) -> list[Section]:
    """All sections in report order (what a report built from the run directory shows)."""
    return [
        banner(run),
        checks(run),
        plots(run),
        failure(run),
        parameters(run),
        reproducibility(run),
    ]


def _figure(panel: Panel) -> str:
    data = b64encode(panel.png).decode("ascii")
    return (
        f'<figure data-panel="{_e(panel.key)}"><img alt="{_e(panel.title)}" '
        f'src="data:image/png;base64,{data}" data-metrics="{_e(" ".join(panel.metrics))}"></figure>'
    )


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)
