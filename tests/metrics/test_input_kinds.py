"""What the loaders accept as a run: a run directory, a console log or a JSONL file, nothing else.

Binary data, a FIFO, a device, a folder with no run files and a missing path are bad input
(MetricsError, exit 2) decided from ``os.stat`` and a bounded prefix, so none of them is parsed
into an empty run, and none blocks or reads without end.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.edges import never_blocks
from workbook.errors import MetricsError
from workbook.metrics.lines import LineSplitter
from workbook.metrics.loading import SNIFF_BYTES, binary_reason, input_kind, load_metrics
from workbook.metrics.log_facts import trained
from workbook.metrics.model import RunMetrics
from workbook.metrics.reading import diagnose


@pytest.fixture(autouse=True)
def no_blocking_read() -> Iterator[None]:
    with never_blocks(20):
        yield


def random_bytes(path: Path) -> Path:
    path.write_bytes(random.Random(14).randbytes(2 * 1024 * 1024))
    return path


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def plain_folder(path: Path) -> Path:
    path.mkdir()
    (path / "notes.txt").write_text("not a run\n")
    return path


def run_log_linked_to_a_device(path: Path) -> Path:
    path.mkdir()
    (path / "run.json").write_text('{"status": "succeeded", "exit_code": 0}')
    (path / "run.log").symlink_to("/dev/zero")
    return path


def run_json_as_a_fifo(path: Path) -> Path:
    path.mkdir()
    (path / "run.log").write_text("step:1 - actor/pg_loss:0.1\n")
    os.mkfifo(path / "run.json")
    return path


def utf16_log(path: Path) -> Path:
    path.write_bytes("step:1 - actor/pg_loss:0.1\n".encode("utf-16"))
    return path


REFUSED: list[tuple[str, Callable[[Path], Path], str]] = [
    ("random-bytes", random_bytes, "binary data (NUL bytes in the first 64 KiB)"),
    ("utf16-log", utf16_log, "binary data"),
    ("fifo", fifo, "a FIFO, not a log"),
    ("device", lambda _: Path("/dev/zero"), "/dev/zero: a device"),
    ("plain-folder", plain_folder, "not a run directory (none of run.json, run.log, metrics"),
    ("missing", lambda p: p, "no such file or directory"),
    ("run-log-to-device", run_log_linked_to_a_device, "run.log: a device, not a regular file"),
    ("run-json-fifo", run_json_as_a_fifo, "run.json: a FIFO, not a regular file"),
]


@pytest.mark.parametrize("make, message", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
@pytest.mark.parametrize("reader", [input_kind, load_metrics, diagnose],
                         ids=["input_kind", "load_metrics", "diagnose"])
def test_what_is_no_run_is_refused_by_every_reader_naming_the_path(
        tmp_path: Path, make: Callable[[Path], Path], message: str,
        reader: Callable[[Path], object]) -> None:
    path = make(tmp_path / "input")

    with pytest.raises(MetricsError) as caught:
        reader(path)

    assert caught.value.exit_code == 2
    assert str(path) in caught.value.message and message in caught.value.message


ACCEPTED: list[tuple[str, bytes]] = [
    ("empty", b""),
    ("console-text", b"(TaskRunner pid=1) step:1 - actor/pg_loss:0.1\n"),
    ("tqdm-and-ansi", b"\x1b[36m(TaskRunner)\x1b[0m Training Progress:  50%|\x08\x08| 1/2\r\n"),
    ("latin1-path-in-utf8-log", b"loading /data/caf\xe9/model\n" + b"step:1 - a:1\n" * 100),
    ("utf8-cut-at-the-prefix", b"x" * (SNIFF_BYTES - 1) + "é".encode() + b"\n"),
    ("jsonl", b'{"step": 1, "data": {"actor/pg_loss": 0.1}}\n'),
]


@pytest.mark.parametrize("content", [r[1] for r in ACCEPTED], ids=[r[0] for r in ACCEPTED])
def test_text_logs_are_files_to_read(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(content)

    assert input_kind(path) == "file"
    assert binary_reason(content[:SNIFF_BYTES]) is None


@given(st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=2000))
def test_any_printable_utf8_text_is_not_binary(text: str) -> None:
    assert binary_reason(text.encode("utf-8")) is None


@pytest.mark.parametrize("marker", ["run.json", "run.log", "metrics.jsonl"])
def test_a_folder_with_any_run_file_is_a_run_directory(tmp_path: Path, marker: str) -> None:
    (tmp_path / marker).write_text("")

    assert input_kind(tmp_path) == "run directory"


def test_refusing_a_huge_binary_file_reads_only_its_prefix(tmp_path: Path) -> None:
    path = tmp_path / "big.bin"
    with open(path, "wb") as out:  # sparse: 8 GiB of NUL bytes, no disk used
        out.truncate(8 << 30)

    started = time.monotonic()
    with pytest.raises(MetricsError, match="NUL bytes"):
        load_metrics(path)
    assert time.monotonic() - started < 2


def test_a_line_without_newline_is_split_in_linear_time() -> None:
    splitter, chunk = LineSplitter(max_line=64 << 20), b"a" * 4096  # held: under its limit
    started = time.monotonic()

    for _ in range(8192):  # 32 MiB before the first newline; bytes += bytes copied 137 GB
        assert splitter.feed(chunk) == []
    lines = splitter.feed(b"\nstep:1 - a:1\n")

    assert time.monotonic() - started < 5
    assert [len(line) for line in lines] == [32 << 20, 12]


@pytest.mark.parametrize("chunks, lines", [
    ([b"ab", b"c\nd", b"e\n"], ["abc", "de"]),
    ([b"no newline at all"], ["no newline at all"]),
    ([b"\n", b"\n"], ["", ""]),
    ([b"caf\xc3", b"\xa9\n"], ["café"]),
], ids=["joined-across-chunks", "unterminated", "empty-lines", "character-split-by-a-chunk"])
def test_line_splitter_joins_what_chunks_cut(chunks: list[bytes], lines: list[str]) -> None:
    splitter = LineSplitter()

    got = [line for chunk in chunks for line in splitter.feed(chunk)] + splitter.finish()

    assert got == lines


def metrics(records: dict[int, dict[str, float]]) -> RunMetrics:
    run = RunMetrics()
    for step, values in records.items():
        for name, value in values.items():
            run.put(step, name, value, "test")
    return run


@pytest.mark.parametrize("found, expected", [
    (metrics({}), False),
    (metrics({0: {"val-core/acc/mean@1": 0.1}}), False),
    (metrics({0: {"val/test_score/nq": 0.0}}), False),
    (metrics({0: {"critic/vf_loss": 10.4}}), True),  # old verl trains at step 0
    (metrics({1: {"actor/pg_loss": 0.1}}), True),
], ids=["no-step", "validation-only", "old-validation-only", "old-verl-step-0", "a-step"])
def test_trained_means_a_non_validation_metric_at_some_step(found: RunMetrics,
                                                            expected: bool) -> None:
    assert trained(found) is expected


@pytest.mark.parametrize("lines, status", [
    ([], "failed"),
    (["Total training steps: 4"], "failed"),
    (["(TaskRunner pid=7) step:0 - val-core/acc:0.1 - val-aux/turns:2"], "failed"),
    (["step:0 - critic/vf_loss:10.4 - val/test_score:0.0"], "succeeded"),
    (["step:1 - actor/pg_loss:0.1"], "succeeded"),
], ids=["nothing", "startup-only", "validation-only", "old-verl-step-0", "a-step"])
def test_a_diagnosis_from_lines_alone_reads_training_from_the_step_lines(
        lines: list[str], status: str) -> None:
    found = diagnose(lines, exit_code=0)

    assert found.status == status
    assert (found.category == "no_metrics") is (status == "failed")
