"""Benchmark: the runs index of 1,000 synthetic runs, rendered and then opened in Chromium.

The dashboard (issue 28) adds a sparkline per scenario and turns each reason into a one-line
disclosure; this measures what that costs on the machine it runs on, which it names: the index
written cold (every run summarized, the ledger rebuilt) and warm (summaries cached), its size,
and, when Debian's Chromium is there (``make browser``), the time to open it and to filter it.
Run: ``.venv/bin/python benchmarks/index_page.py [--runs 1000] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from report import write_run  # benchmarks/report.py: a synthetic run directory

from workbook.report.index import write_index

SCENARIOS = 5
LONG_REASON = ("all 13 checks passed; 1 not measured on this hardware; 4 not comparable (another "
               "CPU: AMD EPYC (AuthenticAMD family 25 model 1), blessed on another; the machine "
               "was 8.1x busier than when the baseline was blessed)")


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
               platform.processor() or "unknown CPU")
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{cpu}, {os.cpu_count()} cores, {memory:.0f} GiB, Python {platform.python_version()}"
            f", {platform.system()} {platform.release()}")


def runs_root(root: Path, count: int, rng: random.Random) -> None:
    """``count`` nights over SCENARIOS scenarios, one in 37 regressed, each reason long; a suite
    night per day listing that day's runs."""
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for i in range(count):
        run = write_run(root, f"scenario-{i % SCENARIOS}", t0 + timedelta(hours=i), 15, 30, rng,
                        verdict="regressed" if i % 37 == 0 else "passed")
        checks = json.loads((run / "checks.json").read_text())
        checks["reason"] = LONG_REASON
        (run / "checks.json").write_text(json.dumps(checks))
        if i % SCENARIOS == SCENARIOS - 1:
            night = root / "suites" / "nightly" / f"night-{i // SCENARIOS:04d}"
            night.mkdir(parents=True)
            entries = [{"key": f"{k:02d}-scenario-{k}", "status": "passed", "exit_code": 0,
                        "reason": LONG_REASON} for k in range(SCENARIOS)]
            (night / "suite.json").write_text(json.dumps({"suite": "nightly",
                                                           "entries": entries}))


def opened(index: Path) -> None:
    """Open the index in Chromium: time to load, and to filter to one verdict."""
    if not Path("/usr/bin/chromium").exists():
        print("Chromium not installed (make browser): opening not measured")
        return
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.chromium import ARGS, CHROMIUM

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        start = time.perf_counter()
        page.goto(index.as_uri(), wait_until="load")
        loaded = time.perf_counter() - start
        start = time.perf_counter()
        page.select_option("#f-verdict", "regressed")
        shown = page.locator("#f-count").inner_text()
        filtered = time.perf_counter() - start
        print(f"opened in Chromium at 1280 px: {loaded:.2f} s to load; filtering to regressed "
              f"({shown}): {filtered:.2f} s")
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="write here and keep (default: a temp dir)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="wb-index-"))
    print(f"machine: {machine()}")
    try:
        runs_root(work / "runs", args.runs, random.Random(0))
        for label in ("cold (summaries computed, ledger rebuilt)", "warm (summaries cached)"):
            start = time.perf_counter()
            index = write_index(work / "runs")
            print(f"index of {args.runs} runs, {label}: {time.perf_counter() - start:.1f} s, "
                  f"{index.stat().st_size / 1e6:.2f} MB")
        opened(index)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
