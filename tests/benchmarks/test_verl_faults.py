"""The faults the detection benchmark loads into verl, on stand-ins with verl's own names.

verl cannot run here, so each patch is applied to a class shaped like the one it patches in
verl 0.9.1 (same module attribute, class, method and arguments, read from the installed
package's source), and the import hook to a module written for the test.
"""

from __future__ import annotations

import ast
import asyncio
import errno
import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def load_faults(monkeypatch: pytest.MonkeyPatch, fault: str | None = None) -> ModuleType:
    """benchmarks/faults/verl_faults.py, imported as verl would import it (install() runs)."""
    if fault is None:
        monkeypatch.delenv("WORKBOOK_FAULT", raising=False)
    else:
        monkeypatch.setenv("WORKBOOK_FAULT", fault)
    spec = importlib.util.spec_from_file_location(
        "verl_faults_under_test", REPO / "benchmarks" / "faults" / "verl_faults.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return load_faults(monkeypatch)


@pytest.fixture
def at_step(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """``at_step(K)``: the file logger says step K is being trained."""
    log = tmp_path / "metrics.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(log))

    def set_step(step: int) -> None:
        log.write_text("".join(json.dumps({"step": s}) + "\n" for s in range(1, step)))

    set_step(1)
    yield set_step


class vLLMHttpServer:  # noqa: N801 - verl's name
    """verl's rollout server: ``async generate(self, prompt_ids, sampling_params, request_id,
    ...)``; records what vLLM would have been asked."""

    def __init__(self, temperature: float = 1.0) -> None:
        self.config = SimpleNamespace(temperature=temperature)
        self.seen: list[dict[str, Any]] = []

    async def generate(self, prompt_ids: list[int], sampling_params: dict[str, Any],
                       request_id: str, **kwargs: Any) -> dict[str, Any]:
        self.seen.append(dict(sampling_params))
        return {"token_ids": [1, 2, 3], "request_id": request_id}


class RewardLoopWorker:
    """verl's reward worker: ``async compute_score(self, data) -> dict``."""

    async def compute_score(self, data: Any) -> dict[str, Any]:
        return {"reward_score": 0.8, "reward_extra_info": {"acc": 0.8}}


def stand_in(name: str) -> ModuleType:
    module = ModuleType(name)
    module.vLLMHttpServer = type("vLLMHttpServer", (vLLMHttpServer,), {})  # type: ignore[attr-defined]
    module.RewardLoopWorker = type("RewardLoopWorker", (RewardLoopWorker,), {})  # type: ignore[attr-defined]
    return module


def generate(server: Any, params: dict[str, Any], *, positional: bool = False) -> Any:
    if positional:
        return asyncio.run(server.generate([1], params, "r-1"))
    return asyncio.run(server.generate(request_id="r-1", prompt_ids=[1], sampling_params=params))


# --- parsing -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("hot_sampling", ("hot_sampling", 1)), ("slow_gen@2", ("slow_gen", 2)),
    ("half_reward@3", ("half_reward", 3)), ("pg_loss_x2", ("pg_loss_x2", 1)),
    ("kill_worker@3", ("kill_worker", 3)),
])
def test_every_fault_parses_with_its_step(faults: ModuleType, text: str,
                                          expected: tuple[str, int]) -> None:
    assert faults.parse(text) == expected


def test_an_unknown_fault_names_the_known_ones(faults: ModuleType) -> None:
    with pytest.raises(ValueError, match="unknown fault; known: .*hot_sampling, slow_gen, "
                                         "half_reward"):
        faults.parse("cold_sampling")


@pytest.mark.parametrize("text, expected", [
    ("slow_update,pg_loss_x2@4", [("slow_update", 1), ("pg_loss_x2", 4)]),
    (" half_reward , slow_gen@2 ", [("half_reward", 1), ("slow_gen", 2)]),
    ("nan_loss@3", [("nan_loss", 3)]),
])
def test_several_faults_parse_comma_separated(faults: ModuleType, text: str,
                                              expected: list[tuple[str, int]]) -> None:
    assert faults.parse_all(text) == expected


