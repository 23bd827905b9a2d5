"""Faults loaded into verl itself, to measure what the workbook's checks catch.

verl imports every module named in ``VERL_USE_EXTERNAL_MODULES`` in each of its processes (the
driver, the trainer, every Ray worker) while ``import verl`` runs; this one patches verl there
when ``WORKBOOK_FAULT`` names a fault. Nothing in verl's files changes and the scenario's
settings do not change either: the run is the scenario, with a bug in it.

In the training path (verl's policy loss, patched when ``import verl`` runs):

    pg_loss_x2      the policy loss doubled in its aggregation (a loss-scaling bug)
    ignore_clip     the clip bounds ignored: the importance ratio is never clipped
    slow_update     every policy-loss evaluation 3 s slower (at 1.2 s it made the tiny CPU
                    scenario with replayed rollouts +74 % per step, +108 % on the actor update,
                    3 runs on an idle 2-core VM; 3 s clears timing bands a shared host's noise
                    needs: a performance regression in training)
    kill_worker@K   the training worker killed (SIGKILL) once step K's update starts
    crash@K         the policy loss raises (a Python exception in the worker) at step K
    nan_loss@K      the policy loss NaN from step K on

In the rollout and reward path (patched when verl imports the module that holds it, so a process
that never generates or scores imports none of it). They change what a *generated* rollout is:
run them on the live scenario, ``params/gspo-tiny-live-1n1cpu-fsdp2-vllm.yaml``; a replayed run
never calls them.

    hot_sampling@K  the rollout server samples at twice the temperature the scenario sets (and the
                    trainer computes log-probabilities with): ``vLLMHttpServer.generate`` in
                    ``verl.workers.rollout.vllm_rollout.vllm_async_server`` scales each request's
                    ``temperature`` (a greedy request, temperature 0, stays greedy)
    slow_gen@K      every generate request 6.0 s slower, in the same method, before vLLM sees it:
                    a step's requests are sent together, so a step's generation is about 6 s
                    longer. Generation time of the tiny live scenario on a 2-core CPU comes in
                    steps of about 2 s (2.0 or 4.0 s a step; window means 2.7-4.0 s over 4
                    unchanged runs), so a 2 s delay hides in that spread (measured: not caught)
    half_reward@K   every reward halved where verl scores a response,
                    ``RewardLoopWorker.compute_score`` in ``verl.experimental.reward_loop.
                    reward_loop`` (both the agent loop's streaming reward and the trainer's batch
                    reward call it); the scenario's reward function is untouched

On the machine, not in verl (an infrastructure failure, which a suite's ``retry`` and a bisect's
``skip`` are for):

    quota_once      the run's disk quota is exceeded once: the first process that imports verl
                    while the file ``$WORKBOOK_FAULT_MARKER`` does not exist creates it and fails
                    with ``OSError: [Errno 122] Disk quota exceeded``; every later run goes
                    through (the quota was raised). Without the marker variable it never fires.

Several faults load together, comma-separated (``WORKBOOK_FAULT=slow_update,pg_loss_x2@4``): the
loss faults wrap the policy loss one inside the other, the rollout faults each wrap their method.

Workers learn the current step from the file logger: verl writes one line per finished step to
``$VERL_FILE_LOGGER_PATH``, so the step being trained is the number of lines plus one.

Use (paths as on this machine)::

    workbook run params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml \\
        -s env.PYTHONPATH=$PWD/benchmarks/faults -s env.VERL_USE_EXTERNAL_MODULES=verl_faults \\
        -s env.WORKBOOK_FAULT=pg_loss_x2
"""

from __future__ import annotations

import asyncio
import copy
import errno
import functools
import importlib.abc
import importlib.machinery
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

LOSS_FAULTS = ("pg_loss_x2", "ignore_clip", "slow_update", "kill_worker", "crash", "nan_loss")
MACHINE_FAULTS = ("quota_once",)
MARKER_ENV = "WORKBOOK_FAULT_MARKER"
# fault -> (module, class, method) it patches, as verl 0.9.1 names them
ROLLOUT_TARGETS: dict[str, tuple[str, str, str]] = {
    "hot_sampling": ("verl.workers.rollout.vllm_rollout.vllm_async_server", "vLLMHttpServer",
                     "generate"),
    "slow_gen": ("verl.workers.rollout.vllm_rollout.vllm_async_server", "vLLMHttpServer",
                 "generate"),
    "half_reward": ("verl.experimental.reward_loop.reward_loop", "RewardLoopWorker",
                    "compute_score"),
}
FAULTS = LOSS_FAULTS + tuple(ROLLOUT_TARGETS) + MACHINE_FAULTS
SLOW_S = 3.0
UNCLIPPED = 10.0  # clip ratios so wide that no sequence ratio reaches them
HOT_FACTOR = 2.0  # hot_sampling's temperature multiple
SLOW_GEN_S = 6.0  # slow_gen's delay per generate request
REWARD_FACTOR = 0.5  # half_reward's multiple
MARK = "__workbook_fault__"  # set on a patched method: never patched twice


def parse(text: str) -> tuple[str, int]:
    """``kill_worker@3`` -> ("kill_worker", 3); a fault without ``@K`` acts from step 1."""
    name, _, step = text.partition("@")
    if name not in FAULTS:
        raise ValueError(f"WORKBOOK_FAULT={text!r}: unknown fault; known: {', '.join(FAULTS)}")
    return name, int(step or 1)


