"""``workbook check`` and ``workbook bless`` on hand-made run directories and logs: exit codes."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.checks.handmade import DATA, console_log, steady
from workbook.checks.baseline import load_baseline
from workbook.cli import main

GOOD = {"timing_s/step": 10.0, "perf/throughput": 100.0, "actor/pg_loss": 0.01}


@pytest.fixture
def params(tmp_path: Path) -> Path:
    """A params folder holding a baseline the hand-made runs are judged against."""
    folder = tmp_path / "params" / "baselines"
    folder.mkdir(parents=True)
    (folder / "handmade.cpu.json").write_text(json.dumps({"metrics": {
        "timing_s/step": {"value": 10.0, "reduce": "mean", "window": [5, 14]},
        "perf/throughput": {"value": 100.0, "reduce": "mean", "window": [5, 14]}}}))
    return folder.parent


def run_dir(make_run: Callable[..., Path], params: Path, **kwargs: object) -> Path:
    checks = {"baseline": "baselines/handmade.cpu.json", "min_steps": 15}
    return make_run(steady(GOOD), checks=checks, params_dir=params, **kwargs)


def test_passing_run_exits_0_and_writes_checks_json(make_run: Callable[..., Path], params: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    run = run_dir(make_run, params)

    assert main(["check", str(run)]) == 0

    out = capsys.readouterr().out
    assert "timing_s/step vs baseline" in out and out.rstrip().endswith("all 5 checks passed")
    assert json.loads((run / "checks.json").read_text())["verdict"]["status"] == "passed"


def test_impossible_threshold_exits_1_with_junit(make_run: Callable[..., Path], params: Path,
                                                 tmp_path: Path) -> None:
    run = run_dir(make_run, params)
    junit = tmp_path / "junit.xml"

    code = main(["check", str(run), "--expr", 'mean(data["timing_s/step"]) < 0.001',
                 "--junit", str(junit)])

    assert code == 1
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "2" and suite.get("errors") == "0"  # the run, the check
    assert not (run / "checks.json").exists()  # a what-if: the run's own verdict is not it


@pytest.mark.parametrize("extra,message", [
    (["--expr", '__import__("os").system("true") == 0'], "ExpressionError"),
    (["--baseline", "corrupt.json"], "BaselineError"),
    (["--baseline", "absent.json"], "BaselineError"),
])
def test_bad_expression_or_baseline_exits_2(make_run: Callable[..., Path], params: Path,
                                            tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            extra: list[str], message: str) -> None:
    run = run_dir(make_run, params)
    (tmp_path / "corrupt.json").write_text("{not json")
    extra = [str(tmp_path / e) if e.endswith(".json") else e for e in extra]

    assert main(["check", str(run), *extra]) == 2

    assert message in capsys.readouterr().err
    assert not (run / "checks.json").exists()


def test_scenario_with_invalid_checks_exits_2(make_run: Callable[..., Path], params: Path) -> None:
    run = make_run(steady(GOOD), checks={"expressions": ["data.__class__ > 1"]}, params_dir=params)

    assert main(["check", str(run)]) == 2


def test_failed_run_exits_3(make_run: Callable[..., Path], params: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    run = run_dir(make_run, params, status="failed", exit_code=1,
                  log="hydra.errors.ConfigCompositionException: Could not override 'a.b'.\n")

    assert main(["check", str(run)]) == 3

    out = capsys.readouterr().out
    assert "verdict: FAILED - Configuration error:" in out and "Could not override 'a.b'" in out


def test_run_stopped_early_exits_3(make_run: Callable[..., Path], params: Path) -> None:
    checks = {"baseline": "baselines/handmade.cpu.json"}
    run = make_run(steady(GOOD, range(1, 10)), checks=checks, params_dir=params)

    assert main(["check", str(run)]) == 3
    reason = json.loads((run / "checks.json").read_text())["verdict"]["reason"]
    assert "the run stopped at step 9, before step 14" in reason


def test_console_log_from_elsewhere_against_ascend_baseline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    series = steady({"actor/perf/max_memory_allocated_gb": 20.5, "timing_s/step": 84.0,
                     "perf/throughput": 240.0, "critic/rewards/mean": 0.41,
                     "training/rollout_probs_diff_mean": 0.0046})
    (tmp_path / "nightly.log").write_text(console_log(series))
    shutil.copy(DATA / "baseline_gspo_qwen3_8b_fsdp2_npu.txt", tmp_path / "base.txt")
    monkeypatch.chdir(tmp_path)

    assert main(["check", "nightly.log", "--baseline", "base.txt"]) == 0
    # run completed, reached step 15 (the log's progress bar says 15), the five comparisons
    assert json.loads((tmp_path / "checks.json").read_text())["verdict"]["counts"]["pass"] == 7

    assert main(["check", "nightly.log", "--baseline", "base.txt",
                 "--expr", 'data["perf/throughput"][-1] > 1.1 * baseline("perf/throughput")']) == 1
    assert "240 is not > 272.142" in capsys.readouterr().out


def test_bless_then_check_round_trip(make_run: Callable[..., Path], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    runs = [make_run(steady({"timing_s/step": t, "perf/throughput": 100.0}),
                     run_id=f"20261129T00000{i}Z-00000{i}", checks={"window": [2, 5]})
            for i, t in enumerate((10.0, 10.5, 11.0))]
    out = tmp_path / "blessed.json"

    assert main(["bless", *map(str, runs), "--out", str(out)]) == 0

    assert capsys.readouterr().out.strip().endswith(str(out))
    assert main(["check", str(runs[0]), "--baseline", str(out)]) == 0


REAL_LOGS = Path(__file__).parents[1] / "data" / "verl_logs"


def test_real_log_that_died_before_step_1_fails_with_its_diagnosis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    code = main(["check", str(REAL_LOGS / "13_searchr1-ppo-main_task-cuda-oom-before-step1.log"),
                 "--out", str(tmp_path)])

    result = json.loads((tmp_path / "checks.json").read_text())
    assert code == 3 and result["verdict"]["status"] == "failed"
    assert result["verdict"]["reason"].startswith("Out of memory: torch.cuda.OutOfMemoryError")
    assert result["verdict"]["reason"].endswith("no step completed")
    assert result["diagnosis"]["category"] == "oom"


def test_real_npu_log_is_checked_with_expressions(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    log = str(REAL_LOGS / "04_npu-ascend-grpo-sync-agentloop.log")

    code = main(["check", log, "--expr", 'data["actor/pg_clipfrac"][1] < 1e-4',
                 "--expr", 'data["timing_s/gen"][8] > 300', "--out", str(tmp_path)])

    result = json.loads((tmp_path / "checks.json").read_text())
    rows = result["rows"]
    assert code == 3  # the excerpt ends at step 9 of the 58 its progress bar announces
    assert "the run stopped at step 9, before step 58" in result["verdict"]["reason"]
    assert rows[-2]["value"] == 1.0500949201741605e-05 and rows[-2]["status"] == "pass"
    assert rows[-1]["value"] == 296.18450260488316 and rows[-1]["status"] == "fail"


def test_nightly_log_judged_by_the_npu_scenarios_checks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = Path(__file__).parents[2] / "params" / "gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml"
    series = steady({"actor/perf/max_memory_allocated_gb": 21.0, "timing_s/step": 82.0,
                     "perf/throughput": 250.0, "critic/rewards/mean": 0.38,
                     "training/rollout_probs_diff_mean": 0.0045, "actor/pg_loss": 0.02})
    (tmp_path / "nightly.log").write_text(console_log(series))
    monkeypatch.chdir(tmp_path)

    assert main(["check", "nightly.log", "--scenario", str(scenario)]) == 0

    result = json.loads((tmp_path / "checks.json").read_text())
    assert result["baseline"]["hardware"] == "a2" and result["required_step"] == 15
    assert sum(r["kind"] == "baseline" for r in result["rows"]) == 5

    (tmp_path / "short.log").write_text(console_log(steady({"timing_s/step": 82.0}, range(1, 12))))
    assert main(["check", "short.log", "--scenario", str(scenario)]) == 3


def test_baseline_import_writes_a_loadable_yaml_baseline(tmp_path: Path) -> None:
    out = tmp_path / "gspo.a2.yaml"

    code = main(["baseline", "import", str(DATA / "baseline_gspo_qwen3_8b_fsdp2_npu.txt"),
                 "--hardware", "a2", "--out", str(out)])

    assert code == 0
    baseline = load_baseline(out)
    assert baseline.value("timing_s/step") == 83.027817 and baseline.hardware == "a2"
    out.write_text("metrics: [unclosed")
    assert main(["check", str(DATA / "baseline_gspo_qwen3_8b_fsdp2_npu.txt"),
                 "--baseline", str(out)]) == 2
