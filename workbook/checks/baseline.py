"""Baseline files: reference values a run is compared with, and where they came from.

A baseline is JSON (or YAML) under ``params/baselines/<scenario>.<hardware>.json``::

    {"format": "verl-workbook-baseline/3",
     "scenario": "gspo-tiny-1n1cpu-fsdp2-vllm", "hardware": "cpu",
     "hardware_key": {"profile": "cpu", "device": "AMD EPYC", "count": 2},
     "settings": {"clip_ratio_high": 0.0004, "lr": 0.0001, ...},   # workbook.params.settings
     "provenance": {"created": ..., "source": "bless", "run_ids": [...], "workbook_version": ...,
                    "verl_version": ..., "verl_commit": ..., "image": ..., "cann_version": ...,
                    "packages": {...}, "tuning": {...}, "environment": {...},
                    "runs_differ": [{"kind", "name", "values": {run_id: ...}}],
                    "runs": [{"run_id", "started", "versions", "tuning", "env", ...}]},
     "metrics": {"timing_s/step": {
         "value": 12.1, "reduce": "mean", "window": [2, 5],      # mean of the runs' reduced values
         "sigma": 0.56, "n": 3,                                   # their standard deviation
         "series": {"1": 16.7, "2": 2.5, ...},                    # per step, mean over runs
         "series_sigma": {"1": 0.9, "2": 0.04, ...}}}}            # per step, their spread

The band a run's window statistic is judged with comes from ``sigma``; where the blessed runs
agree step by step, ``series`` and ``series_sigma`` give each step its own band instead (see
:mod:`workbook.checks.bands`). The hardware key and settings say what the baseline's numbers
are comparable with; the tuning and env in its provenance only say what its runs ran with
(settings recorded before tuning was split from them still hold tuning overrides, which
comparisons ignore). Format 1 files (no sigma, no key, no settings) and format 2 files (no
``series_sigma``: compared by the window statistic only) still load: committed baselines are.

Files are written by ``workbook bless`` or ``workbook baseline import``; nobody edits numbers by
hand. verl's Ascend baselines (``key:value`` text lines read by its ``check_npu.py``) load
directly too, their old key ``perf/max_memory_allocated_gb`` renamed as that script does.

What a file must be to be used (no merge-conflict markers, every line read, finite numbers in
the metric's range, no unknown keys, its provenance when it names the format) is
:mod:`workbook.checks.baseline_rules`; the same rules apply to reading, importing and writing, so
nothing is written that could not be read back.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.checks.baseline_rules import (
    FORMAT,
    FORMATS,
    IMPORTED,
    MAX_BYTES,
    conflict_lines,
    parse_ascend_lines,
    read_document,
    refuse,
)
from workbook.core.clock import now_iso
from workbook.core.layout import write_atomic
from workbook.core.quoting import short
from workbook.core.redaction import redact_mapping
from workbook.core.serialization import dump_yaml, load_yaml_text
from workbook.core.values import finite
from workbook.errors import BaselineError, InputError

__all__ = ["FORMAT", "FORMATS", "Baseline", "BaselineMetric", "import_ascend_text",
           "load_baseline", "read_baseline_text"]
# old name -> current name, as verl-ascend-recipe's check_npu.py maps it
ASCEND_RENAMES = {"perf/max_memory_allocated_gb": "actor/perf/max_memory_allocated_gb"}
# how check_npu.py reduces what its baselines hold (last step, or mean over steps 5-14)
ASCEND_REDUCTIONS = {
    "actor/perf/max_memory_allocated_gb": ("last", None),
    "perf/throughput": ("mean", (5, 14)),
    "timing_s/step": ("mean", (5, 14)),
    "critic/rewards/mean": ("mean", (5, 14)),
    "training/rollout_probs_diff_mean": ("mean", (5, 14)),
}


@dataclass
class BaselineMetric:
    """Reference data for one metric."""

    value: float | None = None
    reduce: str | None = None
    window: tuple[int, int] | None = None
    series: dict[int, float] = field(default_factory=dict)
    sigma: float | None = None  # standard deviation of the blessed runs' reduced values
    n: int | None = None        # how many runs
    # per step, the standard deviation of the blessed runs' values (empty in files before format 3)
    series_sigma: dict[int, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": finite(self.value)}
        if self.reduce:
            out["reduce"] = self.reduce
        if self.window:
            out["window"] = list(self.window)
        if self.sigma is not None:
            out["sigma"], out["n"] = self.sigma, self.n
        if self.series:
            out["series"] = _steps_out(self.series)
        if self.series_sigma:
            out["series_sigma"] = _steps_out(self.series_sigma)
        return out


@dataclass
class Baseline:
    """Reference values per metric plus provenance."""

    metrics: dict[str, BaselineMetric] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    scenario: str | None = None
    hardware: str | None = None
    path: Path | None = None
    hardware_key: dict[str, Any] | None = None  # workbook.provenance.hardware_key of its runs
    settings: dict[str, Any] | None = None      # workbook.params.settings of its runs
    conditions: dict[str, Any] | None = None    # workbook.checks.conditions.blessed_conditions

    def names(self) -> list[str]:
        return sorted(self.metrics)

    def value(self, metric: str) -> float | None:
        entry = self.metrics.get(metric)
        return None if entry is None else entry.value

    def to_dict(self) -> dict[str, Any]:
        """The file's document; it names the format only with a provenance to go with it (a
        file naming it must say where its numbers came from, see ``baseline_rules``)."""
        return {**({"format": FORMAT} if self.provenance else {}),
                "scenario": self.scenario, "hardware": self.hardware,
                "hardware_key": self.hardware_key, "settings": self.settings,
                "provenance": self.provenance,
                **({"conditions": self.conditions} if self.conditions else {}),
                "metrics": {k: self.metrics[k].to_dict() for k in sorted(self.metrics)}}

    def save(self, path: Path) -> Path:
        """Write as JSON (or YAML for a .yaml/.yml name), atomically; BaselineError, and nothing
        written, when loading the file back would refuse it."""
        path = Path(path)
        if path.suffix == ".txt":
            raise BaselineError(f"{path}: a .txt baseline is read as verl's key:value text; write "
                                "the baseline as .json, .yaml or .yml")
        data = self.to_dict()
        # to_dict writes a non-finite value as null (not logged); a reference value must be real
        read_document({**data, "metrics": {k: {**v, "value": self.metrics[k].value}
                                           for k, v in data["metrics"].items()}},
                      f"refusing to write baseline {path}", from_file=True)
        # a baseline is committed: its runs' env values and settings are redacted like every
        # file that leaves a run (the metrics are numbers under the names the checks use)
        data = {k: v if k == "metrics" else redact_mapping(v) for k, v in data.items()}
        if path.suffix in (".yaml", ".yml"):
            text = dump_yaml(data)
        else:
            text = json.dumps(data, indent=2) + "\n"
        if len(text) > MAX_BYTES:  # characters <= bytes: refused before encoding
            raise BaselineError(f"refusing to write baseline {path}: {len(text):,} characters, "
                                f"more than a baseline is read ({MAX_BYTES:,} bytes); bless "
                                "fewer steps or metrics")
        self.path = path
        return write_atomic(path, text)


def read_baseline_text(path: Path | str) -> str:
    """A baseline file's text: a regular file of at most ``MAX_BYTES``, UTF-8; BaselineError if not.

    Never opens a FIFO or a device (it could block forever or never end).
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise BaselineError(f"baseline not found: {path}")
    if not path.is_file():
        raise BaselineError(f"baseline {path} is not a regular file")
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise BaselineError(f"baseline {path} is {size:,} bytes, more than a baseline's "
                                f"{MAX_BYTES:,}; not a baseline")
        raw = path.read_bytes()
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise BaselineError(f"baseline {path}: line {line}: not UTF-8 text (byte "
                            f"0x{raw[exc.start]:02x} at offset {exc.start})") from None


