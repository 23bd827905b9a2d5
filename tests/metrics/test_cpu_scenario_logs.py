"""Real runs of the tiny CPU scenario (verl 0.9.1), captured by the profiles helper."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbook.metrics import diagnose, load_metrics

DATA = Path(__file__).resolve().parents[1] / "profiles" / "data"
RUN_LOG, METRICS, BROKEN = (
    DATA / "gspo_cpu_run.log",
    DATA / "gspo_cpu_metrics.jsonl",
    DATA / "gspo_cpu_broken_override.log",
)

pytestmark = pytest.mark.skipif(
    not (RUN_LOG.exists() and METRICS.exists() and BROKEN.exists()),
    reason="CPU scenario logs not captured yet (tests/profiles/data)",
)


def test_console_and_file_logger_agree_on_every_value_to_three_decimals() -> None:
    console, jsonl = load_metrics(RUN_LOG), load_metrics(METRICS)
    assert console.step_numbers == jsonl.step_numbers == [1, 2, 3, 4]
    assert console.names() == jsonl.names() and len(jsonl.names()) >= 80
    for step, values in jsonl.steps.items():
        for name, value in values.items():
            assert round(console.steps[step][name], 3) == pytest.approx(
                round(value, 3), abs=1e-3
            ), (step, name)


def test_successful_run_is_diagnosed_succeeded_with_its_four_steps() -> None:
    result = diagnose(RUN_LOG, exit_code=0, expected_steps=4)
    assert (result.status, result.category, result.last_step) == ("succeeded", "none", 4)


def test_run_directory_of_the_capture_merges_both_sources(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_bytes(RUN_LOG.read_bytes())
    (tmp_path / "metrics.jsonl").write_bytes(METRICS.read_bytes())
    run = load_metrics(tmp_path)
    assert run.step_numbers == [1, 2, 3, 4]
    assert all(source.startswith("metrics.jsonl:") for source in run.sources[2].values())


def test_broken_override_is_a_config_error_with_the_evidence_line() -> None:
    result = diagnose(BROKEN, exit_code=1).to_dict()
    assert (result["status"], result["category"], result["last_step"]) == (
        "failed",
        "config_error",
        None,
    )
    assert result["evidence"][0] == "ValueError: Invalid loss_agg_mode: token-avg"
    assert "Invalid loss_agg_mode: token-avg" in result["summary"]
    assert len(load_metrics(BROKEN)) == 0
