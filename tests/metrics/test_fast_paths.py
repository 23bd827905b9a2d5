"""The fast paths of the console reader give exactly what the plain, pair-by-pair reading gives."""

from __future__ import annotations

import codecs
import importlib.util
import itertools
import random
import struct
from pathlib import Path

import pytest

import workbook.metrics.console as console
import workbook.metrics.rows as step_rows
from workbook.metrics import load_metrics
from workbook.metrics.console import ANSI_RE, CONTINUATION_RE, ConsoleParser, clean, strip_prefix
from workbook.metrics.lines import LineSplitter, iter_lines
from workbook.metrics.rows import SEP, STEP_AT_RE, StepLine, find_row, parse_row

DATA = Path(__file__).resolve().parents[1] / "data" / "verl_logs"
CPU_RUN = Path(__file__).resolve().parents[1] / "profiles" / "data" / "gspo_cpu_run.log"
# The console logs with step rows (12 is JSONL, 13 died before its first step).
LOGS = sorted(p for p in DATA.glob("*.log") if p.name[:3] not in ("12_", "13_")) + [CPU_RUN]


def slowly(text: str) -> StepLine:
    """The reference: every pair on its own (``parse_value`` per value)."""
    match = STEP_AT_RE.match(text)
    assert match is not None
    return step_rows._parse_row_slowly(int(match.group(1)), text[match.end() :], 0)


def same(row: StepLine | None, reference: StepLine) -> bool:
    """Same names, same bits (-0.0 and NaN included), same original names."""
    assert row is not None
    return (row.names, row.packed, row.originals) == (
        reference.names,
        reference.packed,
        reference.originals,
    )


