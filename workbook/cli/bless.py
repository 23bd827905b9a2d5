"""``workbook bless RUN_DIR...`` and ``workbook baseline import``: baselines from data only."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbook.checks.baseline import Baseline, import_ascend_text, read_baseline_text
from workbook.checks.blessing import bless
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.errors import BaselineError, ParamsError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "bless", help="write a baseline from three or more distinct good runs",
        description="Reduce each metric of the runs as the scenario's checks say and write "
        "the reference values, their spread (sigma), per-step series and provenance. The runs "
        "must be distinct (one run given twice, by a symlink or a copy, is refused) and what "
        "would be written must load as a baseline; otherwise nothing is written (exit 2).",
        epilog="examples:\n  workbook bless runs/gspo-tiny-1n1cpu-fsdp2-vllm/*\n"
        "  workbook bless RUN_A RUN_B RUN_C --out params/baselines/x.cpu.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR")
    parser.add_argument("--out", type=Path, help="baseline file to write (default: the "
                        "scenario's checks.baseline, else params/baselines/<scenario>.<hw>.json)")
    parser.add_argument("--hardware", help="hardware label (default: the scenario's profile)")
    parser.add_argument("--scenario", type=Path, help="take the checks (window, policies, baseline "
                        "path) from this scenario file instead of the runs' resolved params: "
                        "for a first baseline, or after changing the checks")
    parser.set_defaults(handler=run_bless)

    group = sub.add_parser("baseline", help="baseline files").add_subparsers(dest="baseline_cmd",
                                                                             required=True)
    imp = group.add_parser(
        "import", help="convert verl's Ascend key:value baseline text to a baseline file",
        epilog="example:\n  workbook baseline import baseline_gspo_qwen3_8b_fsdp2_npu.txt "
        "--hardware a2 --out params/baselines/gspo-qwen3-8b-1n8npu-fsdp2-vllm.a2.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    imp.add_argument("text", type=Path, help="verl-ascend-recipe baseline_<name>.txt")
    imp.add_argument("--out", type=Path, required=True)
    imp.add_argument("--hardware", help="a2, a3, ... (default: read from the file's path)")
    imp.add_argument("--scenario", help="scenario name to record")
    imp.add_argument("--origin", help="where the text came from (repository@commit:path)")
    imp.set_defaults(handler=run_import)


def run_bless(args: argparse.Namespace) -> int:
    spec, out = None, args.out
    if args.scenario is not None:
        spec, out = _scenario_checks(args.scenario, out)
    baseline = bless(args.run_dirs, out, spec=spec, hardware=args.hardware)
    _summary(baseline)
    return 0


def _scenario_checks(path: Path, out: Path | None) -> tuple[CheckSpec, Path | None]:
    """The scenario's checks, minus the baseline file they name (the one being written)."""
    from workbook.params.loader import resolve

    data, problems = resolve(path)
    section = dict(data.get("checks") or {})
    target = section.pop("baseline", None)
    params_dir = path.resolve().parent
    spec, more = parse_checks(section, params_dir=params_dir)
    if problems or more:
        raise ParamsError(problems + more, str(path))
    return spec, out or (params_dir / str(target) if target else None)


def run_import(args: argparse.Namespace) -> int:
    """Read the text as ``load_baseline`` reads a .txt baseline (whatever its name), and write
    nothing unless every line was read and the result would load (exit 2 otherwise)."""
    text = read_baseline_text(args.text)
    if args.out.exists() and args.out.resolve() == args.text.resolve():
        raise BaselineError(f"--out {args.out} is the text being imported; write the baseline "
                            "to another file")
    baseline = import_ascend_text(text, source=args.text, hardware=args.hardware,
                                  scenario=args.scenario, origin=args.origin)
    baseline.save(args.out)
    _summary(baseline)
    return 0


def _summary(baseline: Baseline) -> None:
    runs = baseline.provenance.get("run_ids") or [baseline.provenance.get("imported_from")]
    print(f"{len(baseline.metrics)} metrics from {', '.join(str(r) for r in runs)}")
    print(baseline.path)
