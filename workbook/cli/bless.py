"""``workbook bless RUN_DIR...`` and ``workbook baseline import``: baselines from data only."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from workbook.checks.baseline import (
    Baseline,
    import_ascend_text,
    load_baseline,
    read_baseline_text,
)
from workbook.checks.blessing import bless, plain_label
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.cli.scenario import named_scenario
from workbook.core.clock import now_iso
from workbook.core.layout import PROPOSAL_FILE, PROPOSAL_PAGE, proposal_dir, write_json
from workbook.core.project import runs_root
from workbook.errors import BaselineError, ParamsError
from workbook.history import proposal
from workbook.history.ledger import file_sha256, read_ledger
from workbook.history.proposal import DEFAULT_LAST, MIN_SOURCES
from workbook.history.proposal_record import proposal_record
from workbook.params.settings import settings_of
from workbook.scenario import load_scenario


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

    propose = group.add_parser(
        "propose", help="bless a candidate from the last green nights and write a review page",
        description="Take the last N green nights of the scenario's ledger with its current "
        "settings on one hardware key, measured on machines bless accepts together (the others "
        "are passed over, and the page says why), bless a candidate baseline from them (as "
        "bless does) and compare it with the scenario's blessed baseline: per metric old and "
        "new value, delta, delta in old sigmas, the symmetric KL divergence and the curves; "
        "what changed between their runs and where the source runs differ; and each red night "
        "since the blessed baseline, judged again against the candidate. Nothing in params/ is "
        "written: copy the candidate over the baseline after review. Fewer than 3 such nights "
        "is exit 2.",
        epilog="examples:\n  workbook baseline propose gspo-tiny-1n1cpu-fsdp2-vllm\n"
        "  workbook baseline propose params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml --last 3",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    propose.add_argument("scenario", metavar="SCENARIO", help="scenario name or params path")
    propose.add_argument("--runs-root", type=Path, help="runs root holding the ledger "
                         "(default $WORKBOOK_RUNS, else the project's runs/)")
    propose.add_argument("--last", type=int, default=DEFAULT_LAST,
                         help=f"how many green nights to bless from (default {DEFAULT_LAST}, at "
                         f"least {MIN_SOURCES})")
    propose.add_argument("--out", type=Path, metavar="DIR", help="folder for the candidate and "
                         "its review page (default <runs root>/proposals/<scenario>.<hardware>/"
                         "<UTC stamp>/)")
    propose.set_defaults(handler=run_propose)


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
    for what, label in (("--hardware", args.hardware), ("--scenario", args.scenario)):
        if label is not None:
            plain_label(label, what)
    text = read_baseline_text(args.text)
    if args.out.exists() and args.out.resolve() == args.text.resolve():
        raise BaselineError(f"--out {args.out} is the text being imported; write the baseline "
                            "to another file")
    baseline = import_ascend_text(text, source=args.text, hardware=args.hardware,
                                  scenario=args.scenario, origin=args.origin)
    baseline.save(args.out)
    _summary(baseline)
    return 0


def run_propose(args: argparse.Namespace) -> int:
    """Bless a candidate from the ledger's last green nights and write its review page, with
    the record the index reads (:data:`~workbook.core.layout.PROPOSAL_FILE`)."""
    from workbook.report.proposal import review, write_review  # matplotlib: here only

    path = named_scenario(args.scenario)
    spec, blessed_path = _scenario_checks(path, None)
    resolved = load_scenario(path, check_files=False).model_dump(mode="json")
    name, hardware = str(resolved["name"]), str(resolved.get("profile") or "unknown")
    if blessed_path is None or not blessed_path.is_file():
        raise BaselineError(f"{path}: no blessed baseline to compare a candidate with "
                            f"({blessed_path or 'checks.baseline is not set'}); bless the first "
                            "one with workbook bless --scenario")
    blessed = load_baseline(blessed_path)
    blessed_sha256 = file_sha256(blessed_path)
    root = (args.runs_root or runs_root()).resolve()
    ledger = read_ledger(root, name, hardware)
    chosen = proposal.select_sources(ledger, settings_of(resolved), args.last)
    out = args.out or proposal_dir(root, name, hardware)
    dirs = [e.run_dir(root) for e in chosen.sources]
    candidate = bless(dirs, out / blessed_path.name, spec=spec, hardware=hardware, scenario=name)
    rejudged = proposal.rejudge(proposal.red_since(ledger, blessed), root, out / blessed_path.name,
                                (resolved, path.parent))
    next_step = f"cp {shlex.quote(str(candidate.path))} {shlex.quote(str(blessed_path))}"
    page = write_review(out / PROPOSAL_PAGE, review(
        scenario=name, hardware=hardware, candidate=candidate, blessed=blessed,
        next_step=next_step, metrics=proposal.metric_changes(blessed, candidate),
        changes=proposal.provenance_changes(blessed, candidate), selection=chosen,
        rejudged=rejudged, runs_root=root, page_dir=out, spec=spec))
    write_json(out / PROPOSAL_FILE, proposal_record(
        scenario=name, hardware=hardware, created=now_iso(), blessed=blessed_path,
        blessed_sha256=blessed_sha256, candidate=out / blessed_path.name, selection=chosen))
    turned = sum(r.turned_green for r in rejudged)
    print(f"candidate: {candidate.path} ({len(candidate.metrics)} metrics from "
          f"{len(dirs)} green nights)")
    if chosen.passed_over:
        print("passed over: " + "; ".join(f"{n} measured on {why}" for why, n in chosen.machines())
              + " (bless refuses runs measured on unlike machines together)")
    differ = candidate.provenance.get("runs_differ") or []
    if differ:
        print(f"the source runs differ in {len(differ)} facts (" + ", ".join(
            str(d.get("name")) for d in differ[:5]) + (", ..." if len(differ) > 5 else "")
            + "); the review page lists each run's")
    print(f"review: {page} ({turned} of {len(rejudged)} red nights turn green)")
    print(f"after review: {next_step}  # then commit it")
    return 0


def _summary(baseline: Baseline) -> None:
    runs = baseline.provenance.get("run_ids") or [baseline.provenance.get("imported_from")]
    print(f"{len(baseline.metrics)} metrics from {', '.join(str(r) for r in runs)}")
    print(baseline.path)