def parse_all(text: str) -> list[tuple[str, int]]:
    """``slow_update,pg_loss_x2@4`` -> [("slow_update", 1), ("pg_loss_x2", 4)]; each named once."""
    found = [parse(part.strip()) for part in text.split(",") if part.strip()]
    names = [name for name, _ in found]
    if len(set(names)) != len(names):
        raise ValueError(f"WORKBOOK_FAULT={text!r}: a fault is named twice")
    return found


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


def _sampling_params(args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[str | int, Any]:
    """Where ``generate(self, prompt_ids, sampling_params, ...)`` got its sampling params."""
    if "sampling_params" in kwargs:
        return "sampling_params", kwargs["sampling_params"]
    return 2, args[2] if len(args) > 2 else None


def faulty_generate(generate: Callable[..., Any], name: str,
                    from_step: int) -> Callable[..., Any]:
    """The rollout server's ``async generate(self, prompt_ids, sampling_params, ...)`` with the
    fault in it (``hot_sampling`` or ``slow_gen``)."""

    @functools.wraps(generate)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        if current_step() < from_step:
            return await generate(*args, **kwargs)
        if name == "slow_gen":
            await asyncio.sleep(SLOW_GEN_S)
        elif name == "hot_sampling":
            where, params = _sampling_params(args, kwargs)
            if isinstance(params, dict):
                params = dict(params)  # the caller's dict stays as it was
                server_default = getattr(getattr(args[0], "config", None), "temperature", 1.0)
                params["temperature"] = float(params.get("temperature", server_default)) * (
                    HOT_FACTOR)
                if isinstance(where, str):
                    kwargs[where] = params
                else:
                    args = (*args[:where], params, *args[where + 1:])
        return await generate(*args, **kwargs)

    setattr(wrapper, MARK, (*_marks(generate), name))
    return wrapper


def _marks(method: Any) -> tuple[str, ...]:
    """The faults already put into ``method`` (a wrapper keeps those of what it wraps)."""
    marks = getattr(method, MARK, ())
    return (marks,) if isinstance(marks, str) else tuple(marks)


def faulty_reward(compute_score: Callable[..., Any], from_step: int) -> Callable[..., Any]:
    """The reward worker's ``async compute_score(self, data) -> {"reward_score", ...}`` with
    every score halved."""

    @functools.wraps(compute_score)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = await compute_score(*args, **kwargs)
        if current_step() >= from_step and isinstance(result, dict) and isinstance(
                result.get("reward_score"), (int, float)):
            result = {**result, "reward_score": result["reward_score"] * REWARD_FACTOR}
        return result

    setattr(wrapper, MARK, (*_marks(compute_score), "half_reward"))
    return wrapper


def patch_class(module: ModuleType, name: str, from_step: int) -> None:
    """Put fault ``name`` into the method its target names, in ``module`` (once)."""
    _, class_name, method = ROLLOUT_TARGETS[name]
    cls = getattr(module, class_name)
    original = cls.__dict__.get(method) or getattr(cls, method)
    if name in _marks(original):
        return
    make = faulty_reward(original, from_step) if name == "half_reward" else faulty_generate(
        original, name, from_step)
    setattr(cls, method, make)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``patch(module)`` right after ``fullname`` is imported (by whoever imports it)."""

    def __init__(self, fullname: str, patch: Callable[[ModuleType], None]) -> None:
        self.fullname, self.patch = fullname, patch

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.fullname:
            return None
        spec = None
        for finder in [f for f in sys.meta_path if f is not self]:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, exec_module = spec.loader, spec.loader.exec_module

        def exec_then_patch(module: ModuleType) -> None:
            exec_module(module)
            self.patch(module)
            if self in sys.meta_path:  # once: a module is executed once per process
                sys.meta_path.remove(self)

        loader.exec_module = exec_then_patch
        return spec


def when_imported(fullname: str, patch: Callable[[ModuleType], None]) -> None:
    """``patch(module)`` now if ``fullname`` is imported, else as soon as it is."""
    module = sys.modules.get(fullname)
    if module is not None:
        patch(module)
        return
    sys.meta_path.insert(0, _AfterImport(fullname, patch))


def quota_once(marker: str) -> None:
    """Fail once with a full disk quota: the first caller to create ``marker`` raises."""
    if not marker:
        return
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), marker)


def install() -> None:
    text = os.environ.get("WORKBOOK_FAULT", "").strip()
    if not text:
        return
    faults = parse_all(text)
    if any(name == "quota_once" for name, _ in faults):
        quota_once(os.environ.get(MARKER_ENV, ""))
    for name, from_step in faults:
        if name in ROLLOUT_TARGETS:
            when_imported(ROLLOUT_TARGETS[name][0],
                          functools.partial(patch_class, name=name, from_step=from_step))
    loss_faults = [(name, step) for name, step in faults if name in LOSS_FAULTS]
    if not loss_faults:
        return
    from verl.trainer.ppo import core_algos

    registry = core_algos.POLICY_LOSS_REGISTRY
    for mode, loss_fn in list(registry.items()):
        for name, from_step in loss_faults:
            loss_fn = faulty(loss_fn, name, from_step)
        registry[mode] = loss_fn


install()
