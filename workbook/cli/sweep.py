"""``workbook sweep PARAMS --grid KEY=V1,V2 ...``: one scenario over a grid, compared fairly."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbook.cli import terminal
from workbook.core.layout import default_root
from workbook.core.project import find_scenario

EPILOG = """examples:
  workbook sweep params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml --grid clip_ratio_high=4e-4,6e-4,8e-4
  workbook sweep params/gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml --replay-rollouts \\
      --grid clip_ratio_high=4e-4,6e-4 --grid clip_ratio_low=3e-4,4e-4 -s total_training_steps=6

Every point is validated before any starts; each runs into its own run directory under the
sweep directory (printed last), next to sweep.json and comparison.html. Running the same command
again resumes, skipping finished points. Exit code: the worst point's."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run a scenario over a grid of settings and compare them",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("params", type=Path, help="scenario YAML file")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a setting and its values (repeatable: every combination runs)")
    p.add_argument("-s", "--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field for every point (repeatable)")
    p.add_argument("--replay-rollouts", action="store_true",
                   help="the first point dumps its rollouts; every other point replays them")
    p.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="run N points at a time as jobs on one local Ray cluster (default 1)")
    p.add_argument("--rerun", action="store_true", help="run finished points again")
    p.add_argument("--dir", type=Path, help="sweep directory (default <runs>/sweeps/...)")
    p.add_argument("--runs", type=Path, help="runs root (default $WORKBOOK_RUNS or runs/)")
    p.add_argument("--echo", action="store_true", help="stream each point's log")
    p.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from workbook.batch.sweep import plan_sweep, run_sweep

    params = find_scenario(args.params)
    root = (args.runs or default_root()).resolve()
    sweep = plan_sweep(params, args.grid, args.sets, replay_rollouts=args.replay_rollouts,
                       runs_root=root, directory=args.dir)
    args.started = True  # from here on a surprise is a failed sweep (3)
    print(f"sweep directory: {sweep.directory}", flush=True)
    run_sweep(sweep, runs_root=root, parallel=max(1, args.parallel), rerun=args.rerun,
              echo=args.echo)
    rows = [(p.key, " ".join(p.sets()), p.record.status,
             "-" if p.record.duration_s is None else f"{p.record.duration_s:.0f} s",
             p.record.report or "-")
            for p in sweep.points]
    terminal.show(terminal.table(f"sweep of {params.name}", ("point", "settings", "verdict",
                                                             "duration", "report"),
                                 rows, status_column=2))
    if sweep.interrupted:
        print("sweep: stopped by the user; points that had not started did not run")
    print(f"comparison: {sweep.comparison or 'not rendered'}")
    print(sweep.directory)
    return sweep.exit_code
