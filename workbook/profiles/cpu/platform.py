"""verl's missing CPU platform, imported in every verl process of a ``cpu`` profile run.

verl 0.9.1 knows CUDA, NPU and ROCm only; without an accelerator it falls back to
'nvidia' and asks for NCCL. verl imports every module named in ``VERL_USE_EXTERNAL_MODULES``
while ``import verl`` runs (driver and each Ray worker), so importing this module registers
a CPU platform through verl's own registry and makes it current. It also fixes the two other
places where verl assumes an accelerator: the duplicate ``cpu:gloo`` backend string, and the
critic loader that hard-codes FlashAttention 2. Nothing in verl's installed files is edited.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType, SimpleNamespace
from typing import Any

import torch
import torch.distributed
from verl.plugin.platform import PlatformBase, PlatformRegistry, set_platform

PLATFORM_NAME = "cpu"


def _host_memory() -> tuple[int, int]:
    """(free, total) bytes of host RAM, standing in for a device's ``mem_get_info``."""
    page = os.sysconf("SC_PAGE_SIZE")
    return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page


def _device_module() -> ModuleType:
    """``torch.cpu`` plus the ``torch.cuda``-style calls verl makes on its device module.

    Memory and cache calls are no-ops (there is no separate device memory); RNG state is the
    CPU generator's, which verl seeds anyway; the device name must be a string because the
    flops counter searches it for GPU model names.
    """
    shim = ModuleType("workbook_cpu_device")
    shim.__dict__.update({k: v for k, v in vars(torch.cpu).items() if not k.startswith("__")})
    no_op: Callable[..., None] = lambda *args, **kwargs: None  # noqa: E731
    zero: Callable[..., int] = lambda *args, **kwargs: 0  # noqa: E731
    shim.__dict__.update(
        empty_cache=no_op,
        ipc_collect=no_op,
        reset_peak_memory_stats=no_op,
        set_per_process_memory_fraction=no_op,
        memory_allocated=zero,
        memory_reserved=zero,
        max_memory_allocated=zero,
        max_memory_reserved=zero,
        mem_get_info=lambda *args, **kwargs: _host_memory(),
        manual_seed=no_op,
        manual_seed_all=no_op,
        get_rng_state=lambda *args, **kwargs: torch.get_rng_state(),
        set_rng_state=lambda state, *args, **kwargs: torch.set_rng_state(state),
        get_device_name=lambda *args, **kwargs: "CPU",
        memory=SimpleNamespace(_set_allocator_settings=no_op),
    )
    return shim


_DEVICE_MODULE = _device_module()


class PlatformCPU(PlatformBase):
    """The host CPU as verl's device: gloo collectives, no IPC, one logical Ray GPU per rank.

    ``current_device`` is the string "cpu" (not 0): verl moves tensors with
    ``.to(get_device_id())``, and ``.to(0)`` would ask for an accelerator.
    """

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return _DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def current_device(self) -> Any:
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        return None

    def manual_seed_all(self, seed: int) -> None:
        return None

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        # Ray sets it for its logical GPUs; vLLM-CPU ignores it.
        return "CUDA_VISIBLE_DEVICES"

    @contextmanager
    def nvtx_range(self, msg: str) -> Iterator[None]:
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        # The workbook asks Ray for logical GPUs (``ray_init.num_gpus``) so verl's
        # resource pools can be placed; nothing ever touches a real GPU.
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        # Weights reach vLLM through shared memory instead of CUDA IPC handles.
        return False

    def cudart(self) -> Any:
        return None


def _dedup_backend(backend: str | None) -> str | None:
    """``"cpu:gloo,cpu:gloo"`` -> ``"cpu:gloo"``: verl prepends ``cpu:gloo`` to the device's."""
    if not backend or "," not in backend:
        return backend
    parts = list(dict.fromkeys(part.strip() for part in backend.split(",")))
    return ",".join(parts)


def _wrap_init_process_group(original: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(original, "_workbook_cpu", False):
        return original

    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        if args:
            args = (_dedup_backend(args[0]), *args[1:])
        elif "backend" in kwargs:
            kwargs["backend"] = _dedup_backend(kwargs["backend"])
        return original(*args, **kwargs)

    init_process_group._workbook_cpu = True  # type: ignore[attr-defined]
    return init_process_group


def install() -> None:
    """Register and select the CPU platform, and patch the process-group and critic loaders."""
    PlatformRegistry.register(platform=PLATFORM_NAME)(PlatformCPU)
    set_platform(PlatformCPU())
    torch.distributed.init_process_group = _wrap_init_process_group(
        torch.distributed.init_process_group
    )
    from workbook.profiles.cpu import critic

    critic.install()


install()
