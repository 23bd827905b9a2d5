"""``workbook nightly sync`` against verl-like checkouts built from the committed script facts:
nothing moved is exit 0; each way verl's nightly or the recipe's baselines can move is reported
job by job with exit 1; a checkout that is not there, or a script that cannot be read, is
exit 2. ``--write`` records what moved, with where the numbers came from."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.nightly.checkouts import (
    COMMIT_DATE,
    build_recipe,
    build_verl,
    committed_facts,
    params_copy,
    recipe_commit,
)
from workbook.checks.baseline import load_baseline
from workbook.cli import main

PPO = "ppo-qwen3-8b-1n8npu-fsdp-vllm"  # A2 baseline; its job's env: sets its one variable
GSPO_A3 = "gspo-qwen3-30b-a3b-1n16npu-megatron-vllm"  # A3 baseline; the script exports
QUICK = "grpo-qwen3-0.6b-1n8npu-fsdp2-vllm"  # TOTAL_TRAINING_STEPS=1 bash ...; a launch-time name
QWEN35 = "grpo-qwen3.5-2b-1n4npu-fsdp2-vllm"  # the step's export PYTHONPATH=...:$PYTHONPATH
RAYJOB = "gspo-qwen3-30b-a3b-2n16npu-megatron-vllm-rayjob"  # handed to a RayJob submitter
NAMES = [PPO, GSPO_A3, QUICK, QWEN35, RAYJOB]
PPO_JOB = "nightlyCI_ppo-qwen3-8b-fsdp-vllm_ascend"
VL_MEMORY = "actor/perf/max_memory_allocated_gb"


@pytest.fixture
def params(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The scenarios, baselines and script facts of NAMES, in a copy the test may write."""
    folder = params_copy(tmp_path, NAMES)
    monkeypatch.setenv("WORKBOOK_PARAMS", str(folder))
    monkeypatch.delenv("WORKBOOK_VERL", raising=False)
    return folder


def facts(*, drop: str | None = None, **changes: Any) -> list[dict[str, Any]]:
    """The committed facts of NAMES (less ``drop``), ``changes`` applied to the PPO job's."""
    out = [committed_facts(n) for n in NAMES if n != drop]
    out[0] = {**out[0], **changes}
    return out


def sync(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["nightly", "sync", *argv])
    out = capsys.readouterr()
    return code, out.out + out.err


def section(report: str, job: str) -> str:
    """The report's lines about one job."""
    part = report.split(f"`{job}`", 1)[1]
    return part.split("\n## ", 1)[0]


def test_an_unchanged_nightly_and_recipe_are_no_drift(
        params: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verl, recipe = build_verl(tmp_path, facts()), build_recipe(tmp_path, NAMES)

    code, report = sync(capsys, "--verl", str(verl), "--recipe", str(recipe))

    assert code == 0, report
    assert f"all {len(NAMES)} jobs as reproduced" in report
    assert f"`{PPO_JOB}` -> `{PPO}`" in report


def _override(value: str) -> list[str]:
    moved = [o for o in committed_facts(PPO)["overrides"] if not o.startswith("data.train_batch_size=")]
    return moved + [f"data.train_batch_size={value}"]


@pytest.mark.parametrize(
    ("build", "job", "expected"),
    [
        (lambda: facts(overrides=_override("64")), PPO_JOB,
         "override data.train_batch_size: the scenario has data.train_batch_size=32, the script data.train_batch_size=64"),
        (lambda: facts(env={"TRANSFORMERS_VERBOSITY": "info"}), PPO_JOB,
         "env TRANSFORMERS_VERBOSITY: the scenario has TRANSFORMERS_VERBOSITY=error, the script TRANSFORMERS_VERBOSITY=info"),
        (lambda: facts(env={"TRANSFORMERS_VERBOSITY": "error", "HCCL_CONNECT_TIMEOUT": "3600"}), PPO_JOB,
         "env HCCL_CONNECT_TIMEOUT: the script sets HCCL_CONNECT_TIMEOUT=3600; the scenario does not"),
        (lambda: facts(script="tests/special_npu/nightly_ci_ascend/run_ppo_qwen3_8b_fsdp_npu_v2.sh"), PPO_JOB,
         "script: was `tests/special_npu/nightly_ci_ascend/run_ppo_qwen3-8b_fsdp_npu.sh`, now "
         "`tests/special_npu/nightly_ci_ascend/run_ppo_qwen3_8b_fsdp_npu_v2.sh`"),
        (lambda: facts() + [{**committed_facts(PPO), "job": "nightlyCI_new_ascend",
                             "script": "tests/special_npu/nightly_ci_ascend/run_new.sh", "scenario": "new"}],
         "nightlyCI_new_ascend", "runs `tests/special_npu/nightly_ci_ascend/run_new.sh`; no scenario reproduces it"),
        (lambda: facts(drop=QUICK), "quick_start_qwen3_0_6b_fsdp2_vllm_ascend",
         "verl's nightly no longer runs it"),
    ],
    ids=["override", "env-value", "env-added", "script-moved", "new-job", "removed-job"],
)
def test_each_way_verls_nightly_moves_is_reported_for_its_job(
        params: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], build: Any, job: str,
        expected: str) -> None:
    verl = build_verl(tmp_path, build())

    code, report = sync(capsys, "--verl", str(verl))

    assert code == 1, report
    assert expected in section(report, job)
    assert "1 of" in report.splitlines()[0]  # every other job as reproduced


