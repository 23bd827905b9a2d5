"""Which timing measure holds on a shared machine: run-to-run spread, idle and beside a competitor.

Runs the tiny GSPO scenario unchanged N times on an idle machine and N times beside a competing
CPU-bound process (``--competitors K`` busy loops, each one core), and the ``slow_update`` fault
N times idle, one run at a time. For each run it prints the timing metrics the checks compare
(window means of ``timing_s/step``, ``timing_s/update_actor``, ``timing_s/gen``) and the machine's
conditions the run recorded (``run.json``'s ``conditions``: CPU others used, the run's own CPU,
load, steal, the calibration workload); then, per measure, the spread of the unchanged runs
(coefficient of variation, idle and loaded) and how far the fault moves it, for each candidate:

    raw                 the wall-clock timing as verl logs it
    per calibration     timing / calibration_s (the CPU's speed at the time)
    per own share       timing * run_cores / cpus (the CPU the run got, not the wall clock)

    .venv/bin/python benchmarks/timing_noise.py [--repeats N] [--competitors K] [--runs DIR]

The figures are written to ``timing_noise.json`` in the runs root.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from detection import read_json, workbook_run  # benchmarks/detection.py: one `workbook run`

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
FAULTS_DIR = ROOT / "benchmarks" / "faults"
METRICS = ("timing_s/step", "timing_s/update_actor", "timing_s/gen")
WINDOW = (2, 4)  # the scenario's checks window: step 1 carries start-up
BUSY = "while True: pass"


def one_run(label: str, sets: list[str], runs: Path) -> dict[str, Any]:
    code, run_dir, seconds = workbook_run(SCENARIO, sets, runs)
    info = read_json(run_dir / "run.json") if run_dir else {}
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()
            ] if run_dir and (run_dir / "metrics.jsonl").is_file() else []
    means = {}
    for name in METRICS:
        values = [r["data"][name] for r in rows
                  if WINDOW[0] <= r.get("step", 0) <= WINDOW[1] and name in r.get("data", {})]
        means[name] = statistics.fmean(values) if values else None
    return {"label": label, "exit": code, "seconds": seconds,
            "run_dir": str(run_dir), "verdict": (info.get("verdict") or {}).get("status"),
            "conditions": info.get("conditions") or {}, "means": means}


def candidates(result: dict[str, Any], metric: str) -> dict[str, float | None]:
    value, c = result["means"].get(metric), result["conditions"]
    if value is None:
        return {"raw": None, "per calibration": None, "per own share": None}
    calibration, own, cpus = c.get("calibration_s"), c.get("run_cores"), c.get("cpus")
    return {"raw": value,
            "per calibration": value / calibration if calibration else None,
            "per own share": value * own / cpus if own and cpus else None}


def spread(values: list[float | None]) -> str:
    found = [v for v in values if v is not None]
    if len(found) < 2:
        return "-"
    mean = statistics.fmean(found)
    return f"mean {mean:.4g}, cv {statistics.stdev(found) / mean:.1%} (n={len(found)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--competitors", type=int, default=1, help="busy loops beside the runs")
    parser.add_argument("--runs", type=Path, help="runs root (default: a new temp folder)")
    parser.add_argument("--skip", nargs="*", default=[], choices=("idle", "loaded", "fault"))
    args = parser.parse_args()
    runs = (args.runs or Path(tempfile.mkdtemp(prefix="wb-timing-"))).resolve()
    groups: dict[str, list[dict[str, Any]]] = {"idle": [], "loaded": [], "fault": []}
    fault = [f"env.PYTHONPATH={FAULTS_DIR}", "env.VERL_USE_EXTERNAL_MODULES=verl_faults",
             "env.WORKBOOK_FAULT=slow_update"]
    for i in range(1, args.repeats + 1):
        if "idle" not in args.skip:
            groups["idle"].append(one_run(f"unchanged {i}", [], runs))
        if "loaded" not in args.skip:
            busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.competitors)]
            try:
                groups["loaded"].append(one_run(f"loaded {i}", [], runs))
            finally:
                for proc in busy:
                    proc.kill()
                    proc.wait()
        if "fault" not in args.skip:
            groups["fault"].append(one_run(f"slow_update {i}", fault, runs))
        for found in groups.values():
            if found and found[-1]["label"].endswith(str(i)):
                last = found[-1]
                print(f"... {last['label']}: {last['verdict']} in {last['seconds']} s, "
                      f"{json.dumps(last['means'])}, {json.dumps(last['conditions'])}", flush=True)
    for metric in METRICS:
        print(f"\n{metric}")
        for measure in ("raw", "per calibration", "per own share"):
            cells = {g: spread([candidates(r, metric)[measure] for r in found])
                     for g, found in groups.items()}
            print(f"  {measure:16s} idle: {cells['idle']}; loaded: {cells['loaded']}; "
                  f"slow_update: {cells['fault']}")
    (runs / "timing_noise.json").write_text(json.dumps(groups, indent=1))
    print(f"\n{runs / 'timing_noise.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
