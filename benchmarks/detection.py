"""Detection power: does a bug inside verl turn the tiny GSPO run red, do unchanged runs stay green?

Runs a tiny scenario (default ``params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml``, rollouts replayed;
``--scenario params/gspo-tiny-live-1n1cpu-fsdp2-vllm.yaml`` generates them) through ``workbook
run``, one run at a time, ``--repeats`` times per fault loaded into verl itself
(``benchmarks/faults/verl_faults.py`` through ``VERL_USE_EXTERNAL_MODULES``; environment only,
so the scenario's settings are unchanged and its blessed baseline still applies) and several
times unchanged, then prints one line per run and, per fault, the verdicts over its repeats:

    detection 2026-12-01T09:12:00Z on host-1, params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml, 2 repeats
    fault          run  expected   verdict    exit  failing checks            caught  machine
    pg_loss_x2     1    regressed  regressed  1     actor/pg_loss vs ...      yes     others 0.31/2 ...
    ...
    pg_loss_x2     regressed, regressed: caught 2 of 2
    unchanged      passed, passed, passed: false alarms 0 of 3

A fault is caught when the run gets the expected verdict (a killed worker is a failed run, exit
3; a numerical, speed, sampling or reward bug is a regression, exit 1); an unchanged run that does
not pass is a false alarm. Each run's line ends with the machine's conditions it recorded
(run.json's ``conditions``: CPU other processes and the run used, load, the calibration time),
since a timing check's outcome depends on them. The rollout-side faults (``hot_sampling``,
``slow_gen``, ``half_reward``) change generated rollouts only: on a scenario that replays its
rollouts they are skipped, saying so; on the live scenario most of what catches them is its
comparisons, so they count once it has a blessed baseline. Everything is also written to
``detection.json`` in the runs root, with the date and host.

    .venv/bin/python benchmarks/detection.py [--runs DIR] [--only FAULT ...] [--unchanged N]
        [--scenario PARAMS] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
FAULTS_DIR = ROOT / "benchmarks" / "faults"
# fault, the verdict it must get, whether it needs generated (not replayed) rollouts
FAULTS = (
    ("pg_loss_x2", "regressed", False),
    ("ignore_clip", "regressed", False),
    ("slow_update", "regressed", False),
    ("kill_worker@3", "failed", False),
    ("crash@3", "failed", False),
    ("nan_loss@3", "regressed", False),
    ("hot_sampling", "regressed", True),
    ("slow_gen", "regressed", True),
    ("half_reward", "regressed", True),
)
UNCHANGED = "unchanged"


def fault_sets(fault: str) -> list[str]:
    """The ``-s`` overrides that load ``fault`` into verl (environment only)."""
    return [f"env.PYTHONPATH={FAULTS_DIR}", "env.VERL_USE_EXTERNAL_MODULES=verl_faults",
            f"env.WORKBOOK_FAULT={fault}"]


def replays(scenario: Path) -> bool:
    """Whether the scenario replays its rollouts from a dump (then nothing is generated)."""
    from workbook.scenario import load_scenario

    return bool(load_scenario(scenario, check_files=False).rollouts.replay)


def plan(only: list[str] | None, repeats: int, unchanged: int, *, generates: bool
         ) -> tuple[list[tuple[str, int, str]], list[str]]:
    """The runs to make, ``(fault or "unchanged", repeat, expected verdict)``, in order (each
    fault's repeats together, then the unchanged runs), and the faults skipped, with why."""
    runs: list[tuple[str, int, str]] = []
    skipped: list[str] = []
    for fault, expected, needs_generation in FAULTS:
        if only and fault not in only and fault.split("@")[0] not in only:
            continue
        if needs_generation and not generates:
            skipped.append(f"{fault}: the scenario replays its rollouts, so nothing it patches "
                           "runs; use a live scenario (--scenario params/gspo-tiny-live-"
                           "1n1cpu-fsdp2-vllm.yaml)")
            continue
        runs += [(fault, i, expected) for i in range(1, repeats + 1)]
    runs += [(UNCHANGED, i, "passed") for i in range(1, unchanged + 1)]
    return runs, skipped


def workbook_run(scenario: Path, sets: list[str], runs: Path) -> tuple[int, Path | None, float]:
    """One ``workbook run`` of ``scenario`` with ``-s sets``: its exit code, its run directory
    (None if it made none) and the seconds it took."""
    argv = [sys.executable, "-m", "workbook", "run", str(scenario), "--runs", str(runs), "--quiet"]
    for item in sets:
        argv += ["-s", item]
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    run_dir = Path(lines[-1]) if lines and Path(lines[-1]).is_dir() else None
    return done.returncode, run_dir, round(time.monotonic() - t0, 1)


def run(label: str, sets: list[str], runs: Path, scenario: Path) -> dict[str, Any]:
    code, run_dir, seconds = workbook_run(scenario, sets, runs)
    checks = read_json(run_dir / "checks.json") if run_dir else {}
    info = read_json(run_dir / "run.json") if run_dir else {}
    failing = [r["name"] for r in checks.get("rows", []) if r.get("status") in ("fail", "error")]
    return {"label": label, "exit": code, "run_dir": str(run_dir),
            "verdict": (checks.get("verdict") or {}).get("status", "none"),
            "failing": failing, "seconds": seconds, "conditions": info.get("conditions") or {}}


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def conditions_text(conditions: dict[str, Any]) -> str:
    """``others 0.31/2 cores, own 1.52, load 2.1, calibration 0.081 s`` (``-`` if none)."""
    if not conditions:
        return "-"
    parts = []
    if conditions.get("others_cores") is not None:
        parts.append(f"others {conditions['others_cores']:.2f}/{conditions.get('cpus', '?')} "
                     "cores")
    if conditions.get("run_cores") is not None:
        parts.append(f"own {conditions['run_cores']:.2f}")
    if conditions.get("steal_cores"):
        parts.append(f"steal {conditions['steal_cores']:.2f}")
    if conditions.get("load_1m") is not None:
        parts.append(f"load {conditions['load_1m']:.1f}")
    if conditions.get("calibration_s") is not None:
        parts.append(f"calibration {conditions['calibration_s']:.3g} s")
    return ", ".join(parts) or "-"


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per fault (and ``unchanged``): the expected verdict, the verdicts over its repeats, and
    how many were caught (for ``unchanged``: passed)."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = out.setdefault(row["fault"], {"expected": row["expected"], "verdicts": [],
                                              "caught": 0, "of": 0})
        entry["verdicts"].append(row["verdict"])
        entry["caught"] += bool(row["caught"])
        entry["of"] += 1
    return out


