"""The scenario's ``checks:`` section: every problem reported with its field path, at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbook.checks.spec import DEFAULT_WINDOW, parse_checks, step_problems


def test_missing_section_gives_the_nightly_defaults(tmp_path: Path) -> None:
    spec, problems = parse_checks(None, params_dir=tmp_path)

    assert problems == []
    assert spec.window == DEFAULT_WINDOW == (5, 14)
    assert spec.policy("timing_s/step").rtol == 0.05
    assert spec.policy("actor/perf/max_memory_allocated_gb").reduce == "last"
    assert spec.policy("actor/pg_loss").allowed(1.0) is None  # compared with a blessed sigma only
    assert spec.policy("actor/lr") is None


def test_baseline_path_is_relative_to_the_params_folder(tmp_path: Path) -> None:
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "x.cpu.json").write_text("{}")

    spec, problems = parse_checks({"baseline": "baselines/x.cpu.json"}, params_dir=tmp_path)

    assert problems == [] and spec.baseline == tmp_path / "baselines" / "x.cpu.json"


def test_every_problem_is_reported_with_its_field_path(tmp_path: Path) -> None:
    section = {
        "baseline": "baselines/missing.json",
        "window": [14, 5],
        "min_steps": 0,
        "colour": "red",
        "metrics": {
            "timing_s/step": {"rtol": -1, "reduce": "average", "direction": "up"},
            "perf/throughput": {"window": [1], "speed": 3},
            "actor/pg_loss": "finite",
        },
        "expressions": ['data.__class__ > 1', {"name": "n", "expr": 'open("f") > 0'}, 42,
                        'mean(data["m"]) < 1', 'mean(data["m"]) < 1'],
    }

    _, problems = parse_checks(section, params_dir=tmp_path)

    paths = [path for path, _ in problems]
    assert paths == [
        "checks.colour", "checks.baseline", "checks.window", "checks.min_steps",
        "checks.metrics.timing_s/step.rtol", "checks.metrics.timing_s/step.reduce",
        "checks.metrics.timing_s/step.direction", "checks.metrics.perf/throughput.window", "checks.metrics.perf/throughput.speed",
        "checks.metrics.actor/pg_loss", "checks.expressions[0]", "checks.expressions[1]",
        "checks.expressions[2]", "checks.expressions[4]",
    ]
    messages = dict(problems)
    assert "data.__class__" in messages["checks.expressions[0]"]
    assert 'open("f")' in messages["checks.expressions[1]"]
    assert "missing.json" in messages["checks.baseline"]


def test_overrides_merge_field_by_field_over_the_defaults(tmp_path: Path) -> None:
    section = {"window": [2, 5], "metrics": {
        "timing_s/step": {"rtol": 0.2},
        "perf/throughput": False,
        "actor/entropy": {"reduce": "median", "atol": 0.1, "window": [3, 4]},
        "actor/grad_norm": {"confirm_nights": 2},
    }}

    spec, problems = parse_checks(section, params_dir=tmp_path)

    assert problems == []
    step = spec.policy("timing_s/step")
    assert (step.rtol, step.direction, step.reduce, step.window) == (
        0.2, "higher_is_worse", "mean", (2, 5))
    assert spec.policy("perf/throughput") is None
    entropy = spec.policy("actor/entropy")
    assert (entropy.reduce, entropy.window, entropy.compare, entropy.explicit) == (
        "median", (3, 4), True, True)
    grad = spec.policy("actor/grad_norm")
    assert grad.confirm_nights == 2 and grad.compare and not grad.scenario_tolerance


def test_a_scenario_tolerance_replaces_the_default_one(tmp_path: Path) -> None:
    spec, _ = parse_checks({"metrics": {"perf/throughput": {"atol": 3.0},
                                        "timing_s/step": {"k": 6}}}, params_dir=tmp_path)

    throughput = spec.policy("perf/throughput")
    assert (throughput.rtol, throughput.atol, throughput.scenario_tolerance) == (None, 3.0, True)
    step = spec.policy("timing_s/step")
    assert (step.k, step.rtol, step.scenario_tolerance) == (6.0, None, True)


@pytest.mark.parametrize("expressions", [
    ['mean(data["m"]) < 1'],
    {"low loss": 'mean(data["m"]) < 1'},
    [{"name": "low loss", "expr": 'mean(data["m"]) < 1'}],
])
def test_expressions_may_be_listed_or_named(tmp_path: Path, expressions: object) -> None:
    spec, problems = parse_checks({"expressions": expressions}, params_dir=tmp_path)

    assert problems == [] and len(spec.expressions) == 1
    assert spec.expressions[0].text == 'mean(data["m"]) < 1'


def test_windows_beyond_the_trained_steps_are_flagged(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text("{}")
    spec, _ = parse_checks({"baseline": "b.json", "min_steps": 6,
                            "metrics": {"actor/entropy": {"atol": 1, "window": [2, 9]}}},
                           params_dir=tmp_path)

    problems = step_problems(spec, total_steps=4)

    assert [p for p, _ in problems] == ["checks.min_steps", "checks.window",
                                        "checks.metrics.actor/entropy.window"]
    assert step_problems(parse_checks(None, params_dir=tmp_path)[0], total_steps=4) == []
    assert step_problems(spec, total_steps=15) == []
