"""Following a run as it writes: each step once, within a second of its line."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from workbook.metrics.lines import LineSplitter
from workbook.metrics.live import ChunkReader, LiveReader

STEPS = 8


def step_line(step: int) -> str:
    values = f"actor/pg_loss:{step / 10:.3f} - timing_s/step:{step + 0.5}"
    return f"(TaskRunner pid=42) step:{step} - {values}\n"


def run_writer(
    path: Path, pieces: list[tuple[str, int | None]], written: dict[int, float], pause: float = 0.15
) -> threading.Thread:
    """Append pieces with pauses; a piece tagged with a step completes that step's line."""

    def write() -> None:
        with open(path, "a", encoding="utf-8") as handle:
            for text, step in pieces:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
                if step is not None:
                    written[step] = time.monotonic()
                time.sleep(pause)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def collect(
    reader: LiveReader,
    thread: threading.Thread,
    seen: dict[int, list[float]],
    values: dict[int, dict[str, float]],
) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        alive = thread.is_alive()
        for step, new in reader.poll():
            seen.setdefault(step, []).append(time.monotonic())
            values.setdefault(step, {}).update(new)
        if not alive:
            break
        time.sleep(0.05)


def console_pieces() -> list[tuple[str, int | None]]:
    pieces: list[tuple[str, int | None]] = [("(WorkerDict pid=7) loading weights\n", None)]
    for step in range(1, STEPS + 1):
        line = step_line(step)
        cut = len(line) // 2
        pieces.append((line[:cut], None))  # a half-written line must wait for its newline
        pieces.append((line[cut:], step))
        pieces.append(("(TaskRunner pid=42) \rTraining Progress:  50%|█████     | 1/2\n", None))
    pieces.append((step_line(STEPS), None))  # Ray job logs can repeat a line: no second yield
    return pieces


