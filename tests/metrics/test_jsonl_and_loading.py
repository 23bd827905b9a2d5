"""The file logger's JSONL, and load_metrics over files and run directories."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from workbook.errors import MetricsError
from workbook.metrics import load_metrics
from workbook.metrics.jsonl import read_jsonl


def test_null_is_nan_strings_and_nested_values_are_not_metrics() -> None:
    run = read_jsonl(
        ['{"step":1,"data":{"a":null,"b":"schedule","c":"","d":{"x":1},"e":[1],"f":2,"g":true}}']
    )
    assert math.isnan(run.steps[1]["a"])
    assert run.steps[1]["f"] == 2.0 and run.steps[1]["g"] == 1.0
    assert set(run.steps[1]) == {"a", "f", "g"}


def test_truncated_last_line_is_ignored() -> None:
    lines = [
        '{"step": 1, "data": {"x": 1.5}}',
        '{"step": 2, "data": {"x": 2.5}}',
        '{"step": 3, "data": {"x": 3.',
    ]
    run = read_jsonl(lines)
    assert run.steps == {1: {"x": 1.5}, 2: {"x": 2.5}}


def test_spaced_and_compact_json_and_nan_literals_read_alike() -> None:
    run = read_jsonl(
        [
            '{"step": 1, "data": {"x": 1e-6, "y": 0.00001}}',
            '{"step":2,"data":{"x":NaN,"y":Infinity}}',
        ]
    )
    assert run.steps[1] == {"x": 1e-6, "y": 1e-05}
    assert math.isnan(run.steps[2]["x"]) and run.steps[2]["y"] == math.inf


def test_lines_that_are_not_records_are_skipped() -> None:
    run = read_jsonl(
        [
            "",
            "[1, 2]",
            '{"step": "x", "data": {}}',
            '{"data": {"a": 1}}',
            '{"step": 4, "data": {"a": 1}}',
        ]
    )
    assert run.step_numbers == [4]
    assert run.sources[4]["a"] == "metrics.jsonl:5"


def test_jsonl_names_are_canonical_with_originals_kept() -> None:
    run = read_jsonl(
        ['{"step": 1, "data": {"perf/max_memory_allocated_gb": 4.2, "timing/gen": 3.0}}']
    )
    assert run.steps[1] == {"actor/perf/max_memory_allocated_gb": 4.2, "timing_s/gen": 3.0}
    assert run.original_names == {
        "actor/perf/max_memory_allocated_gb": "perf/max_memory_allocated_gb",
        "timing_s/gen": "timing/gen",
    }


def test_records_round_trip_with_nan_as_null() -> None:
    run = read_jsonl(
        ['{"step": 2, "data": {"a": null, "b": 0.5}}', '{"step": 1, "data": {"b": 0.25}}']
    )
    records = list(run.records())
    assert records == [{"step": 1, "data": {"b": 0.25}}, {"step": 2, "data": {"a": None, "b": 0.5}}]
    again = read_jsonl(json.dumps(r) for r in records)
    assert again.steps[1] == run.steps[1] and math.isnan(again.steps[2]["a"])


def write_run_dir(root: Path) -> Path:
    run_dir = root / "scenario" / "20261129T181829Z-abcdef"
    run_dir.mkdir(parents=True)
    (run_dir / "metrics.jsonl").write_text(
        '{"step": 2, "data": {"actor/pg_loss": 0.123456789, "actor/pg_clipfrac": null}}\n'
        '{"step": 3, "data": {"actor/pg_loss": 0.3}}\n'
    )
    (run_dir / "run.log").write_text(
        "(TaskRunner pid=5) step:1 - actor/pg_loss:0.100 - timing_s/gen:1.5\n"
        "(TaskRunner pid=5) step:2 - actor/pg_loss:0.123 - timing_s/gen:2.5"
        " - actor/pg_clipfrac:0.200\n"
        "(TaskRunner pid=5) step:3 - actor/pg_loss:0.300 - timing_s/gen:3.5\n"
        "(TaskRunner pid=5) \"Initial validation metrics: {'val/acc': 0.5}\"\n"
    )
    return run_dir


def test_run_directory_jsonl_wins_and_run_log_fills_gaps(tmp_path: Path) -> None:
    run = load_metrics(write_run_dir(tmp_path))
    assert run.step_numbers == [1, 2, 3]
    assert run.steps[2]["actor/pg_loss"] == 0.123456789
    assert math.isnan(run.steps[2]["actor/pg_clipfrac"])  # NaN from the JSONL is a value, not a gap
    assert run.steps[2]["timing_s/gen"] == 2.5
    assert run.steps[1] == {"actor/pg_loss": 0.1, "timing_s/gen": 1.5}
    assert run.sources[2]["actor/pg_loss"] == "metrics.jsonl:1"
    assert run.sources[2]["timing_s/gen"] == "run.log:2"
    assert run.sources[1]["actor/pg_loss"] == "run.log:1"
    assert run.validation == {"initial": {"val/acc": 0.5}}


def test_run_directory_with_only_a_log(tmp_path: Path) -> None:
    run_dir = write_run_dir(tmp_path)
    (run_dir / "metrics.jsonl").unlink()
    assert load_metrics(run_dir).steps[2]["actor/pg_loss"] == 0.123


def test_jsonl_is_recognised_by_content_not_name(tmp_path: Path) -> None:
    path = tmp_path / "saved.log"
    path.write_text('\n{"step": 7, "data": {"x": 1}}\n')
    assert load_metrics(path).steps == {7: {"x": 1.0}}
    assert load_metrics(path).sources[7]["x"] == "saved.log:2"


@pytest.mark.parametrize("make", ["missing", "empty_dir"])
def test_unreadable_paths_raise_metrics_error(tmp_path: Path, make: str) -> None:
    path = tmp_path / "nothing"
    if make == "empty_dir":
        path.mkdir()
    with pytest.raises(MetricsError, match="nothing"):
        load_metrics(path)


def test_empty_log_is_an_empty_run_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_text("")
    assert len(load_metrics(path)) == 0


def test_lone_carriage_returns_do_not_split_physical_lines(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_bytes(b"bar 1/2\rbar 2/2\rstep:1 - a:1.0\nstep:2 - a:\xff2.0 - b:3.0\n")
    run = load_metrics(path)
    assert run.steps == {1: {"a": 1.0}, 2: {"b": 3.0}}
    assert run.sources[2]["b"] == "run.log:2"
