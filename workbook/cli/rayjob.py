"""``workbook rayjob PARAMS``: write (or ``--apply``) the KubeRay RayJob of a scenario.

``--apply`` is ``workbook run PARAMS -s launcher=kuberay`` (``--name`` its ``kuberay.name``):
the same notebook prepares the run, :class:`~workbook.launch.kuberay.launcher.KubeRayLauncher`
submits the job, follows it to its end and fetches its log, and the run is closed: checks,
report, index. The exit code is the verdict's: 0 passed, 1 regressed, 3 failed (the job failed,
or no log could be fetched).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbook.cli.scenario import run
from workbook.core.layout import new_run_id
from workbook.core.project import find_scenario
from workbook.launch.kuberay.launcher import NAME, KubeRayLauncher
from workbook.launch.kuberay.manifest import manifest_yaml
from workbook.launch.kuberay.pods import pod_plan
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
        help="RayJob name prefix (kuberay.name): the name is NAME-<6 characters of the run id>, "
        "a DNS-1035 label of at most 47 characters, so no two runs share one (default: the "
        "scenario's name, shortened)"
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="run it as `workbook run PARAMS -s launcher=kuberay` does: submit with kubectl, "
        "follow it, judge its log and exit with the verdict",
    )
    parser.add_argument(
        "--runs", type=Path, default=None, help="runs root (default $WORKBOOK_RUNS or ./runs)"
    )
    # the manifest as kubectl takes it; what --apply prints is redacted
    parser.set_defaults(handler=run_rayjob, raw_output=lambda args: not args.apply)


def run_rayjob(args: argparse.Namespace) -> int:
    if args.name:  # checked below, before anything is created
        args.sets = [*args.sets, f"kuberay.name={args.name}"]
    scenario = load_scenario(find_scenario(args.params), args.sets, check_files=False,
                             variables=KubeRayLauncher.variables())
    run_id = new_run_id()
    launcher = KubeRayLauncher.for_scenario(scenario, run_id)
    if args.apply:
        args.sets = [*args.sets, f"launcher={NAME}"]
        return run(args)  # as `workbook run PARAMS -s launcher=kuberay`
    sys.stdout.write(manifest_yaml(launcher.manifest(pod_plan(scenario, run_id),
                                                     scenario.timeout_s)))
    return 0
