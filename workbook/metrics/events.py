"""Reader for TensorBoard event files: the one module that imports ``tensorboard``.

verl's TensorBoard logger (``trainer.logger=[...,'tensorboard']``) writes every metric of a step
with torch's ``SummaryWriter.add_scalar``: one scalar event per metric, its value a float32
``simple_value``, its step the global step. Other writers store a scalar as a 0-d tensor; both
are read, anything else (histograms, images, text) is not a metric. Names are canonical as in
the other readers. A truncated last record (a run killed mid-write) ends the file quietly; a
file that cannot be read at all is named in a note, never fatal: it is one source of several.

``tensorboard`` is imported when event files are read, not with the package: it pulls in numpy
and protobuf, which a run without event files never needs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbook.metrics.model import RunMetrics
from workbook.metrics.names import plan_for

NOT_INSTALLED = ("TensorBoard event files not read: the tensorboard package is not installed "
                 "(pip install 'verl-workbook[tensorboard]')")


def read_events(paths: Sequence[Path], base: Path) -> tuple[RunMetrics, list[str]]:
    """The scalars of ``paths`` (later files win for the same step and metric), and a note per
    file that could not be read; sources name the file relative to ``base`` and the record."""
    run = RunMetrics()
    if not paths:
        return run, []
    try:
        from tensorboard.backend.event_processing.event_file_loader import (
            LegacyEventFileLoader,
        )
        from tensorboard.util import tensor_util
    except ImportError:
        return run, [NOT_INSTALLED]
    notes: list[str] = []
    for path in paths:
        name = _relative(path, base)
        try:
            _read_file(LegacyEventFileLoader(str(path)).Load(), tensor_util, run, name)
        except Exception as exc:  # noqa: BLE001 - a broken file is a source that holds nothing
            notes.append(f"{name}: unreadable ({type(exc).__name__})")
    return run, notes


def _read_file(events: Any, tensor_util: Any, run: RunMetrics, name: str) -> None:
    """A file's scalars into ``run``, a step at a time (a writer logs a step's metrics one
    after another, so one row per step, not one per value)."""
    step: int | None = None
    values: dict[str, float] = {}
    first = 0
    for index, event in enumerate(events, start=1):
        if not event.HasField("summary"):
            continue
        if event.step != step:
            _put(run, step, values, f"{name}:{first}")
            step, values, first = int(event.step), {}, index
        for value in event.summary.value:
            number = _scalar(value, tensor_util)
            if number is not None and value.tag:
                values[value.tag] = number
    _put(run, step, values, f"{name}:{first}")


def _put(run: RunMetrics, step: int | None, values: dict[str, float], source: str) -> None:
    if step is None or not values:
        return
    plan = plan_for(tuple(values))
    numbers = list(values.values())
    for position, scale in plan.scales:
        numbers[position] *= scale
    data = dict(zip(plan.names, numbers, strict=True))  # two tags, one canonical name: the later
    run.put_many(step, data, source, plan.originals)


def _scalar(value: Any, tensor_util: Any) -> float | None:
    """A summary value's number: a ``simple_value``, or a numeric 0-d tensor; None otherwise."""
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind != "tensor" or len(value.tensor.tensor_shape.dim):
        return None
    try:
        array = tensor_util.make_ndarray(value.tensor)
    except (TypeError, ValueError):
        return None
    if array.dtype.kind not in "fiub" or array.size != 1:
        return None
    return float(array.item())


def _relative(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path, base)
    except ValueError:
        return str(path)