def rows_of(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every row text the parser builds from a real log: single lines and joined wraps."""
    rows: list[str] = []
    for raw in path.read_text(encoding="utf-8").split("\n"):
        row = find_row(strip_prefix(clean(raw)))
        if row is not None:
            rows.append(row)
    held = console.parse_row

    def keep(text: str, line: int) -> StepLine | None:
        rows.append(text)
        return held(text, line)

    monkeypatch.setattr(console, "parse_row", keep)  # the joined rows of held (wrapped) lines
    ConsoleParser().feed_lines(path.read_text(encoding="utf-8").split("\n"))
    monkeypatch.undo()
    return rows


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[:24])
def test_every_real_row_reads_as_it_does_pair_by_pair(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = rows_of(path, monkeypatch)
    assert rows
    for text in rows:
        assert same(parse_row(text, 0), slowly(text)), text[:120]


@pytest.mark.parametrize(
    "text",
    [
        "step:3 - actor/pg_loss:nan - b:1.0",  # JSON has no nan
        "step:3 - a:True - b:np.False_ - c:np.bool_(True)",
        "step:3 - a:1. - b:.5 - c:+1 - d:1_000 - e:inf - f:-inf",
        'step:3 - a:"x" - b:1.0',  # a quoted string is not a number
        "step:3 - a\\u0041:1.0 - b:2",  # a backslash would be a JSON escape
        "step:3 - a:b:1.0 - c:2",  # a colon in a key
        "step:3 - timing/gen:1.0 - timing_s/gen:2.0",  # two names, one canonical name
        "step:3 - timing_per_token/gen:0.002 - mfu/actor:0.1 - critic/kl:-0.000",
        "step:3 - step:4 - a:1.0",
        "step:3 - a:1" + "0" * 400,  # beyond a double: inf, not an error
        "step:3 - a:null - b:[1] - c:{} - d:2",
        "step:3 - a:np.float64(0.1) - b:np.int32(2) - lr(1e-3):0.5",
        "step:3 - a:np.float64(0.1",  # cut inside a numpy repr
        "step:3 - a:1.0 - b:",  # cut after a key
        "step:3 - a:1.0 -",
        "step:3 - a:1.0 - ",
        "step:3 - a:1.0  - b:2.0",
        "step:3 - a: 1.0 - b :2.0",
        "step:3 - a:1.0 - a:2.0",
        "step:3 - ключ/метрика:1.5 - b:2",
        "step:3 - a:true - b:false",  # lowercase booleans count like Python's
        "step:3",
    ],
)
def test_irregular_rows_read_as_they_do_pair_by_pair(text: str) -> None:
    assert same(parse_row(text, 0), slowly(text))


def continues_as_before(line: str) -> bool:
    """The shape test ``CONTINUATION_RE`` replaced, as it was written with str methods."""
    body = line[1:] if line.startswith(" ") else line
    body = body[2:] if body.startswith("- ") else body
    space = body.find(" ")
    return not (
        space == 0 or (space > 0 and not body.startswith(SEP, space) and body[space:] != " -")
    )


def test_continuation_regex_is_the_shape_test_it_replaced() -> None:
    for size in range(1, 8):
        for chars in itertools.product(" -a:1", repeat=size):
            line = "".join(chars)
            assert bool(CONTINUATION_RE.match(line)) == continues_as_before(line), repr(line)


def test_colour_codes_go_as_one_regex_over_the_whole_line_would_take_them() -> None:
    rng = random.Random(3)
    pieces = ["\x1b[36m", "\x1b[0m", "\x1b[1;36m", "\x1b[", "\x1b", "[0m", "step:1 - a:1", " ", "m"]
    for _ in range(20_000):
        line = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 8)))
        assert clean(line) == ANSI_RE.sub("", line), repr(line)


def test_lines_split_from_bytes_as_an_incremental_decoder_would() -> None:
    text = "a\rb\n(é) step:1 - x:1\n\n\xff tail".encode() + b"\xe2\x96\x88\x80\nend"
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    expected = (decoder.decode(text) + decoder.decode(b"", final=True)).split("\n")
    for cut in range(len(text) + 1):
        splitter = LineSplitter()
        lines = splitter.feed(text[:cut]) + splitter.feed(text[cut:]) + splitter.finish()
        assert lines == expected, cut
        kept = LineSplitter(keepends=True)
        lines = kept.feed(text[:cut]) + kept.feed(text[cut:]) + kept.finish()
        assert [line.rstrip("\n") for line in lines] == expected, cut


def test_text_and_bytes_can_be_fed_to_one_splitter() -> None:
    splitter = LineSplitter()
    assert splitter.feed("step:1 - a") == []
    assert splitter.feed(b":1\nstep:2") == ["step:1 - a:1"]
    assert splitter.pending == "step:2"
    assert splitter.feed(" - a:2\n") == ["step:2 - a:2"]
    assert splitter.finish() == []


def test_iter_lines_keeps_newlines_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_bytes(b"one\r\ntwo\n\nthree")
    assert list(iter_lines(path)) == ["one\r", "two", "", "three"]
    assert list(iter_lines(path, keepends=True)) == ["one\r\n", "two\n", "\n", "three"]


def _benchmark() -> object:
    spec = importlib.util.spec_from_file_location(
        "ingest_benchmark", Path(__file__).resolve().parents[2] / "benchmarks" / "ingest.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmarks_step_dense_logs_hold_every_step_they_were_built_with(
    tmp_path: Path,
) -> None:
    bench = _benchmark()
    log, jsonl = tmp_path / "run.log", tmp_path / "metrics.jsonl"
    _, steps = bench.step_dense_console(log, 600_000)  # type: ignore[attr-defined]
    run = load_metrics(log)
    assert len(run) == steps and run.step_numbers == list(range(1, steps + 1))
    widths = {len(run.steps[s]) for s in run.step_numbers}
    original = {len(load_metrics(p).steps[s]) for p in LOGS for s in load_metrics(p).step_numbers}
    assert widths <= original  # renumbering and re-wrapping lost no metric of any row
    _, steps = bench.step_dense_jsonl(jsonl, 300_000)  # type: ignore[attr-defined]
    assert len(load_metrics(jsonl)) == steps


def test_packed_values_are_native_doubles() -> None:
    row = parse_row("step:1 - a:0.1 - b:-0.000", 0)
    assert row is not None and row.packed == struct.pack("2d", 0.1, -0.0)
    assert row.values == {"a": 0.1, "b": -0.0}