def summary_lines(found: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    for fault, entry in found.items():
        verdicts = ", ".join(entry["verdicts"])
        if fault == UNCHANGED:
            alarms = entry["of"] - entry["caught"]
            lines.append(f"{fault:<14} {verdicts}: false alarms {alarms} of {entry['of']}")
        else:
            lines.append(f"{fault:<14} {verdicts}: caught {entry['caught']} of {entry['of']} "
                         f"(expected {entry['expected']})")
    return lines


def header(scenario: Path, repeats: int, when: str, host: str) -> str:
    try:
        shown = scenario.relative_to(ROOT)
    except ValueError:
        shown = scenario
    return f"detection {when} on {host}, {shown}, {repeats} repeat{'s' * (repeats != 1)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, help="runs root (default: a new temp folder)")
    parser.add_argument("--only", nargs="*", help="faults to run (default: all)")
    parser.add_argument("--unchanged", type=int, default=None,
                        help="unchanged runs (default: --repeats, else 3)")
    parser.add_argument("--scenario", type=Path, default=SCENARIO,
                        help="scenario to run (default: the replayed tiny GSPO one; the rollout "
                             "faults need a live one)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="runs per fault, and unchanged runs unless --unchanged (default 1)")
    args = parser.parse_args()
    scenario = args.scenario.resolve()
    repeats = max(1, args.repeats or 1)
    unchanged = args.unchanged if args.unchanged is not None else (args.repeats or 3)
    runs = (args.runs or Path(tempfile.mkdtemp(prefix="wb-detection-"))).resolve()
    runs.mkdir(parents=True, exist_ok=True)
    when = datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    host = socket.gethostname()
    print(header(scenario, repeats, when, host), flush=True)
    planned, skipped = plan(args.only, repeats, unchanged, generates=not replays(scenario))
    for line in skipped:
        print(f"skipped {line}", flush=True)
    rows = []
    for fault, repeat, expected in planned:
        sets = [] if fault == UNCHANGED else fault_sets(fault)
        result = run(f"{fault} {repeat}", sets, runs, scenario)
        rows.append({**result, "fault": fault, "repeat": repeat, "expected": expected,
                     "caught": result["verdict"] == expected})
        print(f"... {fault} {repeat}: {result['verdict']} in {result['seconds']} s "
              f"({conditions_text(result['conditions'])})", flush=True)
    print()
    print(f"{'fault':<14} {'run':<4} {'expected':<10} {'verdict':<10} {'exit':<5} "
          f"{'failing checks':<48} {'caught':<7} machine")
    for row in rows:
        failing = ", ".join(row["failing"]) or "-"
        print(f"{row['fault']:<14} {row['repeat']:<4} {row['expected']:<10} {row['verdict']:<10} "
              f"{row['exit']!s:<5} {failing[:48]:<48} {'yes' if row['caught'] else 'NO':<7} "
              f"{conditions_text(row['conditions'])}")
    found = summary(rows)
    print()
    for line in summary_lines(found):
        print(line)
    faults = [r for r in rows if r["fault"] != UNCHANGED]
    alarms = sum(1 for r in rows if r["fault"] == UNCHANGED and not r["caught"])
    caught = sum(1 for r in faults if r["caught"])
    print(f"false alarms: {alarms} of {len(rows) - len(faults)} unchanged runs; "
          f"faults caught: {caught} of {len(faults)} runs")
    report = {"date": when, "host": host, "scenario": str(scenario), "repeats": repeats,
              "unchanged": unchanged, "skipped": skipped, "summary": found, "runs": rows}
    (runs / "detection.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"runs and detection.json: {runs}")
    return 0 if alarms == 0 and caught == len(faults) else 1


if __name__ == "__main__":
    sys.exit(main())
