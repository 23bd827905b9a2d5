"""Wall time of `workbook run` on the tiny CPU scenario against the same verl command run bare.

Prints both times and their ratio (target: at most 1.15). The bare run uses the exact argv and
env `workbook plan` gives, in a fresh run directory, so only the workbook's own work differs:
validation, the notebook (papermill), live parsing, checks, plots and report rendering.

    .venv/bin/python benchmarks/overhead.py [--scenario params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    t0 = time.monotonic()
    rc = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT).returncode
    return time.monotonic() - t0, rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=str(REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"))
    args = ap.parse_args()
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
        bare_s, bare_rc = timed(plan["argv"], bare_env, bare_dir)
        wb_s, wb_rc = timed([*wb, "run", args.scenario, "--quiet"], env, REPO)
    print(f"bare verl command: {bare_s:7.1f} s (exit {bare_rc})")
    print(f"workbook run:      {wb_s:7.1f} s (exit {wb_rc})")
    print(f"ratio:             {wb_s / bare_s:7.3f}  (target <= 1.15)")
    return 0 if bare_rc == 0 and wb_rc in (0, 1) else 1


if __name__ == "__main__":
    sys.exit(main())
