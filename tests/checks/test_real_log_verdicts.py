"""The verdict on real logs, bare and judged as a scenario: no failed run passes.

Shared logs (tests/data/verl_logs, from public repositories) and logs derived from this
project's own real CPU runs (tests/data/derived_logs, README there): a run cut after a step, a
crash after a step, a NaN loss at a step, a dead worker, a two-node collective timeout, a
rendezvous port another process took. Each row
gives the verdict and exit code of ``workbook check``, without and with ``--scenario``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbook.cli import main

TESTS = Path(__file__).resolve().parents[1]
SHARED, DERIVED = TESTS / "data" / "verl_logs", TESTS / "data" / "derived_logs"
PARAMS = TESTS.parent / "params"
GSPO_TINY, PPO_TINY = PARAMS / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml", PARAMS / "ppo-tiny-2n1cpu-fsdp2-vllm-ray.yaml"
GSPO_NPU, PPO_NPU = PARAMS / "gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml", PARAMS / "ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob.yaml"

CASES = [
    # log, scenario (None: bare), verdict, exit code, words the reason must carry
    (SHARED / "01_verl-notebook-ppo-oldstyle-main_task.log", None, "passed", 0, "all"),
    (SHARED / "02_ppo-2node-ansi-resume-from-ckpt.log", None, "failed", 3, "before step 435"),
    (SHARED / "04_npu-ascend-grpo-sync-agentloop.log", None, "failed", 3, "before step 58"),
    (SHARED / "04_npu-ascend-grpo-sync-agentloop.log", GSPO_NPU, "failed", 3, "before step 15"),
    (SHARED / "07_sft-trainer-tqdm-inline-steps.log", None, "passed", 0, "all"),
    (SHARED / "08_dapo-retool-npfloat64-hardwrapped-214.log", None, "passed", 0, "all"),
    (SHARED / "12_jsonl-file-logger-ppo-null-and-string-values.log", None, "regressed", 1, "nan"),
    (SHARED / "12_jsonl-file-logger-ppo-null-and-string-values.log", PPO_NPU, "regressed", 1, "nan"),
    (SHARED / "13_searchr1-ppo-main_task-cuda-oom-before-step1.log", None, "failed", 3, "Out of memory"),
    (SHARED / "13_searchr1-ppo-main_task-cuda-oom-before-step1.log", PPO_NPU, "failed", 3, "Out of memory"),
    (DERIVED / "gspo-cut-after-step-2.log", None, "failed", 3, "before step 4"),
    (DERIVED / "gspo-cut-after-step-2.log", GSPO_TINY, "failed", 3, "before step 4"),
    (DERIVED / "gspo-crash-at-step-3.log", None, "failed", 3, "injected fault"),
    (DERIVED / "gspo-crash-at-step-3.log", GSPO_TINY, "failed", 3, "injected fault"),
    (DERIVED / "gspo-nan-loss-at-step-3.log", None, "regressed", 1, "nan at step 3"),
    (DERIVED / "gspo-nan-loss-at-step-3.log", GSPO_TINY, "regressed", 1, "nan at step 3"),
    (DERIVED / "gspo-worker-killed-at-step-3.log", None, "failed", 3, "last step 2"),
    (DERIVED / "gspo-worker-killed-at-step-3.log", GSPO_TINY, "failed", 3, "last step 2"),
    (DERIVED / "ppo-2node-collective-timeout-after-step-1.log", None, "failed", 3, "timed out"),
    (DERIVED / "ppo-2node-collective-timeout-after-step-1.log", PPO_TINY, "failed", 3, "timed out"),
    (DERIVED / "gspo-port-in-use-before-step-1.log", None, "failed", 3,
     "Infrastructure failure (network port already in use"),
    (DERIVED / "gspo-port-in-use-before-step-1.log", GSPO_TINY, "failed", 3,
     "Infrastructure failure (network port already in use"),
]


@pytest.mark.parametrize("log, scenario, verdict, code, words", CASES,
                         ids=[f"{c[0].stem[:40]}-{c[1].stem[:12] if c[1] else 'bare'}" for c in CASES])
def test_the_verdict_of_a_real_log(log: Path, scenario: Path | None, verdict: str, code: int,
                                   words: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["check", str(log), "--out", str(tmp_path / "checks.json")] + (
        ["--scenario", str(scenario)] if scenario else [])

    assert main(args) == code

    result = json.loads((tmp_path / "checks.json").read_text())["verdict"]
    assert result["status"] == verdict
    assert words.lower() in result["reason"].lower(), result["reason"]


@pytest.mark.parametrize("log", sorted(DERIVED.glob("*.log")), ids=lambda p: p.stem)
def test_diagnose_report_and_check_agree_on_each_derived_log(log: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["check", str(log), "--out", str(tmp_path / "checks.json")])
    checked = json.loads((tmp_path / "checks.json").read_text())["verdict"]["status"]
    assert main(["report", str(log), "--out", str(tmp_path / "runs")]) == code
    report_dir = Path(capsys.readouterr().out.strip().splitlines()[-1]).parent
    reported = json.loads((report_dir / "checks.json").read_text())["verdict"]
    assert reported["status"] == checked and reported["exit_code"] == code
