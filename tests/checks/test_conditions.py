"""The machine's conditions: what a baseline keeps of its runs', and when a timing is comparable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workbook.checks.baseline import Baseline, BaselineMetric, baseline_from_dict, load_baseline
from workbook.checks.conditions import (
    BUSY_MARGIN_CORES,
    CALIBRATION_MARGIN,
    STEAL_MARGIN_CORES,
    blessed_conditions,
    described,
    timing_comparable,
    unlike_conditions,
)
from workbook.errors import BaselineError


def run(others: float | None = 0.3, calibration: float | None = 0.08, cpus: int = 2,
        **extra: Any) -> dict[str, Any]:
    """run.json's ``conditions`` as workbook.launch.conditions records them."""
    found = {"wall_s": 180.0, "cpus": cpus, "run_cores": 1.6, "others_cores": others,
             "steal_cores": 0.0, "load_1m": 2.1, "calibration_s": calibration, **extra}
    return {k: v for k, v in found.items() if v is not None}


EPYC = "AMD EPYC (AuthenticAMD family 25 model 17)"
XEON = "Intel Xeon (GenuineIntel family 6 model 143)"
STILL = {"steal_cores": 0.0, "steal_cores_max": 0.0}  # what run() records: nothing stolen


# --- blessed_conditions ---------------------------------------------------------------------------

@pytest.mark.parametrize("runs, expected", [
    pytest.param([run(0.2, 0.08), run(0.4, 0.10), run(0.3, 0.09)],
                 {"others_cores": 0.3, "others_cores_max": 0.4, "calibration_s": 0.09, "cpus": 2,
                  **STILL, "n": 3}, id="three-runs"),
    pytest.param([run(0.2, 0.08), {}, None], {"others_cores": 0.2, "others_cores_max": 0.2,
                                              "calibration_s": 0.08, "cpus": 2, **STILL, "n": 1},
                 id="runs-without-conditions-left-out"),
    pytest.param([run(0.2, None), run(0.4, None)],
                 {"others_cores": 0.3, "others_cores_max": 0.4, "cpus": 2, **STILL, "n": 2},
                 id="no-calibration-recorded"),
    pytest.param([run(0.2, 0.08), run(0.4, None)],
                 {"others_cores": 0.3, "others_cores_max": 0.4, "calibration_s": 0.08, "cpus": 2,
                  **STILL, "n": 2}, id="calibration-of-the-runs-that-timed-it"),
    pytest.param([run(0.2, 0.08, steal_cores=0.01, cpu=EPYC),
                  run(0.4, 0.08, steal_cores=0.03, cpu=EPYC)],
                 {"others_cores": 0.3, "others_cores_max": 0.4, "calibration_s": 0.08, "cpus": 2,
                  "steal_cores": 0.02, "steal_cores_max": 0.03, "cpu": EPYC, "n": 2},
                 id="steal-and-the-cpu-they-ran-on"),
    pytest.param([run(0.2, 0.08, cpu=EPYC), run(0.4, 0.08, cpu=XEON)],
                 {"others_cores": 0.3, "others_cores_max": 0.4, "calibration_s": 0.08, "cpus": 2,
                  **STILL, "n": 2}, id="no-cpu-when-they-differ"),
    pytest.param([{}, None], {}, id="none-recorded"),
    pytest.param([], {}, id="no-runs"),
    pytest.param([{"others_cores": "busy", "cpus": 2}], {}, id="not-a-number-is-not-recorded"),
    pytest.param([{"others_cores": True}], {}, id="a-bool-is-not-a-number"),
    pytest.param([{"others_cores": float("nan")}], {}, id="nan-is-not-recorded"),
])
def test_a_baseline_keeps_the_mean_and_max_of_its_runs_conditions(
        runs: list[dict[str, Any] | None], expected: dict[str, Any]) -> None:
    assert blessed_conditions(runs) == pytest.approx(expected)


# --- timing_comparable ----------------------------------------------------------------------------

BLESSED = {"others_cores": 0.30, "others_cores_max": 0.35, "calibration_s": 0.080, "cpus": 2,
           "n": 3}


