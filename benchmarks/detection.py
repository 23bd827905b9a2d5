"""Detection power: does a bug inside verl turn the tiny GSPO run red, do unchanged runs stay green?

Runs ``params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml`` through ``workbook run``, one run at a time,
once per fault loaded into verl itself (``benchmarks/faults/verl_faults.py`` through
``VERL_USE_EXTERNAL_MODULES``; environment only, so the scenario's settings are unchanged and its
blessed baseline still applies) and several times unchanged, then prints a table:

    fault           expected   verdict    exit  failing checks                      caught
    pg_loss_x2      regressed  regressed  1     actor/pg_loss vs baseline, ...      yes
    ...
    unchanged 1     passed     passed     0     -                                   yes
    false alarms: 0 of 3 unchanged runs; faults caught: 5 of 5

A fault is caught when the run gets the expected verdict (a killed worker is a failed run, exit
3; a numerical or speed bug is a regression, exit 1); an unchanged run that does not pass is a
false alarm. The figures are also written to ``detection.json`` in the runs root.

    .venv/bin/python benchmarks/detection.py [--runs DIR] [--only FAULT ...] [--unchanged N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
FAULTS_DIR = ROOT / "benchmarks" / "faults"
FAULTS = (  # fault, the verdict it must get
    ("pg_loss_x2", "regressed"),
    ("ignore_clip", "regressed"),
    ("slow_update", "regressed"),
    ("kill_worker@3", "failed"),
    ("crash@3", "failed"),
    ("nan_loss@3", "regressed"),
)


def fault_sets(fault: str) -> list[str]:
    """The ``-s`` overrides that load ``fault`` into verl (environment only)."""
    return [f"env.PYTHONPATH={FAULTS_DIR}", "env.VERL_USE_EXTERNAL_MODULES=verl_faults",
            f"env.WORKBOOK_FAULT={fault}"]


def run(label: str, sets: list[str], runs: Path) -> dict[str, object]:
    argv = [sys.executable, "-m", "workbook", "run", str(SCENARIO), "--runs", str(runs), "--quiet"]
    for item in sets:
        argv += ["-s", item]
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    run_dir = Path(lines[-1]) if lines and Path(lines[-1]).is_dir() else None
    checks = json.loads((run_dir / "checks.json").read_text()) if run_dir and (
        run_dir / "checks.json").is_file() else {}
    failing = [r["name"] for r in checks.get("rows", []) if r.get("status") in ("fail", "error")]
    return {"label": label, "exit": done.returncode, "run_dir": str(run_dir),
            "verdict": (checks.get("verdict") or {}).get("status", "none"),
            "failing": failing, "seconds": round(time.monotonic() - t0, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, help="runs root (default: a new temp folder)")
    parser.add_argument("--only", nargs="*", help="faults to run (default: all)")
    parser.add_argument("--unchanged", type=int, default=3, help="unchanged runs (default 3)")
    args = parser.parse_args()
    runs = (args.runs or Path(tempfile.mkdtemp(prefix="wb-detection-"))).resolve()
    rows = []
    for fault, expected in FAULTS:
        if args.only and fault not in args.only and fault.split("@")[0] not in args.only:
            continue
        result = run(fault, fault_sets(fault), runs)
        rows.append({**result, "expected": expected, "caught": result["verdict"] == expected})
        print(f"... {fault}: {result['verdict']} in {result['seconds']} s", flush=True)
    for i in range(1, args.unchanged + 1):
        result = run(f"unchanged {i}", [], runs)
        rows.append({**result, "expected": "passed", "caught": result["verdict"] == "passed"})
        print(f"... unchanged {i}: {result['verdict']} in {result['seconds']} s", flush=True)
    print()
    print(f"{'fault':<15} {'expected':<10} {'verdict':<10} {'exit':<5} {'failing checks':<60} caught")
    for row in rows:
        failing = ", ".join(row["failing"]) or "-"  # type: ignore[arg-type]
        print(f"{row['label']:<15} {row['expected']:<10} {row['verdict']:<10} {row['exit']!s:<5} "
              f"{failing[:60]:<60} {'yes' if row['caught'] else 'NO'}")
    faults = [r for r in rows if not str(r["label"]).startswith("unchanged")]
    unchanged = [r for r in rows if str(r["label"]).startswith("unchanged")]
    alarms = sum(1 for r in unchanged if not r["caught"])
    caught = sum(1 for r in faults if r["caught"])
    print(f"false alarms: {alarms} of {len(unchanged)} unchanged runs; "
          f"faults caught: {caught} of {len(faults)}")
    (runs / "detection.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(f"runs and detection.json: {runs}")
    return 0 if alarms == 0 and caught == len(faults) else 1


if __name__ == "__main__":
    sys.exit(main())
