"""Cost of a sweep: a 3-point clip-ratio sweep of the tiny CPU scenario against 3 single runs.

Runs, one after another on this machine, the tiny GSPO scenario three times with ``workbook run``
(clip_ratio_high 4e-4, 4e-3, 4e-2; 3 steps each), then the same three settings as one
``workbook sweep --parallel N`` (one local Ray cluster for every point, ``N`` points at a time,
the scenario's pinned rollouts replayed in all), and prints wall times and the ratio.

Target: the sweep takes <= 0.8 x the three single runs.

    .venv/bin/python benchmarks/sweep.py [--parallel 2] [--runs DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
VALUES = ("4e-4", "4e-3", "4e-2")
STEPS = "total_training_steps=3"


def timed(argv: list[str]) -> tuple[float, int]:
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "workbook", *argv], capture_output=True,
                          text=True, check=False)
    return time.monotonic() - t0, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--runs", type=Path)
    args = parser.parse_args()
    runs = (args.runs or Path(tempfile.mkdtemp(prefix="wb-sweep-bench-"))).resolve()
    singles = []
    for value in VALUES:
        seconds, code = timed(["run", str(SCENARIO), "--runs", str(runs / "singles"), "--quiet",
                               "-s", f"clip_ratio_high={value}", "-s", STEPS])
        singles.append(seconds)
        print(f"single run clip_ratio_high={value}: {seconds:.0f} s (exit {code})", flush=True)
    sweep, code = timed(["sweep", str(SCENARIO), "--grid", f"clip_ratio_high={','.join(VALUES)}",
                         "-s", STEPS, "--parallel", str(args.parallel), "--runs",
                         str(runs / "sweep")])
    print(f"sweep of 3 points (--parallel {args.parallel}): {sweep:.0f} s (exit {code})")
    ratio = sweep / sum(singles)
    print(f"3 single runs: {sum(singles):.0f} s; sweep / singles = {ratio:.2f} (target <= 0.80)")
    return 0 if ratio <= 0.8 else 1


if __name__ == "__main__":
    sys.exit(main())
