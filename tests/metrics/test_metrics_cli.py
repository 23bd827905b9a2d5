"""``workbook metrics`` and ``workbook diagnose`` through their argparse handlers."""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
from pathlib import Path

import pytest

from workbook.cli import diagnose as diagnose_cli
from workbook.cli import metrics as metrics_cli
from workbook.errors import MetricsError
from workbook.metrics import load_metrics
from workbook.metrics.jsonl import read_jsonl

LOGS = Path(__file__).resolve().parents[1] / "data" / "verl_logs"
PPO = LOGS / "02_ppo-2node-ansi-resume-from-ckpt.log"
JSONL = LOGS / "12_jsonl-file-logger-ppo-null-and-string-values.log"


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="workbook")
    sub = parser.add_subparsers()
    metrics_cli.register(sub)
    diagnose_cli.register(sub)
    args = parser.parse_args(argv)
    code = args.handler(args)
    return code, capsys.readouterr().out


def test_jsonl_format_is_the_file_loggers_with_nan_as_null(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = cli(["metrics", str(JSONL), "--format", "jsonl"], capsys)
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["step"] for r in records] == [0, 1, 2, 3]
    assert records[3]["data"]["actor/pg_loss"] is None
    assert records[1]["data"]["critic/vf_loss"] == 1.9340452780015767
    again = read_jsonl(out.splitlines())
    assert again.steps[1] == load_metrics(JSONL).steps[1]


def test_console_log_converts_to_jsonl(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = cli(["metrics", str(PPO), "--format", "jsonl"], capsys)
    first = json.loads(out.splitlines()[0])
    assert first["step"] == 101 and first["data"]["actor/perf/max_memory_allocated_gb"] == 38.162


def test_csv_is_a_wide_table(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = cli(
        ["metrics", str(LOGS / "07_sft-trainer-tqdm-inline-steps.log"), "--format", "csv"], capsys
    )
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["step", "train/loss", "train/lr(1e-3)", "val/loss"]
    assert rows[5][:2] == ["5", "0.9921297430992126"]
    assert rows[5][3] == "" and rows[-1][3] == "0.5834625363349915"
    _, out = cli(["metrics", str(JSONL), "--format", "csv"], capsys)
    table = list(csv.DictReader(io.StringIO(out)))
    assert math.isnan(float(table[3]["actor/pg_loss"]))


def test_table_summarises_steps_and_headline_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = cli(["metrics", str(PPO)], capsys)
    assert "steps: 4 (101..104)   metrics: 65" in out
    pg_loss = next(line for line in out.splitlines() if line.startswith("actor/pg_loss"))
    assert pg_loss.split()[1:] == ["0.019", "0.037"]
    assert (
        next(line for line in out.splitlines() if line.startswith("perf/throughput")).split()[-1]
        == "379.15"
    )


def test_run_directory_and_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run.log").write_text("step:1 - actor/pg_loss:0.5\n")
    (tmp_path / "metrics.jsonl").write_text('{"step": 2, "data": {"actor/pg_loss": 0.25}}\n')
    _, out = cli(["metrics", str(tmp_path), "--format", "jsonl"], capsys)
    assert [json.loads(line)["step"] for line in out.splitlines()] == [1, 2]
    with pytest.raises(MetricsError) as caught:
        cli(["metrics", str(tmp_path / "nope")], capsys)
    assert caught.value.exit_code == 2


def test_diagnose_prints_the_json_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = cli(
        ["diagnose", str(LOGS / "13_searchr1-ppo-main_task-cuda-oom-before-step1.log")], capsys
    )
    result = json.loads(out)
    assert code == 0 and result["category"] == "oom" and result["status"] == "failed"
    (tmp_path / "run.log").write_text("step:1 - a:1\nstep:2 - a:2\n")
    (tmp_path / "run.json").write_text(json.dumps({"exit_code": 143, "status": "stopped"}))
    _, out = cli(["diagnose", str(tmp_path)], capsys)
    assert json.loads(out)["category"] == "stopped" and json.loads(out)["last_step"] == 2
    _, out = cli(
        ["diagnose", str(tmp_path / "run.log"), "--exit-code", "0", "--expected-steps", "3"], capsys
    )
    assert json.loads(out)["status"] == "incomplete"
    with pytest.raises(MetricsError):
        cli(["diagnose", str(tmp_path / "missing.log")], capsys)


def test_installed_cli_entry_point_runs_both_commands(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "workbook", "metrics", str(JSONL), "--format", "jsonl"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert [json.loads(line)["step"] for line in out.stdout.splitlines()] == [0, 1, 2, 3]
    log = tmp_path / "run.log"
    log.write_text("Could not override 'trainer.foo'.\nKey 'foo' is not in struct\n")
    out = subprocess.run(
        [sys.executable, "-m", "workbook", "diagnose", str(log), "--exit-code", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and json.loads(out.stdout)["category"] == "config_error"
    out = subprocess.run(
        [sys.executable, "-m", "workbook", "metrics", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "missing" in out.stderr
