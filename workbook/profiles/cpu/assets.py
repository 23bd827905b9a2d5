"""Tiny local assets for the ``cpu`` profile: a model, a tokenizer, GSM8K-style data, a reward.

No weights can be downloaded on the machines this runs on, and verl needs a real Hugging Face
model directory and parquet files. Everything here is generated from fixed seeds in seconds:

    <cache>/v<ASSETS_VERSION>/
        model/        Qwen2, hidden 128, 2 heads (head_dim 64: vLLM's CPU attention refuses 16),
                      2 layers, random weights (safetensors) and a byte-level BPE tokenizer
                      trained here, with a chat template
        data/train.parquet, data/test.parquet   verl's GSM8K layout
        reward.py     dense reward (``compute_score``: fraction of digits in the response)
        COMPLETE      written last; its presence means the cache is usable

The cache is built in a temporary sibling directory and renamed into place, so an interrupted
build never leaves a half cache, and a second call only checks the marker.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from workbook.errors import LaunchError
from workbook.profiles.cpu import reward

# Bump when anything below changes what gets built: old caches are then left alone.
ASSETS_VERSION = "1"
MARKER = "COMPLETE"
REWARD_FUNCTION = "compute_score"
DATA_SOURCE = "openai/gsm8k"
TRAIN_ROWS = 64
TEST_ROWS = 16
SEED = 7

VOCAB_SIZE = 400
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


class ModelConfig(TypedDict):
    """The tiny model's ``Qwen2Config`` arguments (besides the token ids)."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    max_position_embeddings: int
    rope_parameters: dict[str, str | float]
    tie_word_embeddings: bool


MODEL_CONFIG: ModelConfig = {
    "vocab_size": VOCAB_SIZE,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "max_position_embeddings": 1024,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
    "tie_word_embeddings": False,
}
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'


@dataclass(frozen=True)
class Assets:
    """Where the built assets are; the fields map one to one onto scenario fields."""

    root: Path
    model_dir: Path
    train_file: Path
    val_file: Path
    reward_file: Path
    reward_function: str = REWARD_FUNCTION


def default_cache_dir() -> Path:
    """``$WORKBOOK_ASSETS``, else ``$WORKBOOK_CACHE``, else ``~/.cache/verl-workbook/assets``."""
    chosen = os.environ.get("WORKBOOK_ASSETS") or os.environ.get("WORKBOOK_CACHE")
    return Path(chosen or "~/.cache/verl-workbook/assets").expanduser()


def layout(root: Path) -> Assets:
    """The paths of a cache rooted at ``root`` (nothing is checked or built)."""
    return Assets(
        root=root,
        model_dir=root / "model",
        train_file=root / "data" / "train.parquet",
        val_file=root / "data" / "test.parquet",
        reward_file=root / "reward.py",
    )