def load_baseline(path: Path | str) -> Baseline:
    """Read a baseline (JSON, YAML, or verl's Ascend ``key:value`` text); BaselineError, naming
    the line or field, when it is missing, unreadable or cannot be right (a file naming the
    workbook's format without its provenance included)."""
    path = Path(path).expanduser()
    text = read_baseline_text(path)
    if path.suffix == ".txt":
        return import_ascend_text(text, source=path)
    markers = conflict_lines(text)
    if markers:
        raise refuse(f"baseline {path}", markers)
    try:
        is_yaml = path.suffix in (".yaml", ".yml")
        data = load_yaml_text(text, str(path)) if is_yaml else json.loads(
            text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"baseline {path} is not valid JSON: line {exc.lineno}: "
                            f"{exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # an int of 4,300+ digits; nesting too deep
        raise BaselineError(f"baseline {path} is not a baseline: {short(str(exc))}") from None
    except BaselineError as exc:  # a duplicate key
        raise BaselineError(f"baseline {path}: {exc.message}") from None
    except InputError as exc:
        raise BaselineError(exc.message) from None
    baseline = baseline_from_dict(data, f"baseline {path}", from_file=True)
    baseline.path = path
    return baseline


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BaselineError(f"duplicate key {short(key)} in one JSON object; which one is "
                                "meant?")
        out[key] = value
    return out


def baseline_from_dict(data: Any, where: str = "baseline", *, from_file: bool = False) -> Baseline:
    """A :class:`Baseline` from its JSON/YAML document; BaselineError listing every problem
    (``from_file``: see :func:`workbook.checks.baseline_rules.read_document`)."""
    doc = read_document(data, where, from_file=from_file)
    return Baseline({name: BaselineMetric(**dict(entry)) for name, entry in doc.metrics.items()},
                    dict(doc.provenance or {}), doc.scenario, doc.hardware,
                    hardware_key=doc.hardware_key or None, settings=doc.settings or None,
                    conditions=data.get("conditions") or None)


def import_ascend_text(text: str, *, source: Path | str | None = None,
                       hardware: str | None = None, scenario: str | None = None,
                       origin: str | None = None) -> Baseline:
    """Parse verl's Ascend nightly baseline (``key:value`` lines) into a :class:`Baseline`.

    Values are the reduced numbers ``check_npu.py`` compares against (memory at the last step,
    the others a mean over steps 5-14); the old memory key is renamed. ``origin`` records where
    the text came from upstream (repository, commit, path). Every line must be read (see
    :func:`workbook.checks.baseline_rules.parse_ascend_lines`): BaselineError naming each that
    is not.
    """
    where = f"baseline {source}" if source else "baseline text"
    values = {line.key: line.value for line in parse_ascend_lines(text, where)}
    for old, new in ASCEND_RENAMES.items():
        if old in values:
            value = values.pop(old)
            values.setdefault(new, value)
    if not values:
        raise BaselineError(f"{source or 'baseline text'}: no `key:value` lines found")
    metrics = {}
    for key, value in values.items():
        reduce, window = ASCEND_REDUCTIONS.get(key, (None, None))
        metrics[key] = BaselineMetric(value=value, reduce=reduce, window=window)
    provenance: dict[str, Any] = {
        "source": IMPORTED, "created": now_iso(),
        "imported_from": str(source) if source else None, "origin": origin,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "note": "imported from verl's Ascend nightly baseline; it records no versions or run ids",
    }
    if hardware is None and source is not None:
        # verl-ascend-recipe keeps baselines under baseline/<a2|a3>/nightly_log/...
        parts = [p.lower() for p in Path(source).parts]
        hardware = next((p for p in parts if p in ("a2", "a3")), None)
    baseline = Baseline(metrics, provenance, scenario, hardware)
    baseline.path = Path(source) if source else None
    return baseline


def _steps_out(series: dict[int, float]) -> dict[str, float | None]:
    return {str(s): finite(v) for s, v in sorted(series.items())}
