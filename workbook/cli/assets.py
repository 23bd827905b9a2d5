"""``workbook assets``: build the tiny CPU model, data and reward once, print where they are."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbook.profiles.cpu.assets import ensure_assets


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "assets",
        help="build the tiny model, tokenizer, data and reward for the cpu profile",
        description="Build the cpu profile's tiny assets once (a second call does nothing) "
        "and print their paths.",
        epilog="examples:\n  workbook assets\n  workbook assets --cache /tmp/wb-assets",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="cache directory (default: $WORKBOOK_ASSETS, $WORKBOOK_CACHE or "
        "~/.cache/verl-workbook/assets)",
    )
    parser.set_defaults(handler=run_assets)


def run_assets(args: argparse.Namespace) -> int:
    assets = ensure_assets(args.cache)
    print(f"model_dir:       {assets.model_dir}")
    print(f"train_file:      {assets.train_file}")
    print(f"val_file:        {assets.val_file}")
    print(f"reward_file:     {assets.reward_file}")
    print(f"reward_function: {assets.reward_function}")
    return 0