def test_a_baseline_the_recipe_moved_is_reported_with_its_values(
        params: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verl = build_verl(tmp_path, facts())
    recipe = build_recipe(tmp_path, NAMES, {"timing_s/step:74.86": "timing_s/step:80.5"})

    code, report = sync(capsys, "--verl", str(verl), "--recipe", str(recipe))

    assert code == 1, report
    assert ("baseline a2 timing_s/step: the scenario's 74.86, the recipe's 80.5 "
            "(`baseline/a2/nightly_log/run_ppo_qwen3-8b_fsdp_npu/baseline_ppo_qwen3-8b_fsdp_npu.txt`)"
            ) in section(report, PPO_JOB)
    assert "1 of" in report.splitlines()[0]


def test_a_baseline_the_recipe_no_longer_holds_is_drift(
        params: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verl, recipe = build_verl(tmp_path, facts()), build_recipe(tmp_path, NAMES)
    next(recipe.glob("baseline/a2/nightly_log/run_ppo*/*.txt")).unlink()

    code, report = sync(capsys, "--verl", str(verl), "--recipe", str(recipe))

    assert code == 1
    assert "the recipe holds no such file" in section(report, PPO_JOB)


def test_a_job_that_no_longer_checks_against_a_baseline_is_drift(
        params: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verl = build_verl(tmp_path, facts(), unchecked=(PPO_JOB,))
    recipe = build_recipe(tmp_path, NAMES)

    code, report = sync(capsys, "--verl", str(verl), "--recipe", str(recipe))

    assert code == 1
    assert ("baseline: verl's job checks against none any more; the scenario still judges "
            "against verl's") in section(report, PPO_JOB)


def test_write_records_the_moved_facts_and_imports_the_baseline_with_its_provenance(
        params: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verl = build_verl(tmp_path, facts(overrides=_override("64")))
    recipe = build_recipe(tmp_path, NAMES, {"timing_s/step:74.86": "timing_s/step:80.5"})
    untouched = (params / "nightly" / f"{QUICK}.script.json").read_text()

    code, report = sync(capsys, "--verl", str(verl), "--recipe", str(recipe), "--write")

    assert code == 1
    written = json.loads((params / "nightly" / f"{PPO}.script.json").read_text())
    assert "data.train_batch_size=64" in written["overrides"] and written["scenario"] == PPO
    assert (params / "nightly" / f"{QUICK}.script.json").read_text() == untouched
    baseline = load_baseline(params / "baselines" / f"{PPO}.a2.json")
    assert baseline.value("timing_s/step") == 80.5
    path = "baseline/a2/nightly_log/run_ppo_qwen3-8b_fsdp_npu/baseline_ppo_qwen3-8b_fsdp_npu.txt"
    assert baseline.provenance["origin"] == f"verl-project/verl-ascend-recipe@{recipe_commit(recipe)}:{path}"
    assert baseline.provenance["origin_date"] == COMMIT_DATE
    assert baseline.provenance["imported_from"] == "params/baselines/ascend/baseline_ppo_qwen3-8b_fsdp_npu.a2.txt"
    assert "timing_s/step:80.5" in (params / "baselines" / "ascend" / "baseline_ppo_qwen3-8b_fsdp_npu.a2.txt").read_text()
    # again: the baseline is in place; the scenario itself is a person's to change
    code, report = sync(capsys, "--verl", str(verl), "--recipe", str(recipe))
    assert code == 1 and "baseline" not in section(report, PPO_JOB)
    assert "data.train_batch_size=64" in section(report, PPO_JOB)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--verl", "{tmp}/no-verl"], "--verl {tmp}/no-verl: not a folder"),
        (["--verl", "{verl}", "--recipe", "{tmp}/no-recipe"], "--recipe {tmp}/no-recipe: not a folder"),
        (["--verl", "{tmp}"], "no nightly Ascend workflow under .github/workflows"),
        (["--verl", "{verl}", "--timeout-per-script", "0"], "--timeout-per-script must be more than 0"),
    ],
    ids=["verl-missing", "recipe-missing", "not-a-verl-checkout", "no-time"],
)
def test_a_checkout_that_is_not_there_is_bad_input(
        params: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
        expected: str) -> None:
    verl = build_verl(tmp_path / "v", facts())
    given = [a.format(tmp=tmp_path, verl=verl) for a in argv]

    code, report = sync(capsys, *given)

    assert code == 2
    assert expected.format(tmp=tmp_path) in report


def test_a_script_that_starts_no_python_is_bad_input_naming_its_job(
        params: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verl = build_verl(tmp_path, facts())
    script = verl / committed_facts(PPO)["script"]
    script.write_text("echo 'nothing to train today'\nexit 1\n")

    code, report = sync(capsys, "--verl", str(verl))

    assert code == 2
    assert f"job {PPO_JOB}: {committed_facts(PPO)['script']} started no `python3 -m ...` (exit 1)" in report
    assert "nothing to train today" in report


def test_a_script_that_never_ends_is_stopped_in_bounded_time(
        params: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verl = build_verl(tmp_path, facts())
    (verl / committed_facts(PPO)["script"]).write_text("while true; do :; done\n")
    started = time.monotonic()

    code, report = sync(capsys, "--verl", str(verl), "--timeout-per-script", "1")

    assert code == 2
    assert "did not finish in 1 s under the stand-ins" in report
    assert time.monotonic() - started < 60
