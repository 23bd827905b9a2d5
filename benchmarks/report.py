"""Benchmark: a report for a 2,000-step run with 150 metrics, and an index of 1,000 runs.

Targets: the report under 15 s and under 2 MB; the index under 10 s. Prints times and sizes.
Run: ``.venv/bin/python benchmarks/report.py [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from workbook.report import cache, sections
from workbook.report.index import write_index
from workbook.report.render import render_report

PHASES = ("gen", "reward", "old_log_prob", "ref", "adv", "update_actor", "update_weights")
HEADLINE = (
    "actor/pg_loss",
    "actor/pg_clipfrac",
    "actor/pg_clipfrac_lower",
    "critic/score/mean",
    "critic/rewards/mean",
    "response_length/mean",
    "response_length/max",
    "response_length/min",
    "perf/throughput",
    "actor/perf/max_memory_allocated_gb",
    "timing_s/step",
)


def metric_names(count: int) -> list[str]:
    names = list(HEADLINE) + [f"timing_s/{p}" for p in PHASES]
    names += [f"extra/group{i // 10}/metric{i}" for i in range(count - len(names))]
    return names


def step_record(step: int, names: list[str], rng: random.Random) -> dict:
    data = {n: round(math.sin(step / 50 + i) + rng.random() * 0.1, 6) for i, n in enumerate(names)}
    data.update({f"timing_s/{p}": 0.5 + rng.random() for p in PHASES})
    data["timing_s/step"] = sum(data[f"timing_s/{p}"] for p in PHASES) + 0.2
    data["actor/pg_clipfrac"] = abs(data["actor/pg_clipfrac"]) / 2
    data["actor/pg_clipfrac_lower"] = 0.0
    return {"step": step, "data": data}


def write_run(
    root: Path,
    scenario: str,
    started: datetime,
    steps: int,
    metrics: int,
    rng: random.Random,
    verdict: str = "passed",
) -> Path:
    path = root / scenario / (started.strftime("%Y%m%dT%H%M%SZ") + f"-{rng.randrange(16**6):06x}")
    path.mkdir(parents=True)
    names = metric_names(metrics)
    with (path / "metrics.jsonl").open("w") as out:
        for step in range(1, steps + 1):
            out.write(json.dumps(step_record(step, names, rng)) + "\n")
    run = {
        "run_id": path.name,
        "scenario": scenario,
        "status": "succeeded",
        "exit_code": 0,
        "started_at": started.isoformat().replace("+00:00", "Z"),
        "wall_time_s": steps * 4.5,
        "expected_steps": steps,
        "clip_ratio_low": 3e-4,
        "clip_ratio_high": 4e-4,
        "hardware": {"cpu": "bench CPU", "cpus": 2},
        "versions": {"verl": "0.9.1"},
    }
    rows = [
        {
            "name": "actor/pg_clipfrac vs baseline",
            "metric": "actor/pg_clipfrac",
            "status": "pass" if verdict == "passed" else "fail",
            "value": 0.3,
            "expected": "0.2 .. 0.4",
            "message": "",
            "baseline": 0.3,
            "lower": 0.2,
            "upper": 0.4,
            "window": [5, 14],
        }
    ]
    (path / "run.json").write_text(json.dumps(run))
    (path / "checks.json").write_text(
        json.dumps({"verdict": verdict, "reason": f"bench {verdict}", "rows": rows})
    )
    (path / "run.log").write_text("step:1 - actor/pg_loss:0.1\n")
    return path


def executed_notebook(run: Path) -> None:
    """What papermill leaves behind: report cells with the sections' HTML as outputs."""
    cells = [new_markdown_cell("# bench")]
    for c in sections.SECTIONS:
        if c.ray_only:
            continue
        cell = new_code_cell(c.source)
        cell.metadata["tags"] = [c.tag]
        cell.outputs = [
            new_output(
                "execute_result", {"text/html": c.call(run).html, "text/plain": "s"}, execution_count=1
            )
        ]
        cells.append(cell)
    nbformat.write(new_notebook(cells=cells), str(run / "notebook.ipynb"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", type=Path, help="write here and keep (default: a temp dir)")
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(0)
    work = args.keep or Path(tempfile.mkdtemp(prefix="wb-bench-"))
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    try:
        big = write_run(work / "big", "synthetic", t0, 2000, 150, rng, verdict="regressed")
        start = time.perf_counter()
        report = render_report(big)
        direct = time.perf_counter() - start
        print(
            f"report from the run directory: {direct:.1f} s, {report.stat().st_size / 1e6:.2f} MB "
            f"(2000 steps, 150 metrics; target < 15 s, < 2 MB)"
        )
        cache.forget()  # the notebook's cells compute the sections afresh ...
        start = time.perf_counter()
        executed_notebook(big)
        cells = time.perf_counter() - start
        render_report(big)  # ... and the page reuses them
        via_nb = time.perf_counter() - start
        print(
            f"report through the notebook (its cells, then the page): {via_nb:.1f} s "
            f"({cells:.1f} s of it the cells, {via_nb - cells:.1f} s the page), "
            f"{report.stat().st_size / 1e6:.2f} MB"
        )

        root = work / "index"
        for i in range(args.runs):
            write_run(
                root,
                f"scenario-{i % 5}",
                t0 + timedelta(hours=i),
                15,
                30,
                rng,
                verdict="regressed" if i % 37 == 0 else "passed",
            )
        for label in ("cold (summaries computed)", "warm (summaries cached)"):
            start = time.perf_counter()
            index = write_index(root)
            print(
                f"index of {args.runs} runs, {label}: {time.perf_counter() - start:.1f} s, "
                f"{index.stat().st_size / 1e6:.2f} MB (target < 10 s)"
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
