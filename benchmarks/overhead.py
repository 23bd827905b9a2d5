"""Wall time of `workbook run` on the tiny CPU scenario against the same verl command run bare.

Prints both times and their ratio (target: at most 1.15). The bare run uses the exact argv and
env `workbook plan` gives, in a fresh run directory, so only the workbook's own work differs:
validation, the notebook (papermill), live parsing, checks, plots and report rendering. It also
splits the workbook's own time into what comes before verl starts (validation, the kernel,
preparing the run) and after verl ended (recording, judging, the report, the index), from the
run's own ``started_at``/``ended_at`` (whole seconds).

    .venv/bin/python benchmarks/overhead.py [--scenario params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    t0 = time.monotonic()
    rc = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT).returncode
    return time.monotonic() - t0, rc


def own_time(runs: Path, t0: float, t1: float) -> tuple[float, float]:
    """Seconds of `workbook run` before verl started and after it ended (wall clock)."""
    (record,) = runs.glob("*/*/run.json")
    info = json.loads(record.read_text())

    def at(text: str) -> float:  # run.json's times: ISO 8601, UTC
        found = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return (found if found.tzinfo else found.replace(tzinfo=timezone.utc)).timestamp()

    return at(info["started_at"]) - t0, t1 - at(info["ended_at"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=str(REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"))
    ap.add_argument("--repeats", type=int, default=1, help="workbook runs after the one bare run")
    ap.add_argument("--no-bare", action="store_true",
                    help="skip the bare run: only the workbook's own time before and after verl")
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="wb-overhead-") as tmp:
        env = dict(os.environ, WORKBOOK_RUNS=str(Path(tmp) / "runs"))
        wb = [sys.executable, "-m", "workbook"]
        subprocess.run([*wb, "assets"], env=env, check=True, stdout=subprocess.DEVNULL)
        bare_dir = Path(tmp) / "bare" / "20000101T000000Z-bare00"
        bare_dir.mkdir(parents=True)
        plan = json.loads(subprocess.run([*wb, "plan", args.scenario, "--format", "json", "--run-dir", str(bare_dir)],
                                         env=env, check=True, capture_output=True, text=True).stdout)
        bare_env = dict(env)
        for key, value in plan["env"].items():
            bare_env[key] = f"{value}{os.pathsep}{env['PYTHONPATH']}" if key == "PYTHONPATH" and env.get("PYTHONPATH") else value
        bare_s, bare_rc = (float("nan"), 0) if args.no_bare else timed(plan["argv"], bare_env, bare_dir)
        print(f"bare verl command: {bare_s:7.1f} s (exit {bare_rc})", flush=True)
        ok = bare_rc == 0
        for repeat in range(args.repeats):
            runs = Path(tmp) / f"runs-{repeat}"
            t0 = time.time()
            wb_s, wb_rc = timed([*wb, "run", args.scenario, "--quiet"], dict(env, WORKBOOK_RUNS=str(runs)), REPO)
            before, after = own_time(runs, t0, time.time())
            print(f"workbook run:      {wb_s:7.1f} s (exit {wb_rc}); ratio {wb_s / bare_s:.3f} (target <= 1.15); "
                  f"own time before verl {before:.0f} s, after verl {after:.0f} s", flush=True)
            ok = ok and wb_rc in (0, 1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
