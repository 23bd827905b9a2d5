"""A critic loader for CPU: verl's ``load_valuehead_model`` hard-codes FlashAttention 2.

verl 0.9.1 loads the critic with ``attn_implementation="flash_attention_2"`` regardless of
``critic.model.override_config``; on CPU that fails and verl then reports a misleading
"please install trl". The FSDP engine imports the loader from ``verl.utils.model`` at call
time, so replacing that attribute (from the platform module, in every worker) is enough.

The value head (``score``) is not in the checkpoint: transformers initialises it from the global
RNG, which verl does not seed outside full-determinism mode, so every run started its critic from
a different head and replayed PPO runs differed (critic values, advantages, then the actor's loss).
The head is initialised here from a fixed seed, the rest of the process's RNG left as it was.
"""

from __future__ import annotations

from typing import Any

import verl.utils.model

ATTENTION = "sdpa"
VALUE_HEAD_SEED = 0


def load_valuehead_model(
    local_path: str, torch_dtype: Any, model_config: Any, trust_remote_code: bool
) -> Any:
    """The same token-classification value head verl builds, with an attention CPUs have."""
    import torch
    from transformers import AutoModelForTokenClassification

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(VALUE_HEAD_SEED)
        return AutoModelForTokenClassification.from_pretrained(
            pretrained_model_name_or_path=local_path,
            torch_dtype=torch_dtype,
            config=model_config,
            attn_implementation=ATTENTION,
            trust_remote_code=trust_remote_code,
        )


def install() -> None:
    verl.utils.model.load_valuehead_model = load_valuehead_model