def test_live_console_steps_are_yielded_once_within_a_second(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_text("")
    reader = LiveReader(path)
    written: dict[int, float] = {}
    seen: dict[int, list[float]] = {}
    values: dict[int, dict[str, float]] = {}
    collect(reader, run_writer(path, console_pieces(), written), seen, values)
    assert sorted(seen) == list(range(1, STEPS + 1))
    assert all(len(times) == 1 for times in seen.values())
    latencies = [seen[s][0] - written[s] for s in written]
    assert max(latencies) < 1.0, latencies
    assert values[3] == {"actor/pg_loss": 0.3, "timing_s/step": 3.5}
    assert reader.metrics.step_numbers == list(range(1, STEPS + 1))
    assert reader.metrics.sources[2]["actor/pg_loss"] == "run.log:4"  # physical lines


def test_live_jsonl_steps_are_yielded_once_within_a_second(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    reader = LiveReader(path)  # before the file exists, as when a run is starting
    assert reader.poll() == []
    pieces: list[tuple[str, int | None]] = []
    for step in range(1, STEPS + 1):
        line = json.dumps({"step": step, "data": {"actor/pg_loss": step / 7, "x": None}}) + "\n"
        pieces += [(line[:10], None), (line[10:], step)]
    written: dict[int, float] = {}
    seen: dict[int, list[float]] = {}
    values: dict[int, dict[str, float]] = {}
    path.touch()
    collect(reader, run_writer(path, pieces, written, pause=0.1), seen, values)
    assert sorted(seen) == list(range(1, STEPS + 1))
    assert all(len(times) == 1 for times in seen.values())
    assert max(seen[s][0] - written[s] for s in written) < 1.0
    assert values[7]["actor/pg_loss"] == 1.0


def test_run_directory_follows_both_files_with_jsonl_winning(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_text("step:1 - actor/pg_loss:0.333 - timing_s/gen:2.0\n")
    reader = LiveReader(tmp_path)
    assert reader.poll() == [(1, {"actor/pg_loss": 0.333, "timing_s/gen": 2.0})]
    with open(tmp_path / "metrics.jsonl", "w") as handle:
        handle.write('{"step": 1, "data": {"actor/pg_loss": 0.3333333}}\n')
    assert reader.poll() == [(1, {"actor/pg_loss": 0.3333333})]
    with open(tmp_path / "run.log", "a") as handle:
        handle.write("step:1 - actor/pg_loss:0.333\nstep:2 - actor/pg_loss:0.5\n")
    assert reader.poll() == [(2, {"actor/pg_loss": 0.5})]
    assert reader.metrics.steps[1] == {"actor/pg_loss": 0.3333333, "timing_s/gen": 2.0}


def test_reader_reads_only_what_was_appended(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_text(step_line(1))
    reader = LiveReader(path)
    assert [s for s, _ in reader.poll()] == [1]
    path.write_text(step_line(1) + step_line(2))  # same prefix, one more line
    assert [s for s, _ in reader.poll()] == [2]
    assert reader.poll() == []


def test_truncated_file_starts_over(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "data": {"a": 1}}\n{"step": 2, "data": {"a": 2}}\n')
    reader = LiveReader(path)
    assert [s for s, _ in reader.poll()] == [1, 2]
    path.write_text('{"step": 1, "data": {"a": 5}}\n')  # verl reopens the file with "wb"
    assert reader.poll() == [(1, {"a": 5.0})]
    assert reader.metrics.step_numbers == [1]


def test_last_line_without_newline_counts_once_the_writer_is_done(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_text("step:1 - a:1.0\nstep:2 - a:2.0")
    reader = LiveReader(path)
    assert [s for s, _ in reader.poll()] == [1]
    assert [s for s, _ in reader.close()] == [2]


def test_follow_drains_when_done(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_text(step_line(1) + step_line(2))
    steps = [s for s, _ in LiveReader(path).follow(interval=0.01, done=lambda: True)]
    assert steps == [1, 2]


def test_chunk_reader_waits_for_complete_lines() -> None:
    reader = ChunkReader()
    line = step_line(5)
    assert reader.feed(line[:20]) == []
    assert reader.feed(line[20:] + "(TaskRunner pid=42) step:6 - actor/") == [
        (5, {"actor/pg_loss": 0.5, "timing_s/step": 5.5})
    ]
    assert reader.feed("pg_loss:0.6\n") == [(6, {"actor/pg_loss": 0.6})]
    assert reader.feed(line) == []  # a repeated line adds nothing
    assert reader.metrics.step_numbers == [5, 6]


def test_chunk_reader_feed_line_needs_no_newline() -> None:
    reader = ChunkReader()
    assert reader.feed_line("(TaskRunner pid=42) step:1 - a:1.0") == [(1, {"a": 1.0})]
    assert reader.feed_line("noise") == []
    assert reader.feed_line("step:2 - a:2.0\n") == [(2, {"a": 2.0})]


def test_chunk_reader_sniffs_jsonl_and_takes_bytes() -> None:
    reader = ChunkReader(source="metrics.jsonl")
    assert reader.feed(b'{"step": 3, "data": {"a": null}}\n{"step": 4') == [
        (3, {"a": pytest.approx(float("nan"), nan_ok=True)})
    ]
    assert reader.close() == []
    assert reader.metrics.sources[3]["a"] == "metrics.jsonl:1"


def test_live_reader_keeps_pprinted_validation_dicts() -> None:
    reader = ChunkReader()
    reader.feed_line("(TaskRunner pid=1) \"Initial validation metrics: {'val-core/acc/mean@1': 0.25}\"")
    assert reader.metrics.validation == {"initial": {"val-core/acc/mean@1": 0.25}}


@pytest.mark.parametrize("chunks", [
    [b"step:1 - a:1\n" + b"x" * 3000 + b"\nstep:2 - a:2\n"],  # the long line inside one chunk
    [b"step:1 - a:1\n", b"x" * 700, b"x" * 700, b"x" * 700, b"\nstep:2 - a:2\n"],  # across
    [b"step:1 - a:1\n", b"x" * 2000, b"y" * 5000, b"zz\nstep:2 - a:2\n"],  # skipped across
])
def test_a_line_over_the_limit_is_skipped_and_counted_never_held(chunks: list[bytes]) -> None:
    splitter = LineSplitter(max_line=1024)
    lines = [line for chunk in chunks for line in splitter.feed(chunk)] + splitter.finish()
    long_ones = [line for line in lines if len(line) > 1024]
    assert [line for line in lines if line.startswith("step:")] == ["step:1 - a:1", "step:2 - a:2"]
    assert splitter.skipped == (0 if long_ones else 1)
    assert len(splitter.pending) <= 1024


def test_a_log_with_a_huge_line_costs_a_line_limit_of_memory_not_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import tracemalloc

    from workbook.metrics.lines import MAX_LINE_BYTES, iter_lines

    log = tmp_path / "run.log"
    with log.open("wb") as out:
        out.write(b"step:1 - actor/pg_loss:0.1\n")
        for _ in range(3 * MAX_LINE_BYTES // (1 << 20)):
            out.write(b"x" * (1 << 20))
        out.write(b"\nstep:2 - actor/pg_loss:0.2\n")
    tracemalloc.start()
    try:
        lines = list(iter_lines(log))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert lines == ["step:1 - actor/pg_loss:0.1", "step:2 - actor/pg_loss:0.2"]
    assert peak < 2 * MAX_LINE_BYTES  # not 3x the line, several times over, as before
    assert "1 line(s) longer than 8 MiB skipped" in capsys.readouterr().err
