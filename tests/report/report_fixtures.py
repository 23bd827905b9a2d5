"""Hand-made run directories for report tests, built from the small committed fixtures in data/.

``make_run(kind)`` writes a run directory the way the pipeline does (run.json, checks.json,
command files, params, metrics, log) for a passed, regressed or failed GSPO run, or a PPO run.
The metrics are small JSONL files in ``data/`` shaped like verl 0.9.1's file logger output.
"""

from __future__ import annotations

import functools
import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from workbook import provenance
from workbook.metrics.reading import diagnose

DATA = Path(__file__).parent / "data"
PASS_ROWS = [
    {
        "name": "run completed",
        "kind": "run",
        "status": "pass",
        "value": 0.0,
        "expected": "succeeded, exit code 0",
        "message": "",
    },
    {
        "name": "actor/pg_loss finite",
        "kind": "finite",
        "metric": "actor/pg_loss",
        "status": "pass",
        "value": 4.0,
        "expected": "finite at every step",
        "message": "",
    },
    {
        "name": "timing_s/step vs baseline",
        "kind": "baseline",
        "metric": "timing_s/step",
        "status": "pass",
        "value": 5.0,
        "expected": "<= 6.3",
        "message": "",
        "baseline": 6.0,
        "lower": None,
        "upper": 6.3,
        "window": [2, 4],
    },
]
REGRESSED_ROW = {
    "name": "actor/pg_clipfrac vs baseline",
    "kind": "baseline",
    "metric": "actor/pg_clipfrac",
    "status": "fail",
    "value": 0.125,
    "expected": "0.2 .. 0.3",
    "message": "0.125 below 0.2",
    "baseline": 0.25,
    "lower": 0.2,
    "upper": 0.3,
    "window": [2, 4],
}


@functools.cache
def this_host() -> dict[str, Any]:
    """The provenance a real run records on this machine, collected once (it runs git and reads
    package metadata)."""
    return provenance.collect()


def write_run(
    root: Path,
    kind: str,
    *,
    scenario: str = "gspo-tiny-1n1cpu-fsdp2-vllm",
    started: datetime | None = None,
    run_id: str | None = None,
) -> Path:
    """A run directory of ``kind`` passed|regressed|failed|ppo under ``root/scenario/``."""
    started = started or datetime(2026, 11, 29, 18, 0, tzinfo=timezone.utc)
    run_id = run_id or started.strftime("%Y%m%dT%H%M%SZ") + f"-{kind[:6]:0<6}"
    path = root / scenario / run_id
    path.mkdir(parents=True)
    failed = kind == "failed"
    if failed:
        shutil.copyfile(DATA / "failed-run.log", path / "run.log")
    else:
        source = DATA / ("ppo-metrics.jsonl" if kind == "ppo" else "gspo-metrics.jsonl")
        shutil.copyfile(source, path / "metrics.jsonl")
        (path / "run.log").write_text("step:1 - actor/pg_loss:0.011\n", encoding="utf-8")
    ended = started + timedelta(seconds=121)
    run: dict[str, Any] = {
        "run_id": run_id,
        "scenario": scenario,
        "status": "failed" if failed else "succeeded",
        "exit_code": 1 if failed else 0,
        "started_at": started.isoformat().replace("+00:00", "Z"),
        "ended_at": ended.isoformat().replace("+00:00", "Z"),
        "wall_time_s": 121.0,
        "launcher": "local",
        "profile": "cpu",
        "nodes": 1,
        "devices_per_node": 1,
        "expected_steps": 4,
        "clip_ratio_low": 0.0003,
        "clip_ratio_high": 0.0004,
        "adv_estimator": "grpo",
        "policy_loss": "gspo",
        **this_host(),
    }
    if failed:
        run["diagnosis"] = diagnose(path / "run.log", exit_code=1).to_dict()
    rows = [dict(r) for r in PASS_ROWS] + ([dict(REGRESSED_ROW)] if kind == "regressed" else [])
    if failed:
        rows[0].update(status="fail", value=1.0, message="run failed with exit code 1")
        verdict = {
            "status": "failed",
            "reason": "run failed with exit code 1: " + run["diagnosis"]["summary"],
        }
    elif kind == "regressed":
        verdict = {
            "status": "regressed",
            "reason": "1 failed of 3 checks; first: actor/pg_clipfrac vs baseline",
        }
    else:
        verdict = {"status": "passed", "reason": "all 3 checks passed"}
    run["verdict"] = verdict
    (path / "run.json").write_text(json.dumps(run, indent=2), encoding="utf-8")
    (path / "checks.json").write_text(
        json.dumps({"verdict": verdict, "rows": rows}, indent=2), encoding="utf-8"
    )
    argv = [
        "python3",
        "-m",
        "verl.trainer.main_ppo",
        "algorithm.adv_estimator=grpo",
        "actor_rollout_ref.actor.clip_ratio_low=0.0003",
        "trainer.logger=['console','file']",
    ]
    (path / "command.json").write_text(
        json.dumps({"argv": argv, "env": {"WANDB_MODE": "disabled"}}), encoding="utf-8"
    )
    (path / "command.sh").write_text(
        "#!/bin/sh\nWANDB_MODE=disabled " + " ".join(argv) + "\n", encoding="utf-8"
    )
    (path / "params.resolved.yaml").write_text(
        "name: gspo-tiny\nprofile: cpu\nclip_ratio_low: 0.0003\n", encoding="utf-8"
    )
    return path
