"""``workbook cluster up|status|down``: a local multi-node Ray cluster on this machine."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workbook.errors import EXIT_RUN_FAILED
from workbook.launch.cluster import lifecycle, probe
from workbook.launch.cluster.state import default_state_file

EPILOG = """examples:
  workbook cluster up --nodes 2            a head and one more node, 1 logical GPU each
  workbook cluster up --nodes 2 --device-resource NPU --devices 4
  workbook cluster status                  nodes and resources; prints the RAY_ADDRESS to use
  workbook cluster down                    stop the processes carrying its tag (never `ray stop`)

`down` acts only on a state file `up` wrote (its own temp dir, its process tag); any other is
refused, nothing stopped (exit 2).
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "cluster",
        help="start, inspect or stop a local multi-node Ray cluster",
        description="A Ray head and N-1 more nodes on this machine, each with its own ports and "
        "logical devices, for running the Ray launcher without a real cluster.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--state",
        type=Path,
        default=None,
        help=f"state file (default: $WORKBOOK_CLUSTER_STATE or {default_state_file()})",
    )
    actions = parser.add_subparsers(
        dest="cluster_action", required=True, metavar="{up,status,down}"
    )
    up = actions.add_parser("up", help="start the cluster (prints its status if already up)")
    up.add_argument(
        "--nodes", type=int, default=2, help="number of Ray nodes, head included (default 2)"
    )
    up.add_argument("--cpus", type=int, default=16, help="logical CPUs per node (default 16)")
    up.add_argument("--devices", type=int, default=1, help="logical devices per node (default 1)")
    up.add_argument(
        "--device-resource", default="GPU", help="GPU (default) or a custom resource such as NPU"
    )
    up.set_defaults(handler=run_up)
    status = actions.add_parser("status", help="show nodes and resources")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(handler=run_status)
    down = actions.add_parser(
        "down", help="stop every process carrying the cluster's tag (refuses a state file "
        "the workbook did not write)")
    down.set_defaults(handler=run_down)


def run_up(args: argparse.Namespace) -> int:
    lifecycle.up(
        args.nodes,
        cpus_per_node=args.cpus,
        devices_per_node=args.devices,
        device_resource=args.device_resource,
        state_file=args.state,
    )
    return _print_status(probe.status(args.state))


def run_status(args: argparse.Namespace) -> int:
    result = probe.status(args.state)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0 if result.reachable else EXIT_RUN_FAILED
    return _print_status(result)


def run_down(args: argparse.Namespace) -> int:
    counts = lifecycle.down(args.state)
    print(
        f"stopped {counts['terminated']} process(es), killed {counts['killed']} after the grace period"
    )
    return 0


def _print_status(result: probe.ClusterStatus) -> int:
    if result.state is None or not result.reachable:
        print(f"local Ray cluster: down ({result.message})")
        return EXIT_RUN_FAILED
    state = result.state
    print(
        f"local Ray cluster: {state.dashboard_url} (GCS {state.gcs_address}, temp dir {state.temp_dir})"
    )
    print(f"  export RAY_ADDRESS={state.dashboard_url}")
    print(f"nodes alive: {len(result.alive_nodes)}/{state.nodes}")
    for node in result.nodes:
        shown = {
            k: v
            for k, v in sorted(node.resources.items())
            if k in ("CPU", "GPU", "NPU") or k == state.device_resource
        }
        resources = "  ".join(f"{k} {v:g}" for k, v in shown.items())
        role = "head" if node.is_head else "worker"
        print(
            f"  {role:<6} {node.ip:<15} {'ALIVE' if node.alive else 'DEAD ':<5}  {resources}  {node.node_id[:12]}"
        )
    return 0
