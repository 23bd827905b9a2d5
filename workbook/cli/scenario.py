"""``workbook validate | plan | run``: a scenario from file to report."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

from workbook.errors import EXIT_PASSED, EXIT_REGRESSED, EXIT_RUN_FAILED, WorkbookError
from workbook.runs import RunDir, default_root

REPO = Path(__file__).resolve().parents[2]
VERDICT_EXIT = {"passed": EXIT_PASSED, "regressed": EXIT_REGRESSED, "failed": EXIT_RUN_FAILED}


def add_scenario_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", type=Path, help="scenario YAML file under params/")
    p.add_argument("-s", "--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field (repeatable; later wins; overrides+=K=V appends a raw Hydra override)")


def register(sub: argparse._SubParsersAction) -> None:
    v = sub.add_parser("validate", help="check a scenario before launch (exit 2 on any problem)",
                       epilog="example: workbook validate params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml -s clip_ratio_high=6e-4")
    add_scenario_args(v)
    v.set_defaults(handler=validate)

    p = sub.add_parser("plan", help="print the exact verl command of a scenario",
                       epilog="example: workbook plan params/gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml --format json")
    add_scenario_args(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--run-dir", type=Path, default=None, help="run directory the command writes into")
    p.set_defaults(handler=plan)

    r = sub.add_parser("run", help="run a scenario end to end and render its report",
                       epilog="example: workbook run params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml -s clip_ratio_high=6e-4")
    add_scenario_args(r)
    r.add_argument("--runs", type=Path, default=None, help="runs root (default $WORKBOOK_RUNS or ./runs)")
    r.add_argument("--notebook", type=Path, default=None, help="notebook to execute (default by launcher)")
    r.add_argument("--quiet", action="store_true", help="do not stream the run's log to the terminal")
    r.set_defaults(handler=run)


def validate(args: argparse.Namespace) -> int:
    from workbook.params import validate_scenario
    from workbook.pipeline import ensure_profile_ready

    ensure_profile_ready(args.params, args.sets)
    s = validate_scenario(args.params, args.sets)
    print(f"{args.params}: scenario '{s.name}' is valid ({s.profile}, {s.launcher}, "
          f"{s.nodes}x{s.devices_per_node} devices, {s.total_training_steps} steps)")
    return 0


def plan(args: argparse.Namespace) -> int:
    from workbook.command import as_json, as_shell
    from workbook.params import load_scenario
    from workbook.pipeline import plan_for

    s = load_scenario(args.params, args.sets, check_files=False)
    run_dir = args.run_dir or default_root().resolve() / s.name / "<run_id>"
    p = plan_for(s, Path(run_dir))
    sys.stdout.write(as_json(p) if args.format == "json" else as_shell(p))
    return 0


def default_notebook(launcher: str) -> Path:
    return REPO / "notebooks" / ("ppo_multinode.ipynb" if launcher == "ray" else "gspo.ipynb")


class _Tail(threading.Thread):
    """Streams run.log to the terminal while the notebook runs (the notebook keeps it short)."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path, self.done = path, threading.Event()

    def run(self) -> None:
        offset = 0
        while True:
            finished = self.done.is_set()
            if self.path.exists():
                with open(self.path, "rb") as f:
                    f.seek(offset)
                    chunk = f.read()
                    offset += len(chunk)
                if chunk:
                    sys.stdout.write(chunk.decode("utf-8", errors="replace"))
                    sys.stdout.flush()
            if finished:
                return
            time.sleep(0.5)


def run(args: argparse.Namespace) -> int:
    from workbook.launch.outcome import request_stop
    from workbook.params import validate_scenario
    from workbook.pipeline import ensure_profile_ready

    ensure_profile_ready(args.params, args.sets)
    s = validate_scenario(args.params, args.sets)  # nothing is created before this passes

    from workbook.report.index import write_index
    from workbook.report.notebook import execute
    from workbook.report.render import render_report

    root = (args.runs or default_root()).resolve()
    rd = RunDir.create(root, s.name)
    print(f"run directory: {rd.path}", flush=True)

    def stop(signum: int, _frame: FrameType | None) -> None:
        request_stop(rd.path, f"signal {signal.Signals(signum).name}")
        print(f"\nworkbook: stopping the run ({signal.Signals(signum).name}); the report follows", flush=True)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    tail = None if args.quiet else _Tail(rd.file("log"))
    if tail:
        tail.start()
    try:
        execute(
            args.notebook or default_notebook(s.launcher),
            rd.path,
            {"scenario": str(args.params.resolve()), "overrides": list(args.sets),
                        "run_dir": str(rd.path), "run_root": str(root)},
            cwd=REPO,
            stream=False,  # the run's own log streams from run.log (below)
        )
    except WorkbookError as exc:  # the run's own failure is judged below, from its files
        print(f"workbook: the notebook stopped: {exc.message.splitlines()[0]}", file=sys.stderr)
    finally:
        if tail:
            tail.done.set()
            tail.join(timeout=5)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        finish(rd)
        render_report(rd.path)
        write_index(root)
    return print_verdict(rd)


def finish(rd: RunDir) -> None:
    """A notebook that died mid-run leaves 'running': record it as failed, with a diagnosis."""
    from workbook.launch.outcome import Outcome
    from workbook.pipeline import adopt, judge, record_outcome

    info = rd.read_json("run")
    if info.get("status") in (None, "prepared", "running"):
        record_outcome(adopt(rd.path), Outcome("failed", None, info.get("started_at", ""), "", 0.0,
                                               "the notebook stopped before the run finished"))
    if not rd.file("checks").exists():
        judge(adopt(rd.path))


def print_verdict(rd: RunDir) -> int:
    verdict = rd.read_json("checks").get("verdict") or rd.read_json("run").get("verdict") or {}
    status = verdict.get("status", "failed")
    print(f"verdict: {status}: {verdict.get('reason', '')}")
    print(f"report: {rd.file('report')}")
    print(rd.path)
    return VERDICT_EXIT.get(status, EXIT_RUN_FAILED)