@pytest.mark.parametrize("conditions, blessed, words", [
    pytest.param(run(0.30, 0.080), BLESSED, None, id="as-at-blessing"),
    pytest.param(run(0.05, 0.070), BLESSED, None, id="idler-and-faster-is-comparable"),
    pytest.param(run(0.35 + BUSY_MARGIN_CORES, 0.080), BLESSED, None, id="busy-at-the-margin"),
    pytest.param(run(0.93, 0.080), BLESSED,
                 ["the machine was 3.1x busier: other processes used 0.93 of 2 cores while it "
                  "ran, 0.30 at blessing (at most 0.35)"], id="busier"),
    pytest.param(run(0.93, 0.080), {**BLESSED, "others_cores_max": None},
                 ["3.1x busier", "0.30 at blessing"], id="busier-no-max-recorded"),
    pytest.param(run(0.93), {"others_cores": 0.0, "others_cores_max": 0.0, "cpus": 2},
                 ["the machine was busier: other processes used 0.93 of 2 cores while it ran, "
                  "0.00 at blessing"], id="busier-than-an-idle-blessing"),
    pytest.param(run(0.30, 0.080 * CALIBRATION_MARGIN), BLESSED, None,
                 id="calibration-at-the-margin"),
    pytest.param(run(0.30, 0.112), BLESSED,
                 ["the CPU was 1.40x slower: the calibration workload took 0.112 s, 0.08 s at "
                  "blessing"], id="slower-cpu"),
    pytest.param(run(0.93, 0.112), BLESSED, ["3.1x busier", "; the CPU was 1.40x slower"],
                 id="busier-and-slower"),
    pytest.param(run(0.93, 0.112), None, None, id="baseline-without-conditions"),
    pytest.param(run(0.93, 0.112), {}, None, id="baseline-with-empty-conditions"),
    pytest.param(None, BLESSED, None, id="run-without-conditions"),
    pytest.param({}, BLESSED, None, id="run-with-empty-conditions"),
    pytest.param(run(None, 0.112), BLESSED, ["1.40x slower"], id="run-without-others-cores"),
    pytest.param(run(0.93, None), BLESSED, ["3.1x busier"], id="run-without-calibration"),
    pytest.param(run(0.93, 0.112), {"calibration_s": 0.08}, ["1.40x slower"],
                 id="baseline-without-others-cores"),
    pytest.param(run(0.30, 0.112), {**BLESSED, "calibration_s": 0.0}, None,
                 id="a-zero-calibration-says-nothing"),
    pytest.param({"others_cores": "a lot"}, BLESSED, None, id="not-a-number-says-nothing"),
    pytest.param(run(0.30, 0.080, calibration_after_s=0.112), BLESSED, ["1.40x slower"],
                 id="slower-after-the-run"),
    pytest.param(run(0.30, 0.080, steal_cores=STEAL_MARGIN_CORES), BLESSED, None,
                 id="steal-at-the-margin"),
    pytest.param(run(0.30, 0.080, steal_cores=0.45), {**BLESSED, "steal_cores": 0.01},
                 ["the host was busy with other machines: its hypervisor took 0.45 cores from "
                  "this VM while the run went, 0.01 at blessing"], id="stolen-by-the-hypervisor"),
    pytest.param(run(0.30, 0.080, cpu=XEON), {**BLESSED, "cpu": EPYC},
                 [f"another CPU: {XEON}, blessed on {EPYC}"], id="another-cpu"),
    pytest.param(run(0.30, 0.080, cpu=EPYC), {**BLESSED, "cpu": EPYC}, None, id="the-same-cpu"),
    pytest.param(run(0.30, 0.080, cpu=XEON), BLESSED, None, id="baseline-without-a-cpu"),
])
def test_a_timing_is_comparable_unless_the_machine_was_busier_or_slower(
        conditions: dict[str, Any] | None, blessed: dict[str, Any] | None,
        words: list[str] | None) -> None:
    reason = timing_comparable(conditions, blessed)

    if words is None:
        assert reason is None
    else:
        assert reason is not None
        for word in words:
            assert word in reason, reason


def test_the_margins_are_the_ones_documented() -> None:
    assert (BUSY_MARGIN_CORES, CALIBRATION_MARGIN, STEAL_MARGIN_CORES) == (0.25, 1.10, 0.10)


@pytest.mark.parametrize("conditions, blessed, text", [
    pytest.param(run(0.05, 0.0243, cpu=EPYC), {**BLESSED, "steal_cores": 0.0},
                 "machine: others 0.05 cores (0.30 cores at blessing), stolen 0.00 (0.00 at "
                 "blessing), calibration 0.0243 s (0.08 s at blessing), on " + EPYC,
                 id="then-and-now"),
    pytest.param(run(0.05, None), None, "machine: others 0.05 cores, stolen 0.00", id="no-baseline"),
    pytest.param({}, BLESSED, "", id="nothing-recorded"),
    pytest.param(None, BLESSED, "", id="no-conditions"),
])
def test_a_failed_timing_describes_the_machine_then_and_now(
        conditions: dict[str, Any] | None, blessed: dict[str, Any] | None, text: str) -> None:
    assert described(conditions, blessed) == text


# --- the baseline file's `conditions` -------------------------------------------------------------

def document(conditions: Any) -> dict[str, Any]:
    return {"format": "verl-workbook-baseline/2", "conditions": conditions,
            "metrics": {"timing_s/step": {"value": 10.0}}}


def test_a_baseline_writes_its_conditions_and_reads_them_back(tmp_path: Path) -> None:
    blessed = blessed_conditions([run(0.2, 0.08), run(0.4, 0.1)])
    baseline = Baseline({"timing_s/step": BaselineMetric(value=10.0)}, conditions=blessed)

    path = baseline.save(tmp_path / "b.json")

    assert json.loads(path.read_text())["conditions"] == blessed
    assert load_baseline(path).conditions == blessed


