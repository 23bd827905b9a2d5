"""Metrics ingestion speed, memory and live latency (issue 3's performance targets).

Builds, in a temporary folder, a console log of the requested size by repeating the real
console logs of tests/data/verl_logs (ANSI, tqdm, hard wraps, numpy reprs, a traceback; these
are excerpts around the step lines, so about half their bytes are step rows, the worst case),
another by repeating a whole real run's log (tests/profiles/data/gspo_cpu_run.log, when
present: mostly noise, like real logs) and a JSONL file by repeating the real file-logger
records, then parses each in a fresh child process (so peak RSS is that parse's alone) and
prints MB/s and peak RSS. Then measures live latency: a writer appends step lines to a file, a
LiveReader polls it, and the time from write to yield is recorded.

Targets: >= 50 MB/s, peak RSS < 300 MB, live pick-up < 1 s.

    .venv/bin/python benchmarks/ingest.py [--size-mb 1024] [--poll 0.1]

Repeating the logs repeats their step numbers, so the parsed run stays small (steps merge):
the RSS figure measures streaming, not the size of a run's metrics. The ``unique steps`` line
shows how memory grows with the number of distinct steps.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "data" / "verl_logs"
JSONL_LOG = "12_jsonl-file-logger-ppo-null-and-string-values.log"
CPU_RUN_LOG = ROOT / "tests" / "profiles" / "data" / "gspo_cpu_run.log"  # verl 0.9.1, tiny CPU run

CHILD = """
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


def build(path: Path, block: bytes, size: int) -> int:
    """Write ``block`` repeatedly until the file reaches ``size`` bytes."""
    written = 0
    with open(path, "wb") as handle:
        while written < size:
            handle.write(block)
            written += len(block)
    return written


def unique_steps_log(path: Path, steps: int) -> int:
    """A console log with ``steps`` distinct steps (log 02's row, renumbered)."""
    text = (LOGS / "02_ppo-2node-ansi-resume-from-ckpt.log").read_text()
    row = next(line for line in text.splitlines() if "step:102 " in line)
    head, tail = row.split("step:102", 1)
    with open(path, "w") as handle:
        for step in range(1, steps + 1):
            handle.write(f"{head}step:{step}{tail}\n")
    return path.stat().st_size


def parse_in_child(path: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout)


def report(name: str, size: int, result: dict[str, float]) -> None:
    mb = size / 2**20
    speed = f"{mb / result['wall']:7.1f} MB/s wall  {mb / result['cpu']:7.1f} MB/s cpu"
    found = f"({result['steps']} steps, {result['metrics']} metrics)"
    print(f"{name:<22} {mb:8.0f} MB  {speed}  peak RSS {result['rss_mb']:6.1f} MB  {found}")


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
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--poll", type=float, default=0.1, help="LiveReader poll interval (s)")
    parser.add_argument("--unique-steps", type=int, default=20_000)
    args = parser.parse_args()
    size = args.size_mb * 2**20
    print(calibration())
    with tempfile.TemporaryDirectory(prefix="wb-ingest-") as tmp:
        folder = Path(tmp)
        console = b"".join(
            (LOGS / name).read_bytes()
            for name in sorted(os.listdir(LOGS))
            if name.endswith(".log") and name != JSONL_LOG
        )
        path = folder / "run.log"
        report("console log", build(path, console, size), parse_in_child(path))
        path.unlink()
        if CPU_RUN_LOG.exists():  # a whole real run: mostly noise lines, as real logs are
            path = folder / "cpu-run.log"
            block = CPU_RUN_LOG.read_bytes()
            report("console, CPU-run log", build(path, block, size), parse_in_child(path))
            path.unlink()
        path = folder / "metrics.jsonl"
        report(
            "file-logger JSONL",
            build(path, (LOGS / JSONL_LOG).read_bytes(), size),
            parse_in_child(path),
        )
        path.unlink()
        path = folder / "unique.log"
        report(
            f"{args.unique_steps} unique steps",
            unique_steps_log(path, args.unique_steps),
            parse_in_child(path),
        )
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
