"""``workbook validate | plan | run``: a scenario from file to report."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from workbook import interpreter
from workbook.cli import terminal
from workbook.core.layout import RunDir, default_root
from workbook.core.project import find_scenario
from workbook.errors import EXIT_RUN_FAILED
from workbook.params.schema import Scenario

if TYPE_CHECKING:
    from workbook.run.driver import RunResult


def add_scenario_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", type=Path, help="scenario YAML file under params/")
    p.add_argument("-s", "--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field (repeatable; later wins; overrides+=K=V appends a raw Hydra override)")
    p.add_argument("--verl", type=Path, default=None, metavar="PATH",
                   help="the verl checkout under test (its repository root): the run imports "
                   "verl from it (same as -s verl.path=PATH)")
    add_python_arg(p)


def add_python_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--python", default=None, metavar="PYTHON",
                   help="the training interpreter verl runs with (a path, or a name on PATH); "
                   "wins over $WORKBOOK_PYTHON and the scenario's python: (default: the "
                   "workbook's own on cpu, python3 elsewhere)")


def use_python(args: argparse.Namespace) -> None:
    """``--python`` as ``$WORKBOOK_PYTHON`` of this process: every scenario loaded here, and the
    notebook kernel each run is driven in, launch verl with it (as ``--verl`` does for suites)."""
    given = getattr(args, "python", None)
    if given:
        value = str(Path(given).expanduser().absolute()) if "/" in given else given
        os.environ[interpreter.ENV] = value  # not resolved: a venv's python is its own symlink


def named_scenario(given: str) -> Path:
    """The params file of a scenario as ``bisect`` and ``baseline propose`` take it: a path, or
    a bare name (``gspo-tiny-1n1cpu-fsdp2-vllm``) of a file under params/."""
    named = given if given.endswith((".yaml", ".yml")) or "/" in given else f"{given}.yaml"
    return find_scenario(named)


def scenario_sets(args: argparse.Namespace) -> list[str]:
    """``-s`` overrides, with ``--verl PATH`` as the last (an absolute path: it was typed here)."""
    sets = list(args.sets)
    if getattr(args, "verl", None) is not None:
        sets.append(f"verl.path={args.verl.expanduser().resolve()}")
    return sets


def register(sub: argparse._SubParsersAction) -> None:
    v = sub.add_parser("validate", help="check a scenario before launch (exit 2 on any problem)",
                       epilog="example: workbook validate params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml -s clip_ratio_high=6e-4")
    add_scenario_args(v)
    v.add_argument("--where", choices=("here", "runner"), default=None,
                   help="whose paths the scenario's are: this machine's (default; model, data "
                   "and verl checkout must exist) or the runner's that will run it "
                   "(default $WORKBOOK_WHERE)")
    v.set_defaults(handler=validate)

    p = sub.add_parser("plan", help="print the exact verl command of a scenario",
                       epilog="example: workbook plan params/gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml --format json")
    add_scenario_args(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--run-dir", type=Path, default=None, help="run directory the command writes into")
    p.set_defaults(handler=plan, raw_output=lambda args: True)  # the exact command, as it runs

    r = sub.add_parser("run", help="run a scenario end to end and render its report",
                       epilog="example: workbook run params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml -s clip_ratio_high=6e-4")
    add_scenario_args(r)
    r.add_argument("--runs", type=Path, default=None, help="runs root (default $WORKBOOK_RUNS or ./runs)")
    r.add_argument("--quiet", action="store_true", help="do not stream the run's log to the terminal")
    r.add_argument("--run-dir", type=Path, default=None,
                   help="run into this (new or empty) directory instead of <runs>/<scenario>/<id>")
    r.set_defaults(handler=run)


def validate(args: argparse.Namespace) -> int:
    from workbook.run.steps import ensure_profile_ready
    from workbook.scenario import validate_scenario

    use_python(args)
    args.params, args.sets = find_scenario(args.params), scenario_sets(args)
    ensure_profile_ready(args.params, args.sets)
    s = validate_scenario(args.params, args.sets, where=args.where)
    print_warnings(s, args.params)
    print(f"{args.params}: scenario '{s.name}' is valid ({s.profile}, {s.launcher}, "
          f"{s.nodes}x{s.devices_per_node} devices, {s.total_training_steps} steps"
          f"{', deterministic' if s.deterministic else ''}"
          f"{', verl from ' + s.verl.path if s.verl.path else ''})")
    return 0


def print_warnings(s: Scenario, params_file: Path) -> None:
    """Settings that are valid but will not act, on stderr (validation still passes)."""
    from workbook.scenario import scenario_warnings

    for field, message in scenario_warnings(s, Path(params_file).resolve().parent):
        print(f"warning: {field}: {message}", file=sys.stderr)


def plan(args: argparse.Namespace) -> int:
    from workbook.command import as_json, as_shell
    from workbook.run.steps import plan_for
    from workbook.scenario import load_scenario

    use_python(args)
    s = load_scenario(find_scenario(args.params), scenario_sets(args), check_files=False)
    run_dir = args.run_dir or default_root().resolve() / s.name / "<run_id>"
    p = plan_for(s, Path(run_dir))
    sys.stdout.write(as_json(p) if args.format == "json" else as_shell(p))
    return 0


def run(args: argparse.Namespace) -> int:
    params, s = validated(args)
    result = launch(args, params, s)
    print(f"verdict: {result.verdict}: {result.reason}")
    print(f"report: {result.report or 'not written'}")
    print(result.run_dir)
    return run_exit_code(result)


def validated(args: argparse.Namespace) -> tuple[Path, Scenario]:
    """``args.params`` with ``args.sets`` (and ``--verl``) validated as a run here needs them,
    the CPU profile's assets built first; ``args.sets`` becomes the full list of overrides.
    Nothing is created before this passes (exit 2)."""
    from workbook.run.steps import ensure_profile_ready
    from workbook.scenario import validate_scenario

    use_python(args)
    params, args.sets = find_scenario(args.params), scenario_sets(args)
    ensure_profile_ready(params, args.sets)
    s = validate_scenario(params, args.sets, where="here")
    print_warnings(s, params)
    return params, s


def launch(args: argparse.Namespace, params: Path, s: Scenario,
           execute: Callable[..., RunResult] | None = None) -> RunResult:
    """Run a validated scenario as ``workbook run`` does (``--runs``, ``--run-dir``,
    ``--notebook``, ``--quiet``): prepared, launched, judged, rendered and indexed by the run's
    notebook (:func:`workbook.run.driver.execute_run`, or ``execute`` standing in for it)."""
    from workbook.run import driver

    root = (getattr(args, "runs", None) or default_root()).resolve()
    if getattr(args, "run_dir", None):
        rd = RunDir(args.run_dir.resolve())
        rd.path.mkdir(parents=True, exist_ok=True)
    else:
        rd = RunDir.create(root, s.name)
    args.active_run = rd.path  # from here on a surprise is a failed run (exit 3), not bad input
    print(f"run directory: {rd.path}", flush=True)
    result = (execute or driver.execute_run)(
        params, list(args.sets), rd, runs_root=root, launcher=s.launcher,
        echo=not getattr(args, "quiet", False))
    terminal.closing_errors(result.errors, rd.path)
    return result


def run_exit_code(result: RunResult) -> int:
    """The run's verdict's code; 3 when closing it went wrong somewhere."""
    return result.exit_code if not result.errors else max(result.exit_code, EXIT_RUN_FAILED)
