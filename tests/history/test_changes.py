"""What changed since the last green night: pure functions of two ledger entries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.history.nights import VERSIONS, newer, night
from workbook.history.changes import Change, changes_since, environment_changes
from workbook.history.ledger import Entry, entry_of

GREEN = Entry(scenario="s", hardware="cpu", run_id="20261103T020000Z-a", path="s/a",
              date="2026-11-03T02:00:00Z", verdict="passed", versions=dict(VERSIONS),
              commits={"verl": "aaaaaaa", "workbook": "1111111"},
              image={"ref": "registry/verl:cpu", "digest": None, "source": "WORKBOOK_IMAGE"},
              host="vm", hardware_key={"profile": "cpu", "device": "AMD EPYC", "count": 2},
              settings={"lr": 0.0001, "overrides": ["a=1"]},
              baseline={"path": "params/baselines/s.cpu.json", "sha256": "ab" * 32})


def test_a_changed_package_version_is_named_between_two_real_nights(tmp_path: Path) -> None:
    green = entry_of(night(tmp_path, 3), tmp_path)
    red = entry_of(night(tmp_path, 4, "regressed", versions=newer(VERSIONS, torch="2.14.0+cpu")),
                   tmp_path)
    assert green is not None and red is not None

    assert changes_since(green, red) == [Change("package", "torch", "2.13.0+cpu", "2.14.0+cpu")]


@pytest.mark.parametrize("changed, expected", [
    ({"versions": newer(VERSIONS, ray="2.61.0")}, [("package", "ray", "2.60.0", "2.61.0")]),
    ({"versions": {**VERSIONS, "CANN": "8.3.RC1"}}, [("package", "CANN", "not installed", "8.3.RC1")]),
    ({"versions": {k: v for k, v in VERSIONS.items() if k != "ray"}},
     [("package", "ray", "2.60.0", "not installed")]),
    ({"commits": {"verl": "bbbbbbb", "workbook": "1111111"}},
     [("commit", "verl commit", "aaaaaaa", "bbbbbbb")]),
    ({"image": {"ref": "registry/verl:cpu", "digest": "sha256:" + "c" * 64}},
     [("image", "image", "registry/verl:cpu", f"registry/verl:cpu (sha256:{'c' * 64})")]),
    ({"host": "vm2"}, [("host", "host", "vm", "vm2")]),
    ({"hardware_key": {"profile": "cpu", "device": "Intel Xeon", "count": 4}},
     [("hardware", "hardware key", "cpu: AMD EPYC x 2", "cpu: Intel Xeon x 4")]),
    ({"baseline": {"path": "params/baselines/s.cpu.json", "sha256": "cd" * 32}},
     [("baseline", "baseline content (sha256)", "abababababab", "cdcdcdcdcdcd")]),
    ({"baseline": {"path": "other.json", "sha256": "ab" * 32}},
     [("baseline", "baseline", "params/baselines/s.cpu.json", "other.json")]),
    ({"settings": {"lr": 0.0002, "overrides": ["a=1", "b=2"]}},
     [("setting", "lr", "0.0001", "0.0002"), ("setting", "override b=2", "not set", "set")]),
    ({}, []),
], ids=["package", "cann-added", "package-removed", "verl-commit", "image-digest", "host",
        "hardware-key", "baseline-content", "baseline-path", "settings", "nothing"])
def test_each_kind_of_change_is_named_with_then_and_now(changed: dict[str, object],
                                                        expected: list[tuple[str, ...]]) -> None:
    this = replace(GREEN, run_id="20261104T020000Z-b", date="2026-11-04T02:00:00Z",
                   verdict="regressed", **changed)

    assert [(c.kind, c.name, c.old, c.new) for c in changes_since(GREEN, this)] == expected


def test_a_containers_own_id_is_not_a_change_of_image() -> None:
    before = replace(GREEN, image={"ref": None, "digest": None, "container": "1" * 64})
    after = replace(GREEN, image={"ref": None, "digest": None, "container": "2" * 64})

    assert changes_since(before, after) == []


def test_the_trend_charts_mark_the_environment_not_the_settings_nor_the_workbook() -> None:
    after = replace(GREEN, settings={"lr": 0.0002}, commits={"verl": "aaaaaaa", "workbook": "2"},
                    host="vm2")

    assert [c.name for c in changes_since(GREEN, after)] == [
        "workbook commit", "host", "lr", "override a=1"]
    assert [c.text for c in environment_changes(GREEN, after)] == ["host: vm -> vm2"]


TUNED = replace(GREEN, tuning={"actor_rollout_ref.actor.use_torch_compile": "True",
                               "rollout_memory_utilization": 0.3},
                env={"VLLM_CPU_KVCACHE_SPACE": "4"})


@pytest.mark.parametrize("changed, expected", [
    ({"tuning": {"actor_rollout_ref.actor.use_torch_compile": "False",
                 "rollout_memory_utilization": 0.3}},
     [("tuning", "actor_rollout_ref.actor.use_torch_compile", "True", "False")]),
    ({"tuning": {"rollout_memory_utilization": 0.3}},
     [("tuning", "actor_rollout_ref.actor.use_torch_compile", "True", "unset")]),
    ({"env": {"VLLM_CPU_KVCACHE_SPACE": "8", "OMP_NUM_THREADS": "1"}},
     [("environment", "env OMP_NUM_THREADS", "unset", "1"),
      ("environment", "env VLLM_CPU_KVCACHE_SPACE", "4", "8")]),
], ids=["override-changed", "override-dropped", "env"])
def test_tuning_and_env_are_changes_of_their_own_kind(changed: dict[str, object],
                                                     expected: list[tuple[str, ...]]) -> None:
    this = replace(TUNED, run_id="20261104T020000Z-b", date="2026-11-04T02:00:00Z",
                   verdict="regressed", **changed)

    assert [(c.kind, c.name, c.old, c.new) for c in changes_since(TUNED, this)] == expected
    assert [c.kind for c in environment_changes(TUNED, this)] == [k for k, *_ in expected]


def test_a_tuning_override_changed_between_two_real_nights_is_tuning_not_a_setting(
        tmp_path: Path) -> None:
    fast = ["actor_rollout_ref.actor.use_torch_compile=True", "algorithm.use_kl_in_reward=False"]
    slow = ["actor_rollout_ref.actor.use_torch_compile=False", "algorithm.use_kl_in_reward=False"]
    green = entry_of(night(tmp_path, 3, settings={"overrides": fast}), tmp_path)
    red = entry_of(night(tmp_path, 4, "regressed", settings={"overrides": slow}), tmp_path)
    assert green is not None and red is not None

    assert changes_since(green, red) == [
        Change("tuning", "actor_rollout_ref.actor.use_torch_compile", "True", "False")]
    assert green.settings == red.settings


def test_a_night_recorded_before_tuning_and_env_were_shows_only_what_it_recorded() -> None:
    old = replace(GREEN, settings={"lr": 0.0001, "overrides": [
        "a=1", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8"]})
    new = replace(TUNED, settings={"lr": 0.0001, "overrides": ["a=1"]},
                  tuning={"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "2",
                          "rollout_memory_utilization": 0.3})

    assert [(c.kind, c.name, c.old, c.new) for c in changes_since(old, new)] == [
        ("tuning", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "8", "2")]


# A secret variable's row names the change and hides both sides; any other value loses what
# has a credential's shape (the rows reach the index, the report and the review page).
SECRET_ROWS = [
    ({"DB_PASSWORD": "LedgerPw1x"}, {"DB_PASSWORD": "LedgerPw3x"},
     ("env DB_PASSWORD", "[REDACTED]", "[REDACTED]")),
    ({}, {"WANDB_API_KEY": "LedgerKey9z"}, ("env WANDB_API_KEY", "unset", "[REDACTED]")),
    ({"HF_TOKEN": "LedgerTok5y"}, {}, ("env HF_TOKEN", "[REDACTED]", "unset")),
    ({"NOTE": "mysql -pLedgerPw7w db"}, {"NOTE": "sshpass -p LedgerPw8v ssh h"},
     ("env NOTE", "mysql -p[REDACTED] db", "sshpass -p [REDACTED] ssh h")),
]


@pytest.mark.parametrize("old, new, row", SECRET_ROWS, ids=[r[2][0] for r in SECRET_ROWS])
def test_both_sides_of_a_changed_secret_are_redacted(old: dict[str, str], new: dict[str, str],
                                                     row: tuple[str, str, str]) -> None:
    changes = changes_since(replace(GREEN, env=old), replace(GREEN, env=new))

    assert [(c.name, c.old, c.new) for c in changes] == [row]
    assert "Ledger" not in " ".join(c.text for c in changes)
