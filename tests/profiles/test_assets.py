"""The tiny cpu-profile assets: built once, complete, loadable by transformers, generating."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from workbook.cli.assets import register
from workbook.profiles.cpu import assets as assets_module
from workbook.profiles.cpu.assets import MARKER, Assets, ensure_assets


@pytest.fixture
def built(cpu_assets: Assets) -> Assets:
    return cpu_assets


def test_build_leaves_every_file_and_the_marker_and_no_staging_dir(built: Assets) -> None:
    model = built.model_dir
    for path in (built.train_file, built.val_file, built.reward_file, model / "config.json",
                 model / "model.safetensors", model / "tokenizer.json"):
        assert path.is_file(), path
    assert (built.root / MARKER).is_file()
    assert [p.name for p in built.root.parent.iterdir()] == [built.root.name]


def test_second_call_does_not_rebuild(built: Assets, monkeypatch: pytest.MonkeyPatch) -> None:
    mtime = (built.model_dir / "model.safetensors").stat().st_mtime_ns

    def forbidden(root: Path) -> None:
        raise AssertionError("rebuilt a complete cache")

    monkeypatch.setattr(assets_module, "_build", forbidden)
    again = ensure_assets(built.root.parent)
    assert again == built
    assert (built.model_dir / "model.safetensors").stat().st_mtime_ns == mtime


def test_interrupted_build_leaves_no_cache_and_the_next_call_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(root: Path) -> None:
        (root / "model").mkdir()
        raise KeyboardInterrupt

    monkeypatch.setattr(assets_module, "_build", crash)
    with pytest.raises(KeyboardInterrupt):
        ensure_assets(tmp_path)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(assets_module, "_build", lambda root: (root / "model").mkdir())
    rebuilt = ensure_assets(tmp_path)
    assert (rebuilt.root / MARKER).is_file() and rebuilt.model_dir.is_dir()


def test_data_has_verl_gsm8k_layout_and_sizes(built: Assets) -> None:
    train = pq.read_table(built.train_file).to_pylist()
    test = pq.read_table(built.val_file).to_pylist()
    assert (len(train), len(test)) == (64, 16)
    row = train[0]
    assert set(row) == {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    assert row["prompt"][0]["role"] == "user" and "####" in row["prompt"][0]["content"]
    assert set(row["reward_model"]) == {"style", "ground_truth"}
    assert row["extra_info"]["split"] == "train" and test[0]["extra_info"]["split"] == "test"


def test_prompts_fit_the_tiny_scenarios_prompt_length(built: Assets) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(built.model_dir)
    rows = pq.read_table(built.train_file).to_pylist()
    lengths = [
        len(tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=True,
                                          return_dict=True)["input_ids"])
        for r in rows
    ]
    assert max(lengths) <= 100
    assert len(tokenizer) <= 400


def test_tiny_model_loads_with_transformers_and_generates(built: Assets) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(built.model_dir)
    model = AutoModelForCausalLM.from_pretrained(built.model_dir)
    assert model.config.hidden_size // model.config.num_attention_heads == 64
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is 2 + 3?"}], add_generation_prompt=True,
        tokenize=True, return_dict=True, return_tensors="pt",
    )
    torch.manual_seed(0)
    out = model.generate(**prompt, max_new_tokens=8, do_sample=True,
                         pad_token_id=tokenizer.pad_token_id)
    assert out.shape[1] > prompt["input_ids"].shape[1]


def test_reward_file_scores_digit_fraction(built: Assets) -> None:
    spec = importlib.util.spec_from_file_location("tiny_reward", built.reward_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    score = getattr(module, built.reward_function)
    assert score("openai/gsm8k", "ab12", "3") == 0.5
    assert score("openai/gsm8k", "", "3") == 0.0


def test_cli_prints_every_path(built: Assets, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["assets", "--cache", str(built.root.parent)])
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    for path in (built.model_dir, built.train_file, built.val_file, built.reward_file):
        assert str(path) in out
