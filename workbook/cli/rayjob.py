"""``workbook rayjob PARAMS``: write (or ``--apply``) the KubeRay RayJob of a scenario."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbook.command import build_plan
from workbook.errors import EXIT_RUN_FAILED
from workbook.launch import kuberay
from workbook.params import load_scenario
from workbook.runs import new_run_id

# Where the run writes inside the pods (the file logger's JSONL stays there; the metrics come
# from the job log).
POD_RUNS = Path("/tmp/verl-workbook/runs")

EPILOG = """examples:
  workbook rayjob params/ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob.yaml > rayjob.yaml
  workbook rayjob params/ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob.yaml -s kuberay.image=my/verl:npu --apply
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "rayjob",
        help="write a KubeRay RayJob manifest for a scenario (or submit it with --apply)",
        description="Print the ray.io/v1 RayJob that runs the scenario's exact command on a "
        "KubeRay-created cluster sized from the scenario (nodes, devices per node, kuberay: section).",
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
        "--name", default=None, help="RayJob name (default: scenario name + run id suffix)"
    )
    parser.add_argument(
        "--apply", action="store_true", help="submit with kubectl and follow it to a final state"
    )
    parser.add_argument(
        "--no-follow", action="store_true", help="with --apply: return once submitted"
    )
    parser.set_defaults(handler=run_rayjob)


def run_rayjob(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.params, args.sets, check_files=False)
    run_id = new_run_id()
    plan = build_plan(
        scenario,
        POD_RUNS / scenario.name / run_id,
        on_existing_cluster=True,
        plugin_path=str(POD_RUNS / "pythonpath") if scenario.profile == "cpu" else None,
    )
    name = args.name or f"{kuberay.k8s_name(scenario.name)[:55]}-{run_id[-6:]}"
    manifest = kuberay.rayjob_manifest(
        plan,
        name=name,
        nodes=scenario.nodes,
        devices_per_node=scenario.devices_per_node,
        device=scenario.profile,
        settings=scenario.kuberay.model_dump(),
        timeout_s=scenario.timeout_s,
    )
    if not args.apply:
        sys.stdout.write(kuberay.manifest_yaml(manifest))
        return 0

    def show(status: dict) -> None:
        print(
            f"rayjob/{manifest['metadata']['name']}: job {status.get('jobStatus') or '-'}, "
            f"deployment {status.get('jobDeploymentStatus') or '-'} {status.get('message') or ''}".rstrip(),
            file=sys.stderr,
        )

    status = kuberay.apply(manifest, follow=not args.no_follow, on_status=show)
    if args.no_follow:
        return 0
    return 0 if status.get("jobStatus") == "SUCCEEDED" else EXIT_RUN_FAILED
