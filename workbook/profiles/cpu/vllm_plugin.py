"""vLLM general plugin: keep plain linear and embedding weights when vLLM runs on CPU.

vLLM-CPU prepacks linear weights for oneDNN after loading and replaces ``layer.weight``.
verl syncs the trainer's weights into the running engine in place (``load_weights`` on the
live model), which then fails (``'Parameter' object has no attribute 'weight_loader'``,
``BufferError``). Keeping the weights as loaded and multiplying with ``F.linear`` gives up the
fast GEMM path, which a tiny model does not need. Registered in pyproject under the
``vllm.general_plugins`` entry-point group; a no-op on every other platform.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

_PATCHED = "_workbook_plain_weights"


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
    from vllm.model_executor.layers.linear import UnquantizedLinearMethod
    from vllm.model_executor.layers.vocab_parallel_embedding import UnquantizedEmbeddingMethod

    for method in (UnquantizedLinearMethod, UnquantizedEmbeddingMethod):
        original = method.process_weights_after_loading
        if not getattr(original, _PATCHED, False):
            # monkeypatching vLLM's class on purpose; mypy forbids assigning to a method
            method.process_weights_after_loading = _keep_plain_weights(original)  # type: ignore[method-assign]
