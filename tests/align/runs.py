"""Run directories for the alignment tests, built from real verl output.

``GSPO`` is verl 0.9.1's file logger on the tiny GSPO scenario (CPU, 4 steps); ``NPU_GRPO`` a
GRPO run on Ascend (9 steps) whose policy loss crosses zero, as GRPO's does by construction.
``records(source)`` reads one as file-logger records; ``changed`` alters one metric of them;
``write_run`` writes a run directory the way a closed run leaves it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbook.core.serialization import dump_yaml
from workbook.metrics.loading import load_metrics

TESTS = Path(__file__).resolve().parents[1]
GSPO = TESTS / "profiles" / "data" / "gspo_cpu_metrics.jsonl"
NPU_GRPO = TESTS / "data" / "verl_logs" / "04_npu-ascend-grpo-sync-agentloop.log"
SCENARIO = "gspo-tiny-1n1cpu-fsdp2-vllm"
VERSIONS = {"verl": "0.9.1", "torch": "2.13.0+cpu", "transformers": "5.10.4"}
Record = dict[str, Any]


def records(source: Path = GSPO) -> list[Record]:
    """The training steps of a real run as file-logger records (step 0, validation only, left
    out)."""
    return [r for r in load_metrics(source).records() if r["step"] != 0]


def changed(rows: list[Record], metric: str, how: Callable[[int, float], float | None]) -> list[Record]:
    """A copy with ``metric`` at each step replaced by ``how(step, value)`` (None drops it)."""
    out = []
    for row in rows:
        data = dict(row["data"])
        if metric in data:
            value = how(row["step"], data[metric])
            if value is None:
                del data[metric]
            else:
                data[metric] = value
        out.append({"step": row["step"], "data": data})
    return out


def scale_of(rows: list[Record], metric: str) -> float:
    """The mean |value| of a metric: the scale the alignment measures errors in."""
    values = [abs(r["data"][metric]) for r in rows if metric in r["data"]]
    return sum(values) / len(values)


def write_run(root: Path, name: str, rows: list[Record], *, scenario: str = SCENARIO,
              expected_steps: int | None = 4, deterministic: bool | None = None,
              run: dict[str, Any] | None = None, params: dict[str, Any] | None = None,
              report: bool = True) -> Path:
    """``root/<scenario>/<name>/`` with metrics.jsonl, run.json, params.resolved.yaml and (when
    ``report``) a report.html to link to."""
    path = root / scenario / name
    path.mkdir(parents=True)
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                        encoding="utf-8")
    recorded = {"run_id": name, "scenario": scenario, "status": "succeeded", "exit_code": 0,
                "expected_steps": expected_steps, "runs_root": str(root), "profile": "cpu",
                "launcher": "local", "host": "vm", "versions": VERSIONS,
                "commits": {"workbook": "1111111"},
                "hardware": {"machine": "x86_64", "cpu": "AMD EPYC", "cpus": 2},
                "verdict": {"status": "passed", "reason": "all checks passed"}, **(run or {})}
    (path / "run.json").write_text(json.dumps(recorded, indent=2), encoding="utf-8")
    resolved: dict[str, Any] = {"name": scenario, "profile": "cpu", "lr": 0.0001,
                                "total_training_steps": expected_steps, "env": {},
                                "overrides": [], **(params or {})}
    if deterministic is not None:
        resolved["deterministic"] = deterministic
    (path / "params.resolved.yaml").write_text(dump_yaml(resolved), encoding="utf-8")
    if report:
        (path / "report.html").write_text("<html><body>report</body></html>", encoding="utf-8")
    return path
