"""Metrics from every source a run left: verl's file logger, the console log, TensorBoard.

Missing data is not a failed run: a console log that lost its step lines while another source
holds them is judged from that source, and the choice is named ("verl's file logger (console
log held 0 of 15 steps)"). Event files are written with the ``tensorboard`` package the reader
reads them with.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from pathlib import Path

import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util

from workbook.cli import main
from workbook.core.serialization import dump_yaml
from workbook.metrics import diagnose, load_metrics
from workbook.metrics import reading as reading_module
from workbook.metrics.console import clean, strip_prefix
from workbook.metrics.events import read_events
from workbook.metrics.model import MetricsSource
from workbook.metrics.reading import reading_of
from workbook.report.sections import reproducibility

LOGS = Path(__file__).resolve().parents[1] / "data" / "verl_logs"
ASCEND = LOGS / "04_npu-ascend-grpo-sync-agentloop.log"
Steps = dict[int, dict[str, float]]


def steps_of(count: int, first: int = 1, loss: float = 0.25) -> Steps:
    return {s: {"actor/pg_loss": loss + s / 1000, "actor/pg_clipfrac": 0.125}
            for s in range(first, first + count)}


def console_text(steps: Steps) -> str:
    lines = ["(TaskRunner pid=7) Total training steps: 15"]
    lines += [f"(TaskRunner pid=7) step:{s} - " + " - ".join(f"{k}:{v!r}" for k, v in d.items())
              for s, d in steps.items()]
    return "\n".join(lines) + "\n"


def jsonl_text(steps: Steps) -> str:
    return "".join(json.dumps({"step": s, "data": d}) + "\n" for s, d in steps.items())


def write_events(folder: Path, steps: Steps, *, as_tensor: bool = False) -> Path:
    """Event files as verl's tensorboard logger writes them: one scalar event per metric."""
    writer = EventFileWriter(str(folder))
    for step, data in steps.items():
        for tag, number in data.items():
            value = (summary_pb2.Summary.Value(tag=tag, tensor=tensor_util.make_tensor_proto(number))
                     if as_tensor else summary_pb2.Summary.Value(tag=tag, simple_value=number))
            writer.add_event(event_pb2.Event(step=step, wall_time=time.time(),
                                             summary=summary_pb2.Summary(value=[value])))
    writer.close()
    return folder


def run_dir(root: Path, *, jsonl: Steps | None = None, console: Steps | None = None,
            tensorboard: Steps | None = None, run: dict | None = None,
            total: int | None = 15) -> Path:
    path = root / "runs" / "grpo" / "20261201T000000Z-000001"
    path.mkdir(parents=True)
    if jsonl is not None:
        (path / "metrics.jsonl").write_text(jsonl_text(jsonl))
    (path / "run.log").write_text(console_text(console or {}))
    if tensorboard is not None:
        write_events(path / "tensorboard_log" / "proj" / "exp", tensorboard)
    (path / "run.json").write_text(json.dumps(run or {"status": "succeeded", "exit_code": 0}))
    params = {"name": "grpo", "profile": "npu", **({"total_training_steps": total} if total else {})}
    (path / "params.resolved.yaml").write_text(dump_yaml(params))
    return path


SOURCES = [
    # jsonl, console, tensorboard steps; chosen; steps held; what the report says
    (15, 0, None, "jsonl", {"jsonl": 15, "console": 0},
     "verl's file logger (console log held 0 of 15 steps)"),
    (15, 15, None, "jsonl", {"jsonl": 15, "console": 15},
     "verl's file logger (console log held 15 of 15 steps)"),
    (None, 15, None, "console", {"console": 15}, "the console log"),
    (None, 0, 15, "tensorboard", {"tensorboard": 15, "console": 0},
     "TensorBoard event files (console log held 0 of 15 steps)"),
    (15, 3, 15, "jsonl", {"jsonl": 15, "tensorboard": 15, "console": 3},
     "verl's file logger (TensorBoard held 15 of 15 steps; console log held 3 of 15 steps)"),
    (None, 15, 15, "tensorboard", {"tensorboard": 15, "console": 15},
     "TensorBoard event files (console log held 15 of 15 steps)"),
    (10, 15, None, "console", {"jsonl": 10, "console": 15},
     "the console log (file logger held 10 of 15 steps)"),
    (None, 0, None, "", {"console": 0}, "no source held a step"),
]


@pytest.mark.parametrize("jsonl, console, tensorboard, chosen, held, text", SOURCES,
                         ids=[f"jsonl{s[0]}-console{s[1]}-tb{s[2]}" for s in SOURCES])