def test_a_baseline_without_conditions_writes_no_key_and_reads_none(tmp_path: Path) -> None:
    path = Baseline({"timing_s/step": BaselineMetric(value=10.0)}).save(tmp_path / "b.json")

    assert "conditions" not in json.loads(path.read_text())
    assert load_baseline(path).conditions is None
    assert baseline_from_dict(document(None)).conditions is None


@pytest.mark.parametrize("conditions, words", [
    pytest.param([0.3], "conditions: expected a mapping, got list", id="not-a-mapping"),
    pytest.param({"others_cores": -0.1}, "conditions.others_cores: expected a finite number >= 0",
                 id="negative"),
    pytest.param({"calibration_s": float("nan")}, "conditions.calibration_s: expected a finite",
                 id="nan"),
    pytest.param({"others_cores": "0.3"}, "conditions.others_cores: expected a finite number",
                 id="text"),
    pytest.param({"others_cores": True}, "conditions.others_cores: expected a finite number",
                 id="bool"),
    pytest.param({"others_cores": 10**400}, "conditions.others_cores: expected a finite number",
                 id="int-too-large-for-a-float"),
    pytest.param({"n": 0}, "conditions.n: expected a whole number (1 or more)", id="no-runs"),
    pytest.param({"cpus": 2.5}, "conditions.cpus: expected a whole number", id="half-a-cpu"),
    pytest.param({"others_core": 0.3}, "conditions.others_core: unknown key; known: "
                                       "others_cores", id="misspelt-key"),
    pytest.param({"cpu": 25}, "conditions.cpu: expected text", id="cpu-not-text"),
    pytest.param({"cpu": ""}, "conditions.cpu: expected text", id="cpu-empty"),
    pytest.param({"steal_cores": -1}, "conditions.steal_cores: expected a finite number >= 0",
                 id="negative-steal"),
])
def test_a_baseline_whose_conditions_cannot_be_right_is_refused(conditions: Any,
                                                                words: str) -> None:
    with pytest.raises(BaselineError) as err:
        baseline_from_dict(document(conditions))

    assert words in err.value.message


def test_a_baseline_with_conditions_refused_on_save_writes_nothing(tmp_path: Path) -> None:
    baseline = Baseline({"timing_s/step": BaselineMetric(value=10.0)},
                        conditions={"others_cores": -1.0})

    with pytest.raises(BaselineError, match="conditions.others_cores"):
        baseline.save(tmp_path / "b.json")

    assert not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("others, calibrations, found", [
    pytest.param([0.04, 0.10, 0.08], [0.024, 0.0245, 0.0242], None, id="alike"),
    pytest.param([0.04, 0.10, 0.82], [0.024] * 3, "busier during c", id="one-beside-a-busy-loop"),
    pytest.param([0.04, 0.29], [0.024] * 2, None, id="within-the-margin"),
    pytest.param([0.04, 0.30], [0.024] * 2, "busier during b", id="beyond-the-margin"),
    pytest.param([0.05] * 3, [0.024, 0.024, 0.031], "1.29x slower during c", id="a-slower-cpu"),
    pytest.param([0.05] * 3, [0.024, 0.024, 0.0265], "1.10x slower during c",
                 id="ten-percent-slower"),
    pytest.param([None, 0.9, None], [None] * 3, None, id="one-recorded"),
])
def test_runs_measured_on_unlike_machines_are_named(others: list[Any], calibrations: list[Any],
                                                    found: str | None) -> None:
    conditions = [{"others_cores": o, "calibration_s": c} for o, c in zip(others, calibrations, strict=True)]
    names = ["a", "b", "c"][:len(conditions)]

    why = unlike_conditions(conditions, names)

    assert (why is None) if found is None else (why is not None and found in why), why


@pytest.mark.parametrize("extra, found", [
    pytest.param([{}, {}, {}], None, id="alike"),
    pytest.param([{"cpu": EPYC}, {"cpu": EPYC}, {"cpu": XEON}], f"a ran on {EPYC} and c on {XEON}",
                 id="another-cpu"),
    pytest.param([{"steal_cores": 0.0}, {"steal_cores": 0.4}, {}],
                 "the hypervisor took 0.40 cores from the machine during b, 0.00 during a",
                 id="a-busy-host"),
    pytest.param([{"steal_cores": 0.0}, {"steal_cores": STEAL_MARGIN_CORES}, {}], None,
                 id="steal-within-the-margin"),
])
def test_runs_on_another_cpu_or_a_busy_host_are_not_blessed_together(
        extra: list[dict[str, Any]], found: str | None) -> None:
    conditions = [{"others_cores": 0.05, "calibration_s": 0.024, **e} for e in extra]

    why = unlike_conditions(conditions, ["a", "b", "c"])

    assert (why is None) if found is None else (why is not None and found in why), why
