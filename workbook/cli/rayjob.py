"""``workbook rayjob PARAMS``: write (or ``--apply``) the KubeRay RayJob of a scenario.

``--apply`` runs the scenario as ``workbook run`` runs one with ``launcher: kuberay``: the
run directory is prepared (``<runs>/<scenario>/<run id>``, the run id the RayJob's name ends
with), :class:`~workbook.launch.kuberay.launcher.KubeRayLauncher` submits the job, follows it to
its end and fetches its log, and the run is closed: checks, report, index. The exit code is the
verdict's: 0 passed, 1 regressed, 3 failed (the job failed, or no log could be fetched).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbook.cli import terminal
from workbook.core.layout import RunDir, default_root, new_run_id
from workbook.core.project import find_scenario, run_notebook
from workbook.errors import EXIT_RUN_FAILED
from workbook.launch.kuberay import kubectl
from workbook.launch.kuberay.launcher import NAME, KubeRayLauncher, job_name, show_status
from workbook.launch.kuberay.manifest import manifest_yaml
from workbook.launch.kuberay.pods import pod_plan, pod_variables
from workbook.launch.outcome import Outcome
from workbook.scenario import load_scenario

EPILOG = """examples:
  workbook rayjob params/ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob.yaml > rayjob.yaml
  workbook rayjob params/ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob.yaml -s kuberay.image=my/verl:npu --apply

exit codes with --apply: 0 passed, 1 regressed, 3 the job failed or its log could not be fetched
(the run directory is printed last, with its report)"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "rayjob",
        help="write a KubeRay RayJob manifest for a scenario (or submit it with --apply)",
        description="Print the ray.io/v1 RayJob that runs the scenario's exact command on a "
        "KubeRay-created cluster sized from the scenario (nodes, devices per node, kuberay: "
        "section). Paths under $HOME are the pods' home.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("params", type=Path, help="scenario file")
    parser.add_argument(
        "-s",
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field (repeatable)",
    )
    parser.add_argument(
        "--name", default=None,
        help="RayJob name prefix: the name is NAME-<6 characters of the run id>, a DNS-1035 "
        "label of at most 47 characters, so no two runs share one (default: the scenario's "
        "name, shortened)"
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="submit with kubectl, follow it, judge its log and exit with the verdict",
    )
    parser.add_argument(
        "--no-follow", action="store_true", help="with --apply: return once submitted"
    )
    parser.add_argument(
        "--runs", type=Path, default=None, help="runs root (default $WORKBOOK_RUNS or ./runs)"
    )
    # the manifest as kubectl takes it; what --apply prints is redacted
    parser.set_defaults(handler=run_rayjob, raw_output=lambda args: not args.apply)


def run_rayjob(args: argparse.Namespace) -> int:
    params = find_scenario(args.params)
    scenario = load_scenario(params, args.sets, check_files=False, variables=pod_variables())
    run_id = new_run_id()
    name = job_name(args.name, scenario.name, run_id)
    manifest = KubeRayLauncher.for_scenario(scenario, name).manifest(
        pod_plan(scenario, run_id), scenario.timeout_s)
    if not args.apply:
        sys.stdout.write(manifest_yaml(manifest))
        return 0
    if args.no_follow:
        kubectl.apply(manifest, follow=False, on_status=show_status(name))
        print(f"rayjob/{name} submitted in namespace {manifest['metadata']['namespace']}")
        return 0
    from workbook.run.steps import launcher_for, prepare

    root = args.runs or default_root()
    sets = [*args.sets, *([] if scenario.launcher == NAME else [f"launcher={NAME}"])]
    run = prepare(params, overrides=sets, run_dir=Path(root).resolve() / scenario.name / run_id,
                  run_root=root, notebook=run_notebook(NAME), rayjob_name=args.name or "",
                  announce=False)
    args.active_run = run.run_dir.path  # from here on a surprise is a failed run (exit 3)
    print(f"run directory: {run.run_dir.path}", flush=True)
    outcome = launcher_for(run).run(run.plan, run.run_dir, timeout_s=run.scenario.timeout_s)
    return conclude(run.run_dir, outcome, expected_steps=run.scenario.total_training_steps)


def conclude(rd: RunDir, outcome: Outcome, *, expected_steps: int | None) -> int:
    """Record the outcome, judge, report; print the verdict and the run directory last."""
    from workbook.checks.verdict import exit_code_of
    from workbook.core.status import Verdict
    from workbook.run.life import close, record_outcome

    record_outcome(rd, outcome, expected_steps=expected_steps)
    done = close(rd, announce=False)
    terminal.closing_errors(done.errors, rd.path)
    verdict = rd.verdict()
    status = str(verdict.get("status") or Verdict.FAILED.value)
    print(f"verdict: {status}: {verdict.get('reason') or 'the run was not judged'}")
    print(f"report: {done.report or 'not written'}")
    print(rd.path)
    code = exit_code_of(status)
    return max(code, EXIT_RUN_FAILED) if done.errors or not outcome.ok else code
