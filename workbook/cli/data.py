"""``workbook data prepare PARAMS``: run a scenario's ``data:`` section (verl's preprocessing).

Idempotent: a second call with the same script, dataset and arguments keeps the outputs and
says so. Exit 0 prepared or current, 2 bad input (no data: section, a missing dataset or
script), 3 the script failed.
"""

from __future__ import annotations

import argparse

from workbook.cli.scenario import add_scenario_args, scenario_sets
from workbook.core.project import find_scenario
from workbook.errors import InputError

EPILOG = """examples:
  workbook data prepare params/gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml --verl ./verl
  workbook data prepare params/gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml -s data.local_save_dir=/data/gsm8k --force"""


def register(sub: argparse._SubParsersAction) -> None:
    data = sub.add_parser("data", help="prepare a scenario's data with verl's own preprocessing")
    actions = data.add_subparsers(dest="data_action", required=True, metavar="{prepare}")
    prepare = actions.add_parser(
        "prepare", help="run the scenario's data: script unless its outputs are current",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_scenario_args(prepare)
    prepare.add_argument("--force", action="store_true", help="run it even when current")
    prepare.set_defaults(handler=prepare_command)


def prepare_command(args: argparse.Namespace) -> int:
    from workbook.data.prepare import prepare_data
    from workbook.launch.launcher import python_for
    from workbook.scenario import load_scenario

    params = find_scenario(args.params)
    s = load_scenario(params, scenario_sets(args), check_files=False)
    if not s.data.enabled:
        raise InputError(f"{params}: the scenario has no data: section (data.script) to prepare")
    done = prepare_data(s, python=python_for(s), force=args.force)
    assert done is not None
    state = "prepared" if done.ran else "up to date (inputs unchanged; not run again)"
    print(f"data: {state}: {', '.join(str(p) for p in done.outputs)}")
    return 0
