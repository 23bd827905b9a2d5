"""``workbook bisect SCENARIO --verl-repo PATH --good REV --bad REV``: the verl commit a red
night started at."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbook.cli import terminal
from workbook.cli.scenario import named_scenario
from workbook.core.layout import default_root
from workbook.core.quoting import cut

EPILOG = """examples:
  workbook bisect gspo-tiny-1n1cpu-fsdp2-vllm --verl-repo ~/verl --good 3f2a9c1 --bad 8e0d4b7
  workbook bisect params/gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml --verl-repo ~/verl \\
      --good v0.9.1 --bad main --bad-run runs/suites/nightly-npu-a2/2026-12-02/01-gspo-.../RUN_ID

Each step checks one commit of GOOD..BAD (first-parent line) out into a git worktree and runs the
scenario once with verl imported from it. The verdict the bad night had is bad; passed, improved
and suspect are good; anything else is skipped (never tested again). The same command again
continues the bisect; Ctrl-C stops the running step (it is tested again next time).
Exit code: 0 the first bad commit was found, 2 bad input (or the bad commit is green here),
3 stopped, only skipped commits left, or a step could not run. The page's path is printed last."""
COLUMNS = ("step", "commit", "subject", "verdict", "outcome", "why")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bisect", help="find the verl commit a red night started at",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", metavar="SCENARIO", help="scenario name or params path")
    p.add_argument("--verl-repo", type=Path, required=True, metavar="PATH",
                   help="the verl git repository the commits are checked out of")
    p.add_argument("--good", required=True, metavar="REV",
                   help="the last green night's verl commit (trusted green)")
    p.add_argument("--bad", required=True, metavar="REV", help="the red night's verl commit")
    p.add_argument("-s", "--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field for every step (repeatable; later wins)")
    p.add_argument("--runs-root", "--runs", dest="runs_root", type=Path, default=None,
                   metavar="DIR", help="runs root (default $WORKBOOK_RUNS or runs/): its ledger "
                   "holds the bad night, the steps' runs join its index")
    p.add_argument("--dir", type=Path, default=None, metavar="DIR",
                   help="bisect directory (default <runs root>/bisects/<scenario>/<good7>-<bad7>)")
    p.add_argument("--bad-run", type=Path, default=None, metavar="RUN_DIR",
                   help="the red night's run directory: its verdict is the one that counts as bad")
    p.add_argument("--timeout-per-step", type=float, default=None, metavar="S", dest="timeout",
                   help="end a step's run after S seconds (it is then skipped)")
    p.add_argument("--restart", action="store_true",
                   help="start afresh in a bisect directory that holds another bisect")
    p.add_argument("--echo", action="store_true", help="stream each step's log to the terminal")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from workbook.bisect.plan import plan_bisect
    from workbook.bisect.search import run_bisect
    from workbook.report.index import write_index

    root = (args.runs_root or default_root()).resolve()
    params = named_scenario(args.scenario)
    plan = plan_bisect(params, args.sets, args.verl_repo, args.good, args.bad, runs_root=root,
                       directory=args.dir, bad_run=args.bad_run, timeout_s=args.timeout)

    def started(directory: Path) -> None:
        args.started = True  # a surprise from here on is a bisect that could not go on (3)
        print(f"bisect directory: {directory}", flush=True)

    outcome = run_bisect(plan, runs_root=root, restart=args.restart, echo=args.echo,
                         on_start=started)
    rows = [(r.about.get("step"), str(r.about.get("sha") or "")[:7],
             cut(str(r.about.get("subject") or ""), 60), r.status,
             r.about.get("outcome") or "-", cut(str(r.about.get("why") or ""), 80))
            for r in outcome.steps]
    terminal.show(terminal.table(f"bisect {plan.scenario} {plan.good[:7]}..{plan.bad[:7]}",
                                 COLUMNS, rows, status_column=3))
    print(f"bisect: {outcome.status}: {outcome.message}")
    print(f"index: {write_index(root)}")
    print(outcome.page or plan.directory)
    return outcome.exit_code

