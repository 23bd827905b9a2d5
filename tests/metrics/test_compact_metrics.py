"""RunMetrics stores a step as its logged row, yet reads like ``{step: {metric: value}}``."""

from __future__ import annotations

import json
import math
import tracemalloc

import pytest

from workbook.metrics import RunMetrics
from workbook.metrics.jsonl import read_jsonl
from workbook.metrics.model import pack


def test_views_compare_equal_to_the_dicts_they_stand_for() -> None:
    run = RunMetrics()
    run.put_many(2, {"a": 1.0, "b": -0.0}, "run.log:3")
    run.put_many(1, {"a": 0.5}, "run.log:1")
    assert run.steps == {2: {"a": 1.0, "b": -0.0}, 1: {"a": 0.5}}
    assert run.sources == {2: {"a": "run.log:3", "b": "run.log:3"}, 1: {"a": "run.log:1"}}
    assert math.copysign(1, run.steps[2]["b"]) == -1
    assert run.steps[2].get("b") == 0.0 and run.steps[2].get("zzz") is None
    assert run.steps[2].get("zzz", 7.0) == 7.0 and "a" in run.steps[2] and "zzz" not in run.steps[2]
    assert list(run.steps) == [2, 1] and sorted(run.steps) == [1, 2] and run.steps
    assert not RunMetrics().steps and RunMetrics().sources.get(5, {}) == {}
    assert repr(run.steps[1]) == "{'a': 0.5}"
    with pytest.raises(KeyError):
        run.steps[2]["zzz"]
    with pytest.raises(TypeError):
        run.steps[1]["a"] = 2.0  # type: ignore[index]


def test_a_later_row_for_a_step_merges_and_keeps_each_values_source() -> None:
    run = RunMetrics()
    run.put_many(250, {"train/loss": 0.58, "x": 1.0}, "run.log:1")
    view = run.steps[250]
    run.put_many(250, {"val/loss": 0.57, "x": 2.0}, "run.log:3")
    assert view == {"train/loss": 0.58, "x": 2.0, "val/loss": 0.57}  # a view follows its step
    assert list(run.steps[250]) == ["train/loss", "x", "val/loss"]
    assert run.sources[250] == {"train/loss": "run.log:1", "x": "run.log:3", "val/loss": "run.log:3"}
    run.put_many(250, {"train/loss": 0.1, "x": 3.0, "val/loss": 0.2}, "run.log:9")
    assert run.sources[250] == dict.fromkeys(["train/loss", "x", "val/loss"], "run.log:9")


def test_put_many_reports_only_new_or_changed_values_and_nan_equals_nan() -> None:
    run = RunMetrics()
    nan = float("nan")
    assert run.put_many(1, {"a": 1.0, "b": nan}, "s", changes=True) == {"a": 1.0, "b": nan}
    assert run.put_many(1, {"a": 1.0, "b": nan}, "s", changes=True) == {}
    assert run.put_many(1, {"a": 2.0, "c": 3.0}, "s", changes=True) == {"a": 2.0, "c": 3.0}
    assert run.put_many(1, {"a": 5.0}, "s") == {}  # without changes=True nothing is computed


def test_an_empty_record_still_makes_its_step() -> None:
    run = RunMetrics()
    run.put_many(3, {}, "metrics.jsonl:4")
    run.put_many(3, {}, "metrics.jsonl:5")
    assert len(run) == 1 and run.steps[3] == {} and run.last_step == 3
    run.put(3, "a", 1.0, "run.log:1", original="old/a")
    assert run.steps[3] == {"a": 1.0} and run.original_names == {"a": "old/a"}


def test_names_series_has_records_and_round_trip() -> None:
    run = RunMetrics()
    run.put_many(2, {"b": 2.0, "a": math.inf}, "s")
    run.put_many(1, {"a": 1.0}, "s")
    run.validation["final"] = {"val/acc": 0.5}
    assert run.names() == ["a", "b"] and run.has("b") and not run.has("c")
    assert run.series("a") == {1: 1.0, 2: math.inf} and list(run.series("b")) == [2]
    assert run.step_numbers == [1, 2] and run.last_step == 2 and len(run) == 2
    records = list(run.records())
    assert records == [{"step": 1, "data": {"a": 1.0}}, {"step": 2, "data": {"a": None, "b": 2.0}}]
    again = read_jsonl((json.dumps(r) for r in records), "x")
    assert again.steps[1] == {"a": 1.0} and math.isnan(again.steps[2]["a"])
    assert again.sources[2]["b"] == "x:2" and again != run and run == run
    assert "2 steps" in repr(run)


def test_fill_from_adds_only_what_is_missing_with_its_source_and_original_name() -> None:
    jsonl, log = RunMetrics(), RunMetrics()
    jsonl.put_many(2, {"actor/pg_loss": 0.123456789}, "metrics.jsonl:1")
    log.put_many(1, {"actor/pg_loss": 0.1}, "run.log:1")
    log.put_many(2, {"actor/pg_loss": 0.123, "timing_s/gen": 2.5}, "run.log:2", {"timing_s/gen": "timing/gen"})
    log.validation["final"] = {"v": 1.0}
    jsonl.fill_from(log)
    assert jsonl.steps == {2: {"actor/pg_loss": 0.123456789, "timing_s/gen": 2.5}, 1: {"actor/pg_loss": 0.1}}
    assert jsonl.sources[2] == {"actor/pg_loss": "metrics.jsonl:1", "timing_s/gen": "run.log:2"}
    assert jsonl.original_names == {"timing_s/gen": "timing/gen"} and jsonl.validation == {"final": {"v": 1.0}}
    log.put_many(1, {"actor/pg_loss": 9.0}, "run.log:7")
    assert jsonl.steps[1]["actor/pg_loss"] == 0.1  # rows copied, not shared with the other run


def test_put_row_is_put_many_without_the_dict() -> None:
    fast, slow = RunMetrics(), RunMetrics()
    names = ("a", "b")
    for step in range(3):
        fast.put_row(step, names, pack([step, step / 2]), f"run.log:{step}")
        slow.put_many(step, {"a": step, "b": step / 2}, f"run.log:{step}")
    assert fast == slow


def test_a_step_dense_run_costs_bytes_per_value_not_objects() -> None:
    """10^4 steps of 100 metrics: a dict per step and a source per value took 65 MB (more with
    a float object per parsed value); rows of packed doubles sharing their names take 10 MB."""
    names = tuple(f"group/metric_{i}" for i in range(100))
    values = [i / 7 for i in range(100)]
    tracemalloc.start()
    try:
        run = RunMetrics()
        for step in range(10_000):
            run.put_row(step, names, pack(values), f"run.log:{step}")
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(run) == 10_000 and run.steps[9_999]["group/metric_7"] == 1.0
    assert size < 16 * 2**20, f"{size / 2**20:.1f} MB"