@pytest.mark.parametrize("text, message", [
    ("slow_update,slow_update@3", "named twice"), ("slow_update,cold", "unknown fault"),
])
def test_a_fault_list_with_a_repeat_or_an_unknown_name_is_refused(
        faults: ModuleType, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        faults.parse_all(text)


def test_two_loss_faults_wrap_one_inside_the_other(faults: ModuleType, at_step: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(faults.time, "sleep", slept.append)
    loss_fn = faults.faulty(faults.faulty(lambda **kw: (1.5, {}), "slow_update", 1),
                            "pg_loss_x2", 4)

    assert loss_fn(config=None)[0] == 1.5 and slept == [faults.SLOW_S]
    at_step(4)
    assert loss_fn(config=None)[0] == 3.0 and len(slept) == 2


def test_two_rollout_faults_on_one_method_both_apply(faults: ModuleType, at_step: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[float] = []

    async def no_wait(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr(faults.asyncio, "sleep", no_wait)
    module = stand_in("rollout")
    faults.patch_class(module, "hot_sampling", 1)
    faults.patch_class(module, "slow_gen", 1)
    faults.patch_class(module, "slow_gen", 1)  # once only
    server = module.vLLMHttpServer()

    generate(server, {"temperature": 1.0})

    assert server.seen[0]["temperature"] == 2.0 and waited == [faults.SLOW_GEN_S]


def test_without_a_fault_importing_patches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    before = list(sys.meta_path)

    load_faults(monkeypatch)

    assert sys.meta_path == before


# --- hot_sampling --------------------------------------------------------------------------------

@pytest.mark.parametrize("params, positional, temperature", [
    pytest.param({"temperature": 1.0, "top_p": 1.0}, False, 2.0, id="keyword"),
    pytest.param({"temperature": 0.7}, True, 1.4, id="positional"),
    pytest.param({"top_p": 1.0}, False, 1.2, id="server-default-0.6"),
    pytest.param({"temperature": 0}, False, 0.0, id="greedy-stays-greedy"),
])
def test_hot_sampling_doubles_the_temperature_vllm_is_asked_for(
        faults: ModuleType, at_step: Any, params: dict[str, Any], positional: bool,
        temperature: float) -> None:
    module = stand_in("rollout")
    faults.patch_class(module, "hot_sampling", 1)
    server = module.vLLMHttpServer(temperature=0.6)
    asked = dict(params)

    generate(server, asked, positional=positional)

    assert server.seen[0]["temperature"] == pytest.approx(temperature)
    assert asked == params  # the caller's request is not changed
    assert {k: v for k, v in server.seen[0].items() if k != "temperature"} == {
        k: v for k, v in params.items() if k != "temperature"}


def test_hot_sampling_from_step_k_leaves_earlier_steps_alone(faults: ModuleType,
                                                            at_step: Any) -> None:
    module = stand_in("rollout")
    faults.patch_class(module, "hot_sampling", 3)
    server = module.vLLMHttpServer()

    for step in (1, 2, 3, 4):
        at_step(step)
        generate(server, {"temperature": 1.0})

    assert [p["temperature"] for p in server.seen] == [1.0, 1.0, 2.0, 2.0]


# --- slow_gen ------------------------------------------------------------------------------------

def test_slow_gen_waits_before_each_request_without_blocking_the_others(
        faults: ModuleType, at_step: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(faults.asyncio, "sleep", sleep)
    module = stand_in("rollout")
    faults.patch_class(module, "slow_gen", 1)
    server = module.vLLMHttpServer()

    async def many() -> list[Any]:
        return await asyncio.gather(*(server.generate([1], {"temperature": 1.0}, f"r-{i}")
                                      for i in range(4)))

    outputs = asyncio.run(many())

    assert slept == [faults.SLOW_GEN_S] * 4
    assert [o["request_id"] for o in outputs] == ["r-0", "r-1", "r-2", "r-3"]
    assert server.seen == [{"temperature": 1.0}] * 4  # sampling unchanged


def test_slow_gen_is_larger_than_the_live_baselines_generation_band(faults: ModuleType) -> None:
    # the blessed live baseline's band on timing_s/gen: k sigma of its unchanged runs
    from workbook.checks.bands import K_SIGMA

    baseline = json.loads((REPO / "params" / "baselines" /
                           "gspo-tiny-live-1n1cpu-fsdp2-vllm.cpu.json").read_text())
    sigma = baseline["metrics"]["timing_s/gen"]["sigma"]
    assert faults.SLOW_GEN_S > K_SIGMA * sigma


# --- half_reward ---------------------------------------------------------------------------------

def test_half_reward_halves_every_score_and_keeps_the_rest(faults: ModuleType,
                                                           at_step: Any) -> None:
    module = stand_in("reward")
    faults.patch_class(module, "half_reward", 2)
    worker = module.RewardLoopWorker()

    first = asyncio.run(worker.compute_score(data=None))
    at_step(2)
    second = asyncio.run(worker.compute_score(None))

    assert first == {"reward_score": 0.8, "reward_extra_info": {"acc": 0.8}}
    assert second == {"reward_score": 0.4, "reward_extra_info": {"acc": 0.8}}


def test_a_method_is_never_patched_twice(faults: ModuleType, at_step: Any) -> None:
    module = stand_in("rollout")
    faults.patch_class(module, "hot_sampling", 1)
    faults.patch_class(module, "hot_sampling", 1)
    server = module.vLLMHttpServer()

    generate(server, {"temperature": 1.0})

    assert server.seen[0]["temperature"] == 2.0


# --- the import hook -----------------------------------------------------------------------------

@pytest.fixture
def target_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package ``wb_fake_verl`` with ``rollout.py`` holding a vLLMHttpServer, on sys.path."""
    package = tmp_path / "wb_fake_verl"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "rollout.py").write_text(
        "class vLLMHttpServer:\n"
        "    def __init__(self):\n        self.config = None\n        self.seen = []\n"
        "    async def generate(self, prompt_ids, sampling_params, request_id):\n"
        "        self.seen.append(dict(sampling_params))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = list(sys.meta_path)
    yield "wb_fake_verl.rollout"
    sys.meta_path[:] = saved
    for name in ("wb_fake_verl.rollout", "wb_fake_verl"):
        sys.modules.pop(name, None)


def test_a_rollout_fault_patches_its_module_when_it_is_imported_not_before(
        faults: ModuleType, at_step: Any, target_module: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    patched: list[str] = []

    def patch(module: ModuleType) -> None:
        patched.append(module.__name__)
        faults.patch_class(module, "hot_sampling", 1)

    faults.when_imported(target_module, patch)
    importlib.util.find_spec(target_module)  # looking it up imports nothing
    assert patched == [] and target_module not in sys.modules

    module = importlib.import_module(target_module)
    server = module.vLLMHttpServer()
    generate(server, {"temperature": 1.0})

    assert patched == [target_module] and server.seen[0]["temperature"] == 2.0
    assert not [f for f in sys.meta_path if isinstance(f, faults._AfterImport)]


def test_a_module_imported_already_is_patched_at_once(faults: ModuleType,
                                                      target_module: str) -> None:
    module = importlib.import_module(target_module)
    seen: list[ModuleType] = []

    faults.when_imported(target_module, seen.append)

    assert seen == [module]


def test_install_waits_for_verls_rollout_module(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = list(sys.meta_path)
    try:
        faults = load_faults(monkeypatch, "slow_gen@2")
        hooks = [f for f in sys.meta_path if type(f).__name__ == "_AfterImport"]
        assert [h.fullname for h in hooks] == [
            "verl.workers.rollout.vllm_rollout.vllm_async_server"]
        assert faults.ROLLOUT_TARGETS["slow_gen"][0] == hooks[0].fullname
    finally:
        sys.meta_path[:] = saved


# --- verl's own names ----------------------------------------------------------------------------

def verl_source(module: str) -> ast.Module:
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("verl is not installed")
    path = Path(list(spec.submodule_search_locations)[0]).parent / (
        module.replace(".", "/") + ".py")
    return ast.parse(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("fault", ["hot_sampling", "slow_gen", "half_reward"])
def test_each_target_is_an_async_method_of_verls_class(faults: ModuleType, fault: str) -> None:
    module, class_name, method = faults.ROLLOUT_TARGETS[fault]
    tree = verl_source(module)

    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    (found,) = [n for n in cls.body if isinstance(n, ast.AsyncFunctionDef) and n.name == method]
    names = [a.arg for a in found.args.args]
    if fault == "half_reward":
        assert names[:2] == ["self", "data"]
    else:  # sampling_params is generate's third positional argument, where the patch looks
        assert names[:4] == ["self", "prompt_ids", "sampling_params", "request_id"]


def test_verls_reward_result_carries_the_score_the_patch_halves() -> None:
    tree = verl_source("verl.experimental.reward_loop.reward_manager.naive")
    keys = {k.value for n in ast.walk(tree) if isinstance(n, ast.Dict)
            for k in n.keys if isinstance(k, ast.Constant)}
    assert "reward_score" in keys


def test_quota_once_fails_the_first_run_only_and_reads_as_a_full_disk(
        faults: ModuleType, tmp_path: Path) -> None:
    marker = tmp_path / "quota.hit"
    with pytest.raises(OSError, match="Disk quota exceeded") as first:
        faults.quota_once(str(marker))
    assert first.value.errno == errno.EDQUOT and marker.exists()
    faults.quota_once(str(marker))  # the quota was raised: the next run goes through
    faults.quota_once("")  # without a marker it never fires


def test_a_quota_failure_is_diagnosed_as_infrastructure() -> None:
    from workbook.metrics.failures import PATTERNS, category_of

    line = f"OSError: [Errno 122] {os.strerror(errno.EDQUOT)}: '/tmp/x/quota.hit'"
    kind = next(kind for kind, pattern in PATTERNS if pattern.search(line))
    assert category_of(kind) == "infrastructure"
