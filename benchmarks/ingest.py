"""Metrics ingestion speed and memory against a single-regex parse, and live latency.

Builds, in a temporary folder, a *step-dense* console log of the requested size out of real
logs: the step rows of a whole real verl 0.9.1 CPU run (tests/profiles/data/gspo_cpu_run.log)
and of the console logs in tests/data/verl_logs, each with the real lines between its rows
(tqdm bars, warnings, Ray prefixes, ANSI colours, numpy reprs), repeated with ``step:N``
renumbered so every row is a new step (about 10^5 steps in 200 MB). Rows that a terminal
hard-wrapped are wrapped again at their width after renumbering, as that terminal would have.
The runs' start-up lines come once, at the top. A file-logger JSONL file is built the same way
from the real records.

Each file is then parsed in fresh child processes, alternating ``load_metrics`` with the
baseline below, and the best of ``--repeats`` runs is reported: MB/s by wall and CPU time, peak
RSS of the child (``ru_maxrss``) and the ratio workbook time / regex time. Last, live latency:
a writer appends step lines to a file that a LiveReader polls.

The baseline is the simplest parse that looks correct (verl's Ascend checker does this): for
each line containing ``step:``, ``re.findall`` of ``key:number`` pairs into a dict per step. It
is wrong on wrapped rows, glued tqdm bars and ``training/global_step:6`` fragments; it is the
speed that parsing must at least match.

Targets: >= 50 MB/s, peak RSS <= 300 MB, ratio <= 1.0, live pick-up < 1 s.

    .venv/bin/python benchmarks/ingest.py [--size-mb 200] [--repeats 3] [--poll 0.1]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "data" / "verl_logs"
JSONL_LOG = LOGS / "12_jsonl-file-logger-ppo-null-and-string-values.log"
PROFILES = ROOT / "tests" / "profiles" / "data"
CPU_RUN_LOG = PROFILES / "gspo_cpu_run.log"  # verl 0.9.1, a whole tiny CPU run
CPU_RUN_JSONL = PROFILES / "gspo_cpu_metrics.jsonl"

# The step number of a row start; not ``training/global_step:6`` nor ``val/step:3``.
STEP_NUMBER = re.compile(rb"(?<![\w/.\-])step:(\d+)")
JSONL_STEP = re.compile(rb'^\{"step":\s*(\d+)', re.MULTILINE)

WORKBOOK_CHILD = """
import json, resource, sys, time
from pathlib import Path
from workbook.metrics.loading import load_metrics
path = Path(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
run = load_metrics(path)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps({"wall": wall, "cpu": cpu, "steps": len(run), "metrics": len(run.names()),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

REGEX_CHILD = r"""
import json, re, resource, sys, time
PAIR = re.compile(
    r"([\w/@.\-]+):(?:np\.float64\()?([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"
)
wall, cpu = time.perf_counter(), time.process_time()
steps = {}
with open(sys.argv[1], encoding="utf-8", errors="replace") as handle:
    for line in handle:
        if "step:" in line:
            data = {key: float(value) for key, value in PAIR.findall(line)}
            step = data.pop("step", None)
            if step is not None:
                steps.setdefault(int(step), {}).update(data)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps({"wall": wall, "cpu": cpu, "steps": len(steps),
                  "metrics": len({k for d in steps.values() for k in d}),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


class Template:
    """One real log cut into its start-up lines and a body whose step numbers can be replaced."""

    def __init__(self, raw: bytes) -> None:
        lines = raw.split(b"\n")
        first = next(i for i, line in enumerate(lines) if _is_row_start(line))
        self.preamble = b"".join(line + b"\n" for line in lines[:first])
        body = _unwrap(lines[first:])
        self.pieces = STEP_NUMBER.split(body)  # text, number, text, number, ..., text
        self.steps = list(dict.fromkeys(self.pieces[1::2]))  # distinct, in order
        self.width = _wrap_width(lines[first:])

    def render(self, first_step: int) -> bytes:
        """The body with its steps renumbered from ``first_step`` (and re-wrapped)."""
        numbers = {old: b"%d" % (first_step + i) for i, old in enumerate(self.steps)}
        pieces = self.pieces.copy()
        pieces[1::2] = [b"step:" + numbers[old] for old in pieces[1::2]]
        body = b"".join(pieces)
        return _rewrap(body, self.width) if self.width else body


def _is_row_start(line: bytes) -> bool:
    match = STEP_NUMBER.search(line)
    return match is not None and line.find(b"step:") == match.start()


def _wrap_width(lines: list[bytes]) -> int | None:
    """The terminal width of a hard-wrapped log: most of its lines are exactly that long."""
    lengths = [len(line) for line in lines if line]
    common = max(set(lengths), key=lengths.count)
    return common if lengths.count(common) > len(lengths) // 2 else None


def _unwrap(lines: list[bytes]) -> bytes:
    """Join the physical rows of hard-wrapped step rows (a row one short lost its space)."""
    width = _wrap_width(lines)
    if width is None:
        return b"".join(line + b"\n" for line in lines)
    out: list[bytes] = []
    for line in lines:
        out.append(line)
        if len(line) == width - 1:
            out.append(b" ")
        elif len(line) != width:
            out.append(b"\n")
    return b"".join(out)


def _rewrap(body: bytes, width: int) -> bytes:
    """Cut lines longer than ``width`` as a terminal does; a copy drops a wrap's trailing space."""
    out: list[bytes] = []
    for line in body.split(b"\n"):
        while len(line) > width:
            out.append(line[:width].rstrip(b" "))
            line = line[width:]
        out.append(line)
    return b"\n".join(out)


def console_templates() -> list[Template]:
    """Every real console log that has step rows."""
    paths = [CPU_RUN_LOG] if CPU_RUN_LOG.exists() else []
    paths += sorted(p for p in LOGS.glob("*.log") if p != JSONL_LOG)
    templates = []
    for path in paths:
        raw = path.read_bytes()
        if any(_is_row_start(line) for line in raw.split(b"\n")):
            templates.append(Template(raw))
    return templates


def step_dense_console(path: Path, size: int) -> tuple[int, int]:
    """Write the step-dense console log; returns (bytes, distinct steps)."""
    templates = console_templates()
    return _write(path, size, b"".join(t.preamble for t in templates), _renders(templates))


def _renders(templates: list[Template]) -> Iterator[tuple[bytes, int]]:
    step = 1
    while True:
        for template in templates:
            yield template.render(step), len(template.steps)
            step += len(template.steps)


def step_dense_jsonl(path: Path, size: int) -> tuple[int, int]:
    """The file-logger records of the real runs, renumbered the same way."""
    records = [JSONL_LOG.read_bytes()] + ([CPU_RUN_JSONL.read_bytes()] if CPU_RUN_JSONL.exists() else [])
    block = b"".join(r if r.endswith(b"\n") else r + b"\n" for r in records)
    pieces = JSONL_STEP.split(block)
    count = len(pieces) // 2

    def renders() -> Iterator[tuple[bytes, int]]:
        step = 1
        while True:
            out = pieces.copy()
            out[1::2] = [b'{"step":%d' % (step + i) for i in range(count)]
            yield b"".join(out), count
            step += count

    return _write(path, size, b"", renders())


def _write(path: Path, size: int, head: bytes, blocks: Iterator[tuple[bytes, int]]) -> tuple[int, int]:
    written, steps = len(head), 0
    with open(path, "wb") as handle:
        handle.write(head)
        for block, count in blocks:
            if written >= size:
                break
            handle.write(block)
            written += len(block)
            steps += count
    return written, steps


def run_child(code: str, path: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], check=True, capture_output=True, text=True, env=env
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def compare(name: str, path: Path, size: int, steps: int, repeats: int, baseline: bool) -> None:
    """Parse ``path`` ``repeats`` times in fresh processes (alternating with the regex) and print."""
    mine: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    for _ in range(repeats):
        mine.append(run_child(WORKBOOK_CHILD, path))
        if baseline:
            theirs.append(run_child(REGEX_CHILD, path))
    mb = size / 2**20
    print(f"{name}: {mb:.0f} MB, {steps} distinct steps written, best of {repeats}")
    report("  workbook", mb, mine)
    if baseline:
        report("  one regex", mb, theirs)
        for kind in ("cpu", "wall"):
            ratio = min(r[kind] for r in mine) / min(r[kind] for r in theirs)
            print(f"  ratio workbook / regex ({kind} time): {ratio:.2f}")


def report(name: str, mb: float, results: list[dict[str, float]]) -> None:
    wall = min(r["wall"] for r in results)
    cpu = min(r["cpu"] for r in results)
    rss = max(r["rss_mb"] for r in results)
    last = results[-1]
    walls = ", ".join(f"{r['wall']:.2f}" for r in results)
    cpus = ", ".join(f"{r['cpu']:.2f}" for r in results)
    print(
        f"{name:<12} {mb / wall:6.1f} MB/s wall {mb / cpu:6.1f} MB/s cpu  "
        f"(wall {walls} s; cpu {cpus} s)  peak RSS {rss:6.1f} MB  "
        f"({last['steps']} steps, {last['metrics']} metrics)"
    )


def live_latency(folder: Path, poll: float, count: int = 20, pause: float = 0.25) -> list[float]:
    """Seconds from a step line's write to its yield by LiveReader.poll()."""
    sys.path.insert(0, str(ROOT))
    from workbook.metrics.live import LiveReader

    path = folder / "live.log"
    path.write_text("")
    written: dict[int, float] = {}

    def writer() -> None:
        with open(path, "a") as handle:
            for step in range(1, count + 1):
                handle.write(f"(TaskRunner pid=1) \rTraining Progress: {step}/{count}\n")
                handle.flush()
                values = f"actor/pg_loss:{step / 100} - timing_s/step:1.5"
                written[step] = time.monotonic()  # before the write: the latency includes it
                handle.write(f"(TaskRunner pid=1) step:{step} - {values}\n")
                handle.flush()
                time.sleep(pause)

    thread = threading.Thread(target=writer, daemon=True)
    reader = LiveReader(path)
    seen: dict[int, float] = {}
    thread.start()
    while thread.is_alive() or len(seen) < count:
        for step, _ in reader.poll():
            seen.setdefault(step, time.monotonic())
        if not thread.is_alive() and len(seen) < count and time.monotonic() - written[count] > 5:
            break
        time.sleep(poll)
    return [seen[s] - written[s] for s in sorted(written) if s in seen]


def calibration() -> str:
    """How fast this machine runs plain Python right now (for reading the figures)."""
    start = time.process_time()
    sum(range(30_000_000))
    took = time.process_time() - start
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"calibration: sum(range(3e7)) took {took:.2f} s CPU (an idle current desktop: about "
        f"0.3 s); load average {load:.1f} on {os.cpu_count()} CPUs"
    )


def chunk_latency(count: int = 2000) -> list[float]:
    """Seconds ChunkReader.feed_line takes to return a step line's values (the launcher's path)."""
    sys.path.insert(0, str(ROOT))
    from workbook.metrics.live import ChunkReader

    row = next(
        line
        for line in (LOGS / "04_npu-ascend-grpo-sync-agentloop.log").read_text().splitlines()
        if "step:5 " in line
    )
    head, tail = row.split("step:5", 1)
    reader, times = ChunkReader(), []
    for step in range(count):
        line = f"{head}step:{step}{tail}"
        start = time.perf_counter()
        assert reader.feed_line(line)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--poll", type=float, default=0.1, help="LiveReader poll interval (s)")
    parser.add_argument("--keep", type=Path, help="also write the step-dense log here")
    args = parser.parse_args()
    size = args.size_mb * 2**20
    print(calibration())
    with tempfile.TemporaryDirectory(prefix="wb-ingest-") as tmp:
        folder = Path(tmp)
        path = args.keep or folder / "run.log"
        written, steps = step_dense_console(path, size)
        compare("step-dense console log", path, written, steps, args.repeats, baseline=True)
        if not args.keep:
            path.unlink()
        path = folder / "metrics.jsonl"
        written, steps = step_dense_jsonl(path, size)
        compare("step-dense file-logger JSONL", path, written, steps, args.repeats, baseline=False)
        path.unlink()
        latencies = live_latency(folder, args.poll)
        print(
            f"live file (LiveReader, poll every {args.poll:.2f} s): {len(latencies)} steps, "
            f"median {statistics.median(latencies) * 1000:.0f} ms, "
            f"max {max(latencies) * 1000:.0f} ms from write to yield"
        )
        fed = chunk_latency()
        print(
            f"live stream (ChunkReader.feed_line, 76-metric line): median "
            f"{statistics.median(fed) * 1e6:.0f} us, max {max(fed) * 1e3:.1f} ms per line"
        )
    print(calibration())
    return 0


if __name__ == "__main__":
    sys.exit(main())