def ensure_assets(cache_dir: Path | None = None) -> Assets:
    """Build the assets once into ``cache_dir`` and return their paths; later calls only look."""
    root = Path(cache_dir or default_cache_dir()).expanduser().resolve() / f"v{ASSETS_VERSION}"
    if (root / MARKER).is_file():
        return layout(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.build-", dir=root.parent))
    try:
        _build(staging)
        (staging / MARKER).write_text(json.dumps({"version": ASSETS_VERSION}) + "\n")
        if root.exists() and not (root / MARKER).is_file():
            shutil.rmtree(root)  # a marker-less leftover: never trust it
        try:
            staging.rename(root)
        except OSError:
            if not (root / MARKER).is_file():  # not a concurrent builder that won the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return layout(root)


def ensure_assets_with(python: str, cache_dir: Path | None = None) -> None:
    """:func:`ensure_assets`, built by the training interpreter ``python`` when it is not this
    one: building needs torch and transformers, the training environment's, never imported
    into the workbook's own (which may not have them)."""
    root = Path(cache_dir or default_cache_dir()).expanduser().resolve() / f"v{ASSETS_VERSION}"
    if (root / MARKER).is_file() or _is_this(python):
        ensure_assets(cache_dir)
        return
    env = dict(os.environ, **({"WORKBOOK_ASSETS": str(Path(cache_dir).expanduser())}
                              if cache_dir else {}))
    done = subprocess.run([python, "-m", "workbook", "assets"], env=env, capture_output=True,
                          text=True, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0 or not (root / MARKER).is_file():
        said = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise LaunchError(f"{python} -m workbook assets failed (exit {done.returncode}): {said}; "
                          "the cpu profile's training environment needs the workbook with its "
                          "[cpu] extra")


def _is_this(python: str) -> bool:
    """Whether ``python`` is this very interpreter (the path, not where its symlinks lead: a
    venv's python links to the base interpreter, which has none of the venv's packages)."""
    found = shutil.which(python)
    return found is not None and os.path.abspath(found) == os.path.abspath(sys.executable)


def _build(root: Path) -> None:
    assets = layout(root)
    questions = _questions(TRAIN_ROWS + TEST_ROWS)
    _build_tokenizer(assets.model_dir, _corpus(questions))
    _build_model(assets.model_dir)
    _write_parquet(assets.train_file, questions[:TRAIN_ROWS], "train")
    _write_parquet(assets.val_file, questions[TRAIN_ROWS:], "test")
    shutil.copyfile(reward.__file__, assets.reward_file)


def _questions(count: int) -> list[tuple[str, str]]:
    """(question, answer) pairs of small arithmetic, reproducible from ``SEED``."""
    rng = random.Random(SEED)
    forms = (
        ("Tom has {a} apples and buys {b} more. How many apples does he have?", int.__add__),
        ("A box holds {a} pens. {b} pens are taken out. How many pens are left?", int.__sub__),
        ("There are {a} rows of {b} chairs. How many chairs are there?", int.__mul__),
    )
    pairs = []
    for _ in range(count):
        text, op = rng.choice(forms)
        a, b = rng.randint(10, 99), rng.randint(1, 9)
        pairs.append((text.format(a=a, b=b), str(op(a, b))))
    return pairs


def _corpus(questions: list[tuple[str, str]]) -> list[str]:
    """Text the tokenizer learns its merges from: the prompts and worked answers."""
    lines = [f"{q} {INSTRUCTION}" for q, _ in questions]
    lines += [f"The answer is {a}. #### {a}" for _, a in questions]
    lines += [" ".join(str(n) for n in range(i, i + 20)) for i in range(0, 200, 20)]
    return lines


def _build_tokenizer(model_dir: Path, corpus: list[str]) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=MODEL_CONFIG["max_position_embeddings"],
    )
    wrapped.chat_template = CHAT_TEMPLATE
    wrapped.save_pretrained(model_dir)


def _build_model(model_dir: Path) -> None:
    import torch
    from transformers import AutoTokenizer, GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    ids: dict[str, int] = {}
    for name in SPECIAL_TOKENS:
        token_id = tokenizer.convert_tokens_to_ids(name)
        assert isinstance(token_id, int)  # one token in, one id out
        ids[name] = token_id
    config = Qwen2Config(
        **MODEL_CONFIG,
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    torch.manual_seed(SEED)
    model = Qwen2ForCausalLM(config).float()  # float32; transformers mistypes `.to` (wraps)
    model.generation_config = GenerationConfig(
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id
    )
    model.save_pretrained(model_dir, safe_serialization=True)


def _write_parquet(path: Path, questions: list[tuple[str, str]], split: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {
            "data_source": DATA_SOURCE,
            "prompt": [{"role": "user", "content": f"{question} {INSTRUCTION}"}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": answer},
            "extra_info": {"split": split, "index": index, "question": question,
                           "answer": f"#### {answer}"},
        }
        for index, (question, answer) in enumerate(questions)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
