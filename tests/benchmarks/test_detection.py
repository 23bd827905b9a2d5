"""The detection benchmark's plan and figures, without running verl: which runs it makes on a
replayed and on a live scenario, and how it counts verdicts over repeats."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
LIVE = REPO / "params" / "gspo-tiny-live-1n1cpu-fsdp2-vllm.yaml"


@pytest.fixture(scope="module")
def detection() -> ModuleType:
    spec = importlib.util.spec_from_file_location("detection_under_test",
                                                  REPO / "benchmarks" / "detection.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROLLOUT_FAULTS = ["hot_sampling", "slow_gen", "half_reward"]


def test_the_default_scenario_replays_and_the_live_one_generates(detection: ModuleType) -> None:
    assert detection.replays(detection.SCENARIO) is True
    assert detection.replays(LIVE) is False


def test_on_a_replayed_scenario_the_rollout_faults_are_skipped_saying_why(
        detection: ModuleType) -> None:
    runs, skipped = detection.plan(None, 1, 3, generates=False)

    assert [f for f, _, _ in runs] == ["pg_loss_x2", "ignore_clip", "slow_update",
                                       "kill_worker@3", "crash@3", "nan_loss@3",
                                       "unchanged", "unchanged", "unchanged"]
    assert [s.split(":")[0] for s in skipped] == ROLLOUT_FAULTS
    assert "gspo-tiny-live-1n1cpu-fsdp2-vllm.yaml" in skipped[0]


def test_on_a_live_scenario_every_fault_runs_its_repeats_together(detection: ModuleType) -> None:
    runs, skipped = detection.plan(["hot_sampling", "kill_worker", "half_reward"], 2, 2,
                                   generates=True)

    assert skipped == []
    assert runs == [("kill_worker@3", 1, "failed"), ("kill_worker@3", 2, "failed"),
                    ("hot_sampling", 1, "regressed"), ("hot_sampling", 2, "regressed"),
                    ("half_reward", 1, "regressed"), ("half_reward", 2, "regressed"),
                    ("unchanged", 1, "passed"), ("unchanged", 2, "passed")]


def test_every_fault_is_one_the_fault_module_knows(detection: ModuleType) -> None:
    spec = importlib.util.spec_from_file_location(
        "faults_for_detection", REPO / "benchmarks" / "faults" / "verl_faults.py")
    assert spec is not None and spec.loader is not None
    faults = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(faults)

    for fault, _, needs_generation in detection.FAULTS:
        name, _ = faults.parse(fault)
        assert needs_generation == (name in faults.ROLLOUT_TARGETS), fault


def test_verdicts_over_repeats_are_counted_per_fault(detection: ModuleType) -> None:
    rows = [{"fault": "slow_gen", "expected": "regressed", "verdict": v, "caught": v == "regressed"}
            for v in ("regressed", "passed", "regressed")]
    rows += [{"fault": "unchanged", "expected": "passed", "verdict": v, "caught": v == "passed"}
             for v in ("passed", "regressed")]

    found = detection.summary(rows)

    assert found["slow_gen"] == {"expected": "regressed", "caught": 2, "of": 3,
                                 "verdicts": ["regressed", "passed", "regressed"]}
    assert detection.summary_lines(found) == [
        "slow_gen       regressed, passed, regressed: caught 2 of 3 (expected regressed)",
        "unchanged      passed, regressed: false alarms 1 of 2"]


@pytest.mark.parametrize("conditions, text", [
    ({"wall_s": 180.0, "cpus": 2, "run_cores": 1.52, "others_cores": 0.31, "steal_cores": 0.0,
      "load_1m": 2.14, "calibration_s": 0.0812},
     "others 0.31/2 cores, own 1.52, load 2.1, calibration 0.0812 s"),
    ({"cpus": 2, "others_cores": 0.9, "steal_cores": 0.2}, "others 0.90/2 cores, steal 0.20"),
    ({}, "-"),
])
def test_each_run_shows_the_machine_it_ran_on(detection: ModuleType, conditions: dict[str, float],
                                              text: str) -> None:
    assert detection.conditions_text(conditions) == text


def test_the_header_names_date_host_scenario_and_repeats(detection: ModuleType) -> None:
    assert detection.header(LIVE, 3, "2026-12-01T09:12:00Z", "host-1") == (
        "detection 2026-12-01T09:12:00Z on host-1, params/gspo-tiny-live-1n1cpu-fsdp2-vllm.yaml, "
        "3 repeats")
    assert detection.header(Path("/elsewhere/s.yaml"), 1, "d", "h").endswith("s.yaml, 1 repeat")
