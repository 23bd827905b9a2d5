"""A critic loader for CPU: verl's ``load_valuehead_model`` hard-codes FlashAttention 2.

verl 0.9.1 loads the critic with ``attn_implementation="flash_attention_2"`` regardless of
``critic.model.override_config``; on CPU that fails and verl then reports a misleading
"please install trl". The FSDP engine imports the loader from ``verl.utils.model`` at call
time, so replacing that attribute (from the platform module, in every worker) is enough.
"""

from __future__ import annotations

from typing import Any

import verl.utils.model

ATTENTION = "sdpa"


def load_valuehead_model(
    local_path: str, torch_dtype: Any, model_config: Any, trust_remote_code: bool
) -> Any:
    """The same token-classification value head verl builds, with an attention CPUs have."""
    from transformers import AutoModelForTokenClassification

    return AutoModelForTokenClassification.from_pretrained(
        pretrained_model_name_or_path=local_path,
        torch_dtype=torch_dtype,
        config=model_config,
        attn_implementation=ATTENTION,
        trust_remote_code=trust_remote_code,
    )


def install() -> None:
    verl.utils.model.load_valuehead_model = load_valuehead_model
