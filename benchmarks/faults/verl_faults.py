"""Faults loaded into verl itself, to measure what the workbook's checks catch.

verl imports every module named in ``VERL_USE_EXTERNAL_MODULES`` in each of its processes (the
driver, the trainer, every Ray worker) while ``import verl`` runs; this one patches verl's
policy loss there when ``WORKBOOK_FAULT`` names a fault. Nothing in verl's files changes and the
scenario's settings do not change either: the run is the scenario, with a bug in it.

    pg_loss_x2      the policy loss doubled in its aggregation (a loss-scaling bug)
    ignore_clip     the clip bounds ignored: the importance ratio is never clipped
    slow_update     every policy-loss evaluation 1.2 s slower (about +50 % step time on the tiny
                    CPU scenario with replayed rollouts: a performance regression in training)
    kill_worker@K   the training worker killed (SIGKILL) once step K's update starts
    crash@K         the policy loss raises (a Python exception in the worker) at step K
    nan_loss@K      the policy loss NaN from step K on

Workers learn the current step from the file logger: verl writes one line per finished step to
``$VERL_FILE_LOGGER_PATH``, so the step being trained is the number of lines plus one.

Use (paths as on this machine)::

    workbook run params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml \\
        -s env.PYTHONPATH=$PWD/benchmarks/faults -s env.VERL_USE_EXTERNAL_MODULES=verl_faults \\
        -s env.WORKBOOK_FAULT=pg_loss_x2
"""

from __future__ import annotations

import copy
import functools
import os
import signal
import time
from collections.abc import Callable
from typing import Any

FAULTS = ("pg_loss_x2", "ignore_clip", "slow_update", "kill_worker", "crash", "nan_loss")
SLOW_S = 1.2
UNCLIPPED = 10.0  # clip ratios so wide that no sequence ratio reaches them


def parse(text: str) -> tuple[str, int]:
    """``kill_worker@3`` -> ("kill_worker", 3); a fault without ``@K`` acts from step 1."""
    name, _, step = text.partition("@")
    if name not in FAULTS:
        raise ValueError(f"WORKBOOK_FAULT={text!r}: unknown fault; known: {', '.join(FAULTS)}")
    return name, int(step or 1)


def current_step() -> int:
    """The step being trained: finished steps in the file logger's JSONL, plus one."""
    path = os.environ.get("VERL_FILE_LOGGER_PATH", "")
    try:
        with open(path, "rb") as handle:
            return sum(1 for line in handle if line.strip()) + 1
    except OSError:
        return 1


def faulty(loss_fn: Callable[..., Any], name: str, from_step: int) -> Callable[..., Any]:
    """``loss_fn`` (a verl policy loss) with the fault in it."""

    @functools.wraps(loss_fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if current_step() < from_step:
            return loss_fn(*args, **kwargs)
        if name == "kill_worker":
            os.kill(os.getpid(), signal.SIGKILL)
        if name == "crash":
            raise RuntimeError(f"injected fault: the policy loss failed at step {from_step}")
        if name == "ignore_clip":
            config = copy.copy(kwargs["config"])
            for field in ("clip_ratio_low", "clip_ratio_high"):
                object.__setattr__(config, field, UNCLIPPED)  # verl's configs are frozen
            kwargs["config"] = config
        if name == "slow_update":
            time.sleep(SLOW_S)
        loss, metrics = loss_fn(*args, **kwargs)
        if name == "pg_loss_x2":
            loss = loss * 2.0
        elif name == "nan_loss":
            loss = loss * float("nan")
        return loss, metrics

    return wrapper


def install() -> None:
    text = os.environ.get("WORKBOOK_FAULT", "").strip()
    if not text:
        return
    name, from_step = parse(text)
    from verl.trainer.ppo import core_algos

    registry = core_algos.POLICY_LOSS_REGISTRY
    for mode, loss_fn in list(registry.items()):
        registry[mode] = faulty(loss_fn, name, from_step)


install()