def test_the_most_complete_source_names_the_metrics_and_each_source_is_counted(
        tmp_path: Path, jsonl: int | None, console: int, tensorboard: int | None, chosen: str,
        held: dict[str, int], text: str) -> None:
    path = run_dir(tmp_path, jsonl=None if jsonl is None else steps_of(jsonl),
                   console=steps_of(console), tensorboard=None if tensorboard is None
                   else steps_of(tensorboard))

    for metrics in (reading_of(path).metrics, load_metrics(path)):
        assert metrics.origin is not None
        assert (metrics.origin.chosen, metrics.origin.steps) == (chosen, held)
        assert metrics.origin.text() == text
        assert len(metrics) == max(jsonl or 0, console, tensorboard or 0)


SOURCE_TEXTS = [
    (MetricsSource("jsonl", {"jsonl": 15, "console": 0}, 15),
     "verl's file logger (console log held 0 of 15 steps)"),
    (MetricsSource("jsonl", {"jsonl": 10, "console": 5}, 15),
     "verl's file logger (file logger held 10 of 15 steps; console log held 5 of 15 steps)"),
    (MetricsSource("console", {"console": 4}, 4, ("x: unreadable (DecodeError)",)),
     "the console log; x: unreadable (DecodeError)"),
    (MetricsSource("", {}, 0), "no source held a step"),
]


@pytest.mark.parametrize("source, text", SOURCE_TEXTS, ids=[t for _, t in SOURCE_TEXTS])
def test_the_source_is_said_in_one_line(source: MetricsSource, text: str) -> None:
    assert source.text() == text
    assert json.loads(json.dumps(source.to_dict()))["chosen"] == source.chosen


def test_an_empty_console_log_beside_a_full_file_logger_is_a_succeeded_run(
        tmp_path: Path) -> None:
    """The Ascend nightly's case: 15 of 15 steps in the file logger, nothing in the log."""
    bare = run_dir(tmp_path / "bare", jsonl=steps_of(15), run={"status": "imported"})
    ended = run_dir(tmp_path / "ended", jsonl=steps_of(15))

    for path in (bare, ended):
        found = diagnose(path).to_dict()
        assert (found["status"], found["category"], found["last_step"]) == ("succeeded", "none", 15)
        assert found["metrics_source"] == {"chosen": "jsonl", "steps": {"jsonl": 15, "console": 0},
                                           "total": 15, "notes": []}


def test_log_lines_after_the_consoles_last_step_do_not_fail_a_run_another_source_finished(
        tmp_path: Path) -> None:
    noise = ("(WorkerDict pid=31) Traceback (most recent call last):\n"
             "(WorkerDict pid=31)   File \"/opt/verl/verl/utils/tracking.py\", line 80, in log\n"
             "(WorkerDict pid=31) ValueError: a logger of another kind failed\n")
    path = run_dir(tmp_path, jsonl=steps_of(15), run={"status": "imported"})
    (path / "run.log").write_text(console_text(steps_of(2)) + noise)
    assert diagnose(path).status == "succeeded"

    (path / "metrics.jsonl").write_text(jsonl_text(steps_of(5)))  # short of its 15 steps
    found = diagnose(path)
    assert (found.status, found.category) == ("failed", "python_exception")


def test_tensorboard_scalars_are_read_by_canonical_name_simple_or_tensor(tmp_path: Path) -> None:
    simple = write_events(tmp_path / "simple", {1: {"timing/gen": 1.5, "actor/pg_loss": 0.1},
                                                2: {"timing/gen": 2.5}})
    tensor = write_events(tmp_path / "tensor", {3: {"actor/pg_loss": 0.5}}, as_tensor=True)
    files = sorted(simple.glob("events.out.tfevents.*")) + sorted(tensor.glob("events.*"))

    metrics, notes = read_events(files, tmp_path)

    assert notes == [] and metrics.step_numbers == [1, 2, 3]
    assert metrics.steps[1]["timing_s/gen"] == 1.5 and metrics.original_names["timing_s/gen"] == "timing/gen"
    assert math.isclose(metrics.steps[1]["actor/pg_loss"], 0.1, rel_tol=1e-7)  # float32
    assert metrics.steps[3]["actor/pg_loss"] == 0.5
    assert metrics.sources[2]["timing_s/gen"].startswith(os.path.join("simple", "events.out."))


def test_the_file_logger_value_wins_over_tensorboards_float32(tmp_path: Path) -> None:
    precise = {1: {"actor/pg_loss": 0.123456789012}}
    path = run_dir(tmp_path, jsonl=precise, console={}, tensorboard=precise)
    metrics = reading_of(path).metrics
    assert metrics.steps[1]["actor/pg_loss"] == 0.123456789012
    assert metrics.sources[1]["actor/pg_loss"] == "metrics.jsonl:1"


@pytest.mark.parametrize("where", ["relative", "absolute"])
def test_event_files_under_the_commands_tensorboard_dir_count(tmp_path: Path, where: str) -> None:
    path = run_dir(tmp_path, console={}, run={"status": "succeeded", "exit_code": 0,
                                               "started_at": "2020-01-01T00:00:00+00:00"})
    folder = path / "tb" if where == "relative" else tmp_path / "shared-tb"
    write_events(folder, steps_of(15))
    named = "tb" if where == "relative" else str(folder)
    (path / "command.json").write_text(json.dumps({"argv": [], "env": {"TENSORBOARD_DIR": named}}))

    origin = reading_of(path).metrics.origin
    assert origin is not None and origin.steps == {"tensorboard": 15, "console": 0}


