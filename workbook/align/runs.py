"""Two run directories aligned: read, compared metric by metric, judged, and as ``alignment.json``.

Run A is the reference (on GPU, or the old verl), run B the run being ported. Both must be run
directories of one scenario with metrics: anything else is bad input (exit 2), since an alignment
of a run with nothing says nothing. The thresholds are the defaults, then run A's scenario's
``alignment:`` section (its ``params.resolved.yaml``), then the caller's (the command line).

Each run's facts (versions, commits, hardware, machine, the conditions it trained in, its
settings, environment and overrides) are kept beside the numbers, redacted, so the page can show
what differs between the two and the record says what was compared.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbook.align.compute import (
    THROUGHPUT,
    Judgement,
    MetricAlignment,
    Throughput,
    align_metric,
    judge_alignment,
    metric_names,
    percent,
    positive,
    thresholds_of,
    throughput,
)
from workbook.checks.evidence import Evidence, gather, is_run_directory
from workbook.checks.signed_rank import PairedTest
from workbook.core.layout import RUN_FILES, now_iso
from workbook.core.redaction import redact_mapping
from workbook.errors import InputError
from workbook.params.settings import settings_of

FORMAT = "workbook-alignment/1"
NOT_DETERMINISTIC = ("run {side} was not made with deterministic: true: its numerics may differ "
                     "run to run, so a small error is not proof of alignment")


@dataclass(frozen=True)
class RunSide:
    """One of the two runs as the alignment saw it; ``facts`` are ``{group: {name: value}}``
    (versions, commits, hardware, machine, conditions, settings, env, overrides)."""

    side: str  # "A" or "B"
    path: str
    scenario: str
    run_id: str
    deterministic: bool
    steps_reached: int
    expected_steps: int | None
    verdict: str
    replayed_steps: tuple[int, ...]
    facts: dict[str, dict[str, Any]]

    @property
    def label(self) -> str:
        return f"{self.side}: {self.scenario}/{self.run_id}"


@dataclass(frozen=True)
class Alignment:
    """What ``alignment.json`` holds: the two runs, every metric, the throughput, the verdict."""

    a: RunSide
    b: RunSide
    metrics: tuple[MetricAlignment, ...]
    throughput: Throughput
    judgement: Judgement
    created: str = ""

    @property
    def status(self) -> str:
        return self.judgement.status

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "created": self.created,
                "verdict": {"status": self.status, "reason": self.judgement.reason,
                            "exit_code": self.judgement.exit_code,
                            "problems": list(self.judgement.problems)},
                "warnings": list(self.judgement.warnings),
                "run_a": _side_dict(self.a), "run_b": _side_dict(self.b),
                "metrics": [_metric_dict(m) for m in self.metrics],
                "throughput": {"metric": THROUGHPUT, "ratio": self.throughput.ratio,
                               "steps": list(self.throughput.steps), "a": self.throughput.a,
                               "b": self.throughput.b, "min_ratio": self.throughput.minimum,
                               "holds": self.throughput.holds}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Alignment:
        """An alignment as recorded (the page is rendered from the record, not the runs)."""
        verdict, rate = data["verdict"], data["throughput"]
        return cls(
            a=_side(data["run_a"]), b=_side(data["run_b"]),
            metrics=tuple(_metric(m) for m in data["metrics"]),
            throughput=Throughput(rate.get("ratio"), tuple(rate.get("steps") or ()),
                                  rate.get("a"), rate.get("b"), rate.get("min_ratio")),
            judgement=Judgement(verdict["status"], verdict["reason"],
                                tuple(verdict.get("problems") or ()),
                                tuple(data.get("warnings") or ())),
            created=str(data.get("created") or ""))


def align_runs(path_a: Path, path_b: Path, *, thresholds: Mapping[str, float] | None = None,
               metrics: Iterable[str] = (), min_throughput_ratio: float | None = None) -> Alignment:
    """Align run B (``path_b``) with the reference run A (``path_a``).

    Raises:
        InputError: a path is not a run directory, the runs are of different scenarios, one
            has no metrics, or a threshold (given or in A's scenario) is not a number >= 0.
    """
    ev_a, ev_b = evidence_of(path_a, "A"), evidence_of(path_b, "B")
    name_a, name_b = scenario_name(ev_a), scenario_name(ev_b)
    if name_a != name_b:
        raise InputError(f"runs of different scenarios: run A is {name_a!r}, run B is {name_b!r}; "
                         "align two runs of one scenario")
    given = {m: percent(v, f"threshold of {m}") for m, v in (thresholds or {}).items()}
    section = scenario_section(ev_a)
    chosen = thresholds_of(section["thresholds"], given)
    minimum = (section["min_ratio"] if min_throughput_ratio is None
               else positive(min_throughput_ratio, "--min-throughput-ratio"))
    names = metric_names(chosen, section["metrics"], metrics)
    rows = tuple(align_metric(n, ev_a.metrics.series(n), ev_b.metrics.series(n), chosen.get(n))
                 for n in names)
    rate = throughput(ev_a.metrics.series(THROUGHPUT), ev_b.metrics.series(THROUGHPUT), minimum)
    a, b = side_of(ev_a, "A"), side_of(ev_b, "B")
    warnings = [NOT_DETERMINISTIC.format(side=s.side) for s in (a, b) if not s.deterministic]
    if a.expected_steps and a.steps_reached < a.expected_steps:
        warnings.append(f"run A reached {a.steps_reached} of its {a.expected_steps} expected "
                        "steps: only those are compared")
    if not b.replayed_steps:
        warnings.append("run B replayed no rollouts: the runs trained on different samples, so "
                        "their curves differ by sampling as well as by numerics")
    verdict = judge_alignment(rows, rate, steps_b=b.steps_reached, expected=steps_expected(a),
                    warnings=warnings)
    return Alignment(a, b, rows, rate, verdict, now_iso())


def steps_expected(a: RunSide) -> int:
    """The steps run B must reach: those run A expected, else those it reached."""
    return a.expected_steps or a.steps_reached


def evidence_of(path: Path, side: str) -> Evidence:
    """A run directory's evidence, refused when it is none or logged no training step."""
    path = Path(path)
    if not is_run_directory(path):
        raise InputError(f"run {side}: {path} is not a run directory (no {RUN_FILES['run']}, "
                         f"{RUN_FILES['log']} or {RUN_FILES['metrics']})")
    evidence = gather(path.resolve())
    if not evidence.trained:
        raise InputError(f"run {side}: {path} logged no training step: nothing to align")
    return evidence


def scenario_name(ev: Evidence) -> str:
    return str(ev.run.get("scenario") or ev.scenario.get("name") or ev.path.parent.name)


def scenario_section(ev: Evidence) -> dict[str, Any]:
    """Run A's ``alignment:`` section, checked again (the resolved file may be edited by hand)."""
    where = f"{ev.path / RUN_FILES['params']}: alignment"
    data = ev.scenario.get("alignment") or {}
    if not isinstance(data, Mapping):
        raise InputError(f"{where}: must be a mapping")
    found = data.get("thresholds") or {}
    if not isinstance(found, Mapping):
        raise InputError(f"{where}.thresholds: must map metrics to percentages")
    ratio = data.get("min_throughput_ratio")
    return {"thresholds": {str(m): percent(v, f"{where}.thresholds.{m}") for m, v in found.items()},
            "metrics": [str(m) for m in data.get("metrics") or []],
            "min_ratio": None if ratio is None else positive(ratio, f"{where}.min_throughput_ratio")}


def side_of(ev: Evidence, side: str) -> RunSide:
    """One run as the alignment records it: its facts from run.json and its resolved params,
    redacted (they go into the record, the page and JUnit)."""
    run, params = redact_mapping(ev.run), redact_mapping(ev.scenario)
    settings = settings_of(params)
    settings.pop("overrides", None)  # shown whole, one row per key, below
    overrides = dict(str(o).partition("=")[::2] for o in params.get("overrides") or [])
    facts = {
        "run": {k: run.get(k) for k in ("profile", "launcher", "nodes", "devices_per_node",
                                         "started_at", "status")},
        "versions": _group(run.get("versions")), "commits": _group(run.get("commits")),
        "hardware": _group(run.get("hardware")),
        "machine": {"host": run.get("host"), "os": run.get("os"), "python": run.get("python"),
                    **{f"image {k}": v for k, v in _group(run.get("image")).items()
                       if k != "source"}},
        "conditions": _group(run.get("conditions")),
        "settings": {**settings, "deterministic": params.get("deterministic", False)},
        "env": _group(params.get("env")), "overrides": overrides,
    }
    verdict = run.get("verdict")
    return RunSide(side, str(ev.path), scenario_name(ev), str(run.get("run_id") or ev.path.name),
                   params.get("deterministic") is True, int(ev.metrics.last_step or 0),
                   ev.expected_steps,
                   str(verdict.get("status") if isinstance(verdict, Mapping) else verdict or ""),
                   tuple(ev.replayed_steps), {g: _plain(v) for g, v in facts.items()})


def _group(value: Any) -> dict[str, Any]:
    """A group of facts as recorded; anything but a mapping (a hand-edited file) as none."""
    return dict(value) if isinstance(value, Mapping) else {}


def _plain(values: Mapping[str, Any]) -> dict[str, Any]:
    """Scalars as they are, anything nested as its JSON text (one cell of the page each)."""
    return {str(k): v if v is None or isinstance(v, (str, int, float, bool))
            else json.dumps(v, sort_keys=True, default=str) for k, v in values.items()}


def _number_out(value: float | None) -> float | str | None:
    """JSON has no infinity: a non-finite number is written as its text (``inf``)."""
    return value if value is None or math.isfinite(value) else str(value)


def _number_in(value: Any) -> float | None:
    return None if value is None else float(value)


def _metric_dict(m: MetricAlignment) -> dict[str, Any]:
    return {"metric": m.metric, "threshold_pct": m.threshold, "status": m.status,
            "in_a": m.in_a, "in_b": m.in_b, "mae_pct": _number_out(m.mae),
            "max_error_pct": _number_out(m.max_error), "first_step_beyond": m.first_beyond,
            "why": m.why, "paired_test": m.paired.to_dict() if m.paired else None,
            "steps": [{"step": s, "a": _number_out(m.a[s]), "b": _number_out(m.b[s]),
                       "error_pct": _number_out(m.errors[s])} for s in m.steps]}


def _metric(d: Mapping[str, Any]) -> MetricAlignment:
    steps = d.get("steps") or []
    paired = d.get("paired_test")
    return MetricAlignment(
        d["metric"], d.get("threshold_pct"), bool(d.get("in_a")), bool(d.get("in_b")),
        a={int(s["step"]): float(s["a"]) for s in steps},
        b={int(s["step"]): float(s["b"]) for s in steps},
        errors={int(s["step"]): float(s["error_pct"]) for s in steps},
        mae=_number_in(d.get("mae_pct")), max_error=_number_in(d.get("max_error_pct")),
        first_beyond=d.get("first_step_beyond"), why=str(d.get("why") or ""),
        paired=PairedTest(int(paired["steps"]), int(paired["above"]), int(paired["below"]),
                          str(paired["note"])) if paired else None)


def _side_dict(s: RunSide) -> dict[str, Any]:
    return {"side": s.side, "path": s.path, "scenario": s.scenario, "run_id": s.run_id,
            "deterministic": s.deterministic, "steps_reached": s.steps_reached,
            "expected_steps": s.expected_steps, "verdict": s.verdict,
            "replayed_steps": list(s.replayed_steps), "facts": s.facts}


def _side(d: Mapping[str, Any]) -> RunSide:
    return RunSide(d["side"], d["path"], d["scenario"], d["run_id"], bool(d["deterministic"]),
                   int(d["steps_reached"]), d.get("expected_steps"), str(d.get("verdict") or ""),
                   tuple(d.get("replayed_steps") or ()), dict(d.get("facts") or {}))
