"""Validation refuses what cannot be right: each edge exits 2 naming its field, nothing launched.

Every case goes through ``workbook validate`` in-process, as a user would type it: the exit code
must be 2 (bad input, never an internal error, which is 2 too but says "internal error"), the
message must name the field (or file and line), and quote at most a short prefix of the value.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.edges import NPU_SCENARIO, raised_within
from workbook.cli import main
from workbook.core.serialization import load_yaml_text
from workbook.errors import InputError, ParamsError
from workbook.params.schema import FIELDS, parse_scenario
from workbook.scenario import load_scenario

BASE = NPU_SCENARIO


@pytest.fixture()
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "edge.yaml"
    path.write_text(BASE)
    return path


def validate(capsys: pytest.CaptureFixture[str], path: Path, *sets: str) -> tuple[int, str]:
    args = ["validate", str(path)]
    for item in sets:
        args += ["-s", item]
    code = main(args)
    return code, capsys.readouterr().err


def assert_refused(code: int, err: str, *words: str) -> None:
    assert code == 2, err
    assert "internal error" not in err, err
    for word in words:
        assert word in err, err


# (-s value, field the message names, words of the message)
BAD_SETS = [
    ("lr=nan", "lr", "finite"),
    ("lr=inf", "lr", "finite"),
    ("lr=-inf", "lr", "finite"),
    ("lr=.nan", "lr", "finite"),
    ("lr=0", "lr", "inside (0, 1)"),
    ("lr=2", "lr", "inside (0, 1)"),
    ("critic_lr=-1", "critic_lr", "inside (0, 1)"),
    ("critic_lr=nan", "critic_lr", "finite"),
    ("clip_ratio_c=nan", "clip_ratio_c", "finite"),
    ("clip_ratio_c=1", "clip_ratio_c", "> 1"),
    ("clip_ratio_low=inf", "clip_ratio_low", "finite"),
    ("clip_ratio_high=0", "clip_ratio_high", "inside (0, 1)"),
    ("timeout_s=nan", "timeout_s", "finite"),
    ("timeout_s=-1", "timeout_s", "> 0"),
    ("seed=-5", "seed", "[0, 4294967295]"),
    ("seed=4294967296", "seed", "[0, 4294967295]"),
    ("seed=true", "seed", "must be an integer"),
    ("nodes=0", "nodes", "positive integer"),
    ("total_epochs=0", "total_epochs", "positive integer"),
    ("train_batch_size=99999999999", "train_batch_size", "<= 2147483647"),
    ("rollout_memory_utilization=0", "rollout_memory_utilization", "inside (0, 1]"),
    ("rollout_memory_utilization=1.5", "rollout_memory_utilization", "inside (0, 1]"),
    ("rollout_memory_utilization=nan", "rollout_memory_utilization", "finite"),
    ("ray.local_nodes=0", "ray.local_nodes", "positive integer"),
    ("rollouts.steps=[0, 2]", "rollouts.steps.0", "positive integer"),
    ("env.X=.nan", "env.X", "finite"),
    ("env.X=[1]", "env.X", "string, number or boolean"),
    ("kuberay.cpu=0", "kuberay.cpu", "CPU count"),
    ("kuberay.ttl_seconds_after_finished=-1", "kuberay.ttl_seconds_after_finished", ">= 0"),
    ("name=../../../../tmp/x", "name", "plain name"),
    ("name=a/b", "name", "plain name"),
    ("name=..", "name", "plain name"),
    ("name=.hidden", "name", "plain name"),
    ("name=" + "n" * 101, "name", "plain name"),
    ("overrides+=actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=0",
     "overrides: actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=0", "positive integer"),
]


@pytest.mark.parametrize("item, field, words", BAD_SETS, ids=[c[0][:40] for c in BAD_SETS])
def test_a_value_that_cannot_be_right_is_refused_naming_its_field(
        scenario: Path, capsys: pytest.CaptureFixture[str], item: str, field: str,
        words: str) -> None:
    code, err = validate(capsys, scenario, item)
    assert_refused(code, err, f"- {field}: ", words)


MALFORMED_SETS = [
    ("no-equals", "must look like key=value"),
    ("=1", "must look like key=value"),
    ("+=1", "must look like key=value"),
    (".a=1", "is not a field path"),
    ("a..b=1", "is not a field path"),
    ("a.=1", "is not a field path"),
    ("a b=1", "is not a field path"),
    ("lr++=1", "is not a field path"),
    ("overrides+=", "appends nothing"),
    ("overrides+=   ", "appends nothing"),
    ("lr+=1", "- lr: Input should be a valid number"),
    ("overrides.x=1", "- overrides: Input should be a valid list"),
    ("env.X={a: 1, a: 2}", "duplicate key 'a'"),
]


@pytest.mark.parametrize("item, words", MALFORMED_SETS, ids=[c[0] for c in MALFORMED_SETS])
def test_a_malformed_override_is_a_clear_error_not_an_internal_one(
        scenario: Path, capsys: pytest.CaptureFixture[str], item: str, words: str) -> None:
    code, err = validate(capsys, scenario, item)
    assert_refused(code, err, words)


BAD_CHECKS = [
    ("{metrics: {timing_s/step: {atol: .nan}}}", "checks.metrics.timing_s/step.atol", "finite"),
    ("{metrics: {timing_s/step: {rtol: .inf}}}", "checks.metrics.timing_s/step.rtol", "finite"),
    ("{metrics: {timing_s/step: {k: .nan}}}", "checks.metrics.timing_s/step.k", "finite"),
    ("{metrics: {timing_s/step: {atol: 1.0e+400}}}", "checks.metrics.timing_s/step.atol",
     "finite"),
    ("{window: [0, 1000000000000]}", "checks.window", "<= 1000000000"),
    ("{min_steps: 1000000000000}", "checks.min_steps", "[1, 1000000000]"),
    ("{expressions: ['data[\"x\"][1] < " + "1" * 1980 + "']}", "checks.expressions[0]",
     "must be finite"),
    ("{expressions: ['mean(data[\"x\"]) < 1e999']}", "checks.expressions[0]", "must be finite"),
    ("{expressions: ['mean(data[\"x\"], ignore_top_p=2) < 1']}", "checks.expressions[0]",
     "ignore_top_p"),
    ("{expressions: ['data[\"x\"][10000000000] > 0']}", "checks.expressions[0]", "a step"),
]


@pytest.mark.parametrize("checks, field, words", BAD_CHECKS, ids=[c[1] + "-" + c[0][-24:]
                                                                  for c in BAD_CHECKS])
def test_a_number_inside_checks_that_cannot_be_right_is_refused_before_training(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], checks: str, field: str,
        words: str) -> None:
    path = tmp_path / "checks.yaml"
    path.write_text(BASE + f"checks: {checks}\n")
    code, err = validate(capsys, path)
    assert_refused(code, err, f"- {field}: ", words)


def _bomb(levels: int = 9, width: int = 9) -> str:
    lines = [f"  l0: &l0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"  l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


# (scenario text after BASE, words of the message); each is read in bounded time
BAD_FILES = [
    ("lr: 1.0e-4\nseed: 1\nlr: 2.0e-4\n", ["line 11", "duplicate key 'lr'", "first on line 9"]),
    ("env:\n  A: 1\n  A: 2\n", ["duplicate key 'A'", "line 11"]),
    ("env:\n" + _bomb(), ["alias", "10000 values"]),
    ("checks:\n" + _bomb(), ["alias", "10000 values"]),
    ("overrides: &o [a=1, *o]\n", ["loop"]),
    ("env: " + "[" * 200 + "]" * 200 + "\n", ["nested deeper than"]),
    ("seed: " + "9" * 1990 + "\n", ["a number of 1990 characters"]),
    ("description: 2024-13-45\n", ["month must be in 1..12"]),
    ("defaults: 7\n", ["defaults", "must be a list"]),
    ("defaults: [nowhere.yaml]\n", ["defaults[0]", "no such base file"]),
    ("defaults: [../outside.yaml]\n", ["defaults[0]", "outside the scenario's folder"]),
    ("defaults: [/etc/passwd]\n", ["defaults[0]", "outside the scenario's folder"]),
    ("defaults: [link.yaml]\n", ["defaults[0]", "outside the scenario's folder"]),
]


@pytest.mark.parametrize("extra, words", BAD_FILES, ids=[w[-1][:30] for _, w in BAD_FILES])
def test_a_scenario_file_that_cannot_be_right_is_refused_fast_naming_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, words: list[str]) -> None:
    folder = tmp_path / "params"
    folder.mkdir()
    (tmp_path / "outside.yaml").write_text("lr: 1.0e-3\n")
    (folder / "link.yaml").symlink_to(tmp_path / "outside.yaml")
    path = folder / "s.yaml"
    path.write_text(BASE + extra)

    started = time.monotonic()
    code, err = validate(capsys, path)

    assert time.monotonic() - started < 20
    assert_refused(code, err, *words)
    assert len(err) < 2000, err  # a short prefix of the value, never the value


def test_defaults_inside_the_params_folder_still_work(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "b.yaml").write_text("lr: 1.0e-3\n")
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "s.yaml"
    path.write_text("defaults: [../base/b.yaml]\n" + BASE)
    nested = tmp_path / "n.yaml"
    nested.write_text("defaults: [sub/s.yaml]\n")

    assert load_scenario(nested).lr == 1e-3  # ../base from sub/ stays inside the first folder


def test_yaml_merge_keys_are_not_duplicates() -> None:
    data = load_yaml_text("a: &a {x: 1, y: 2}\nb:\n  <<: *a\n  x: 5\n")
    assert data == {"a": {"x": 1, "y": 2}, "b": {"x": 5, "y": 2}}


def test_every_problem_of_a_scenario_is_listed_at_once(
        scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = validate(capsys, scenario, "name=../x", "lr=nan", "seed=-5", "critic_lr=-1",
                         "overrides+=", "clip_ratio_c=0.5")
    assert_refused(code, err, "- name: ", "- lr: ", "- seed: ", "- critic_lr: ",
                   "appends nothing", "- clip_ratio_c: ")


def test_a_bad_name_never_creates_a_run_directory_outside_the_runs_root(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "a" / "b" / "runs"
    monkeypatch.setenv("WORKBOOK_RUNS", str(runs))
    path = tmp_path / "s.yaml"
    path.write_text(BASE)

    code = main(["run", str(path), "-s", "name=../../escaped"])

    assert_refused(code, capsys.readouterr().err, "- name: ")
    assert not runs.exists() and not (tmp_path / "a" / "escaped").exists()


def test_a_non_utf8_scenario_names_the_file_and_the_byte(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(BASE.encode() + "description: caf\u00e9\n".encode("latin-1"))

    code, err = validate(capsys, path)

    offset = len(BASE) + len("description: caf")
    assert_refused(code, err, str(path), "not UTF-8", f"byte {offset}", "line 9")


def test_a_non_utf8_base_file_names_the_base(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "b.yaml").write_bytes(b"lr: \xff\n")
    path = tmp_path / "s.yaml"
    path.write_text("defaults: [b.yaml]\n" + BASE)

    code, err = validate(capsys, path)

    assert_refused(code, err, str(tmp_path / "b.yaml"), "not UTF-8", "byte 4")


def test_a_huge_scenario_file_is_refused_without_reading_it_whole(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text(BASE + "description: '" + "x" * (2 << 20) + "'\n")

    code, err = validate(capsys, path)

    assert_refused(code, err, str(path), "larger than 1024 KiB")


def test_a_base_file_that_is_a_fifo_never_blocks(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    path = tmp_path / "s.yaml"
    path.write_text("defaults: [pipe.yaml]\n" + BASE)
    raised = raised_within(lambda: load_scenario(path))
    assert isinstance(raised, ParamsError) and "defaults[0]" in raised.message


def test_a_huge_value_is_quoted_by_a_short_prefix(
        scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = validate(capsys, scenario, "name=" + "q" * 50_000, "env.X=[" + "1," * 5000 + "1]")

    assert_refused(code, err, "- name: ", "- env.X: ", "...")
    assert len(err) < 2000


# Any JSON-like value, in any field: the schema answers with problems, never an exception, and
# every message stays short whatever the value's size.
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=300),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=5),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(sorted(FIELDS)), value=VALUES)
def test_any_value_in_any_field_yields_short_problems_never_an_exception(
        field: str, value: object) -> None:
    data = {"name": "x", "profile": "npu", "model_path": "/m", "train_files": "/t",
            "val_files": "/v", field: value}

    scenario, problems = parse_scenario(data)

    assert (scenario is None) == bool(problems)
    for path, message in problems:
        assert len(path) + len(message) < 600, (path, message)
    if scenario is not None and field != "checks":  # (checks: judged by parse_checks)
        json.dumps(scenario.model_dump(mode="json"), allow_nan=False)  # no nan or inf passed


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!,'\"\n #.09eE")), max_size=200))
def test_any_yaml_text_loads_or_is_an_input_error(text: str) -> None:
    try:
        load_yaml_text(text, "fuzz.yaml")
    except InputError as exc:
        assert exc.message.startswith("fuzz.yaml: ") and len(exc.message) < 1000


GSPO = Path(__file__).resolve().parents[2] / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
# Hydra's delete override: a leading ~ is never a home directory.
DELETES = [
    ("~trainer.val_before_train", 0, "is valid"),
    ("~trainer.val_before_train=False", 0, "is valid"),
    ("~nonexist.key", 2, "verl has no config key 'nonexist.key'"),
]


@pytest.mark.parametrize("item, code, words", DELETES, ids=[c[0] for c in DELETES])
def test_a_hydra_delete_override_is_composed_not_read_as_a_home(
        capsys: pytest.CaptureFixture[str], item: str, code: int, words: str) -> None:
    assert main(["validate", str(GSPO), "--where", "runner", "-s", f"overrides+={item}"]) == code
    out = capsys.readouterr()
    assert words in out.out + out.err and "internal error" not in out.err


def test_hundreds_of_unknown_overrides_compose_verls_config_a_few_times_and_list_a_few(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from workbook.params import verl_config

    composed: list[int] = []
    real = verl_config._compose

    def counted(config_dir: Path, overrides: tuple[str, ...]) -> object:
        composed.append(len(overrides))
        return real(config_dir, overrides)

    monkeypatch.setattr(verl_config, "_compose", counted)
    sets = [a for i in range(300) for a in ("-s", f"overrides+=nosuch{i}.key=1")]
    code = main(["validate", str(GSPO), "--where", "runner", *sets])
    err = capsys.readouterr().err

    assert_refused(code, err, "nosuch0.key", "nosuch9.key", "290 more override(s)")
    assert "nosuch10.key" not in err
    assert len(composed) <= verl_config.MAX_COMPOSED + 3


def test_entries_of_one_command_are_judged_against_verls_config_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a suite validates each entry; the same command (a night's retries, a scenario listed
    # under two names) must not pay Hydra's composition again
    from workbook.params import verl_config

    config_dir = verl_config.installed_config_dir(sys.executable)
    if config_dir is None:
        pytest.skip("verl is not installed in this environment")
    composed: list[tuple[str, ...]] = []
    real = verl_config._compose

    def counted(where: Path, overrides: tuple[str, ...]) -> object:
        composed.append(overrides)
        return real(where, overrides)

    monkeypatch.setattr(verl_config, "_compose", counted)
    verl_config._judged.cache_clear()
    entry = ["trainer.total_training_steps=3", "actor_rollout_ref.actor.clip_ratio_low=0.0003"]
    first = verl_config.check_overrides(entry, verl_dir=config_dir.parents[1])
    again = verl_config.check_overrides(list(entry), verl_dir=config_dir.parents[1])
    other = verl_config.check_overrides([*entry, "trainer.nnodes=2"],
                                        verl_dir=config_dir.parents[1])

    assert first == again == other == []
    assert composed == [tuple(entry), (*entry, "trainer.nnodes=2")]


def test_a_run_validated_by_its_driver_is_not_composed_again_in_the_process_it_starts(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # `workbook run` validates, then its kernel prepares the run: the kernel inherits the
    # driver's clean judgement through the environment, for the same config files only
    import shutil

    from workbook.params import verl_config

    installed = verl_config.installed_config_dir(sys.executable)
    if installed is None:
        pytest.skip("verl is not installed in this environment")
    checkout = tmp_path / "verl"
    shutil.copytree(installed, verl_config.checkout_config_dir(checkout))
    composed: list[tuple[str, ...]] = []
    real = verl_config._compose

    def counted(where: Path, overrides: tuple[str, ...]) -> object:
        composed.append(overrides)
        return real(where, overrides)

    def in_a_new_process() -> list[tuple[str, str]]:  # what the kernel inherits: the env only
        verl_config._judged.cache_clear()
        verl_config._base_keys.cache_clear()
        return verl_config.check_overrides(entry, checkout=checkout)

    monkeypatch.setattr(verl_config, "_compose", counted)
    entry = ["trainer.total_training_steps=3"]
    assert in_a_new_process() == []
    judged = len(composed)
    assert judged and in_a_new_process() == [] and len(composed) == judged

    config = verl_config.checkout_config_dir(checkout) / "ppo_trainer.yaml"
    config.write_text(config.read_text().replace("total_training_steps:", "total_steps:", 1))
    assert in_a_new_process()  # the checkout changed under it: judged again, and refused
    refused = len(composed)
    assert in_a_new_process() and len(composed) > refused  # a problem is never handed down
