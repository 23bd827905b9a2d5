"""Hand-made verl console logs, JSONL and run directories for the checks tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workbook.checks.evidence import Evidence
from workbook.core.serialization import dump_yaml
from workbook.metrics.model import RunMetrics

DATA = Path(__file__).parent / "data"
Series = dict[str, dict[int, float]]


def console_log(series: Series) -> str:
    """verl's console lines (``step:N - key:value - ...``) as the TaskRunner actor prints them."""
    steps = sorted({s for values in series.values() for s in values})
    lines = ["(TaskRunner pid=4242) Training Progress:   0%|          | 0/15"]
    for step in steps:
        pairs = [f"{name}:np.float64({values[step]!r})" if i % 2 else f"{name}:{values[step]!r}"
                 for i, (name, values) in enumerate(sorted(series.items())) if step in values]
        lines.append(f"(TaskRunner pid=4242) step:{step} - " + " - ".join(pairs))
    return "\n".join(lines) + "\n"


def jsonl(series: Series) -> str:
    steps = sorted({s for values in series.values() for s in values})
    return "".join(json.dumps({"step": s, "data": {n: v[s] for n, v in series.items() if s in v}})
                   + "\n" for s in steps)


def steady(names: dict[str, float], steps: range = range(1, 16)) -> Series:
    """Every metric constant at the given value for every step."""
    return {name: {s: value for s in steps} for name, value in names.items()}


def write_run(root: Path, series: Series, *, run_id: str = "20261129T000000Z-000001",
              scenario: str = "gspo-handmade", status: str | None = "succeeded",
              exit_code: int | None = 0, checks: dict[str, Any] | None = None,
              versions: dict[str, str] | None = None, diagnosis: dict[str, Any] | None = None,
              log: str | None = None, params_dir: Path | None = None,
              settings: dict[str, Any] | None = None) -> Path:
    """Write ``<root>/runs/<scenario>/<run_id>/`` with metrics.jsonl, run.log, run.json, params."""
    run = root / "runs" / scenario / run_id
    run.mkdir(parents=True)
    if series:
        (run / "metrics.jsonl").write_text(jsonl(series))
    (run / "run.log").write_text(log if log is not None else "starting verl\n")
    info: dict[str, Any] = {"status": status, "exit_code": exit_code, "host": "handmade",
                            "hardware": {"machine": "x86_64", "cpu": "Test CPU", "cpus": 2},
                            "commits": {"verl": "abc123", "workbook": "def456"},
                            "versions": versions or {"verl": "0.9.1", "torch": "2.13.0"}}
    if diagnosis:
        info["diagnosis"] = diagnosis
    (run / "run.json").write_text(json.dumps(info))
    params: dict[str, Any] = {"name": scenario, "profile": "cpu", "lr": 1e-4,
                              "clip_ratio_high": 4e-4, **(settings or {})}
    if params_dir is not None:
        params["params_dir"] = str(params_dir)
    if checks is not None:
        params["checks"] = checks
    (run / "params.resolved.yaml").write_text(dump_yaml(params))
    return run


def metrics_of(series: Series) -> RunMetrics:
    run = RunMetrics()
    for name, values in series.items():
        for step, value in values.items():
            run.put(step, name, value, "test")
    return run


SUCCEEDED = {"status": "succeeded", "category": "none", "summary": "Succeeded"}


def evidence_of(series: Series, *, run: dict[str, Any] | None = None,
                diagnosis: dict[str, Any] | None = None, expected_steps: int | None = None,
                scenario: dict[str, Any] | None = None, replayed: list[int] | None = None
                ) -> Evidence:
    """Evidence of a run that logged ``series`` (a succeeded process unless told otherwise)."""
    metrics = metrics_of(series)
    found = dict(diagnosis or SUCCEEDED)
    found.setdefault("last_step", metrics.last_step)
    found["replayed_steps"] = list(replayed or [])
    record = {"status": "succeeded", "exit_code": 0} if run is None else run
    return Evidence(Path("handmade"), metrics, found, record, scenario or {},
                    expected_steps, "the scenario" if expected_steps else "")