def test_event_files_a_shared_tensorboard_dir_held_before_the_run_started_are_not_its(
        tmp_path: Path) -> None:
    folder = write_events(tmp_path / "shared-tb", steps_of(15))
    path = run_dir(tmp_path, console={}, run={"status": "succeeded", "exit_code": 0,
                                               "started_at": "2999-01-01T00:00:00+00:00"})
    (path / "command.json").write_text(json.dumps({"env": {"TENSORBOARD_DIR": str(folder)}}))
    assert reading_of(path).metrics.origin.steps == {"console": 0}  # type: ignore[union-attr]


def test_a_broken_event_file_is_a_source_with_nothing_never_a_crash(tmp_path: Path) -> None:
    path = run_dir(tmp_path, jsonl=steps_of(15), console={})
    broken = path / "tensorboard_log" / "p" / "e" / "events.out.tfevents.1700000000.host.1.0"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(os.urandom(4096))

    found = diagnose(path)
    assert found.status == "succeeded"
    assert found.metrics_source is not None and found.metrics_source["chosen"] == "jsonl"
    assert found.metrics_source["steps"]["tensorboard"] == 0  # type: ignore[index]


def test_the_file_the_commands_file_logger_path_named_is_read_when_the_run_kept_none(
        tmp_path: Path) -> None:
    path = run_dir(tmp_path, console={})
    elsewhere = tmp_path / "pod" / "grpo.metrics.jsonl"
    elsewhere.parent.mkdir()
    elsewhere.write_text(jsonl_text(steps_of(15)))
    (path / "command.json").write_text(json.dumps({"env": {"VERL_FILE_LOGGER_PATH": str(elsewhere)}}))
    assert reading_of(path).metrics.origin.steps == {"jsonl": 15, "console": 0}  # type: ignore[union-attr]


def test_a_copied_run_never_reads_the_file_logger_of_the_directory_it_was_copied_from(
        tmp_path: Path) -> None:
    original = run_dir(tmp_path / "runs", jsonl=steps_of(15), console={})
    copy = tmp_path / "published" / original.name
    copy.parent.mkdir()
    shutil.copytree(original, copy)
    (copy / "command.json").write_text(json.dumps(
        {"env": {"VERL_FILE_LOGGER_PATH": str(original / "metrics.jsonl")}}))
    (copy / "metrics.jsonl").unlink()  # the copy lost its own file logger output
    assert reading_of(copy).metrics.origin.steps == {"console": 0}  # type: ignore[union-attr]


def test_every_source_is_read_and_the_log_once(tmp_path: Path) -> None:
    path = run_dir(tmp_path, jsonl=steps_of(15), console=steps_of(15), tensorboard=steps_of(15))
    before = reading_module.READS["logs"]
    first = reading_of(path)
    assert reading_of(path) is first
    assert reading_module.READS["logs"] - before == 1
    write_events(path / "tensorboard_log" / "proj" / "exp", {16: {"actor/pg_loss": 1.0}})
    assert reading_of(path).metrics.last_step == 16  # a new event file is a change: read again


def stripped(log: Path) -> str:
    """The log without its step lines (what a console that lost them leaves)."""
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(line for line in lines if not strip_prefix(clean(line)).startswith("step:"))


def test_a_real_verl_log_without_its_step_lines_is_judged_from_its_file_logger(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = load_metrics(ASCEND)
    path = run_dir(tmp_path, total=9)  # steps 1-9 train (step 0 is validation only)
    (path / "run.log").write_text(stripped(ASCEND), encoding="utf-8")
    alone = tmp_path / "alone.log"
    alone.write_text(stripped(ASCEND), encoding="utf-8")
    assert main(["check", str(alone), "--out", str(tmp_path / "alone.json")]) == 3
    said = capsys.readouterr()
    assert "No metrics: no training step completed" in said.out + said.err

    (path / "metrics.jsonl").write_text(
        "".join(json.dumps(record) + "\n" for record in original.records()))
    assert main(["check", str(path), "--out", str(tmp_path / "checks.json")]) == 0

    verdict = json.loads((tmp_path / "checks.json").read_text())
    assert verdict["diagnosis"]["status"] == "succeeded"
    assert verdict["diagnosis"]["metrics_source"]["steps"] == {"jsonl": 10, "console": 0}
    metrics = reading_of(path).metrics
    assert metrics.step_numbers == original.step_numbers
    assert metrics.steps[1]["actor/pg_clipfrac"] == 1.0500949201741605e-05
    facts = dict(reproducibility(path).data.facts)
    assert facts["metrics from"] == "verl's file logger (console log held 0 of 10 steps)"
