"""Closing a run updates its scenario's ledger, once, before the index that shows it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from workbook.core.layout import RunDir
from workbook.history.ledger import LEDGER_DIR, read_all, rebuild
from workbook.launch.outcome import Outcome
from workbook.run import life

PROJECT = Path(__file__).resolve().parents[2]
LOG = PROJECT / "tests" / "profiles" / "data" / "gspo_cpu_run.log"  # a real tiny GSPO run
SCENARIO = "gspo-tiny-1n1cpu-fsdp2-vllm"


def finished_run(root: Path, baseline: Path | None = None) -> RunDir:
    """A run directory as the launcher leaves it (see tests/run/test_life.py)."""
    rd = RunDir.create(root, SCENARIO)
    shutil.copyfile(LOG, rd.file("log"))
    rd.update_run(run_id=rd.run_id, scenario=SCENARIO, status="running", expected_steps=4,
                  runs_root=str(root), notebook="gspo", profile="cpu",
                  started_at="2026-12-01T10:00:00Z")
    if baseline is not None:
        rd.file("params").write_text(f"profile: cpu\ntotal_training_steps: 4\nchecks:\n"
                                     f"  baseline: {baseline}\n", encoding="utf-8")
    life.record_outcome(rd, Outcome("succeeded", 0, "2026-12-01T10:00:00Z",
                                    "2026-12-01T10:03:00Z", 180.0), expected_steps=4)
    return rd


def test_closing_a_run_records_it_in_its_ledger_once(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    rd = finished_run(root)

    first = life.close(rd, announce=False)
    again = life.close(rd, announce=False)

    assert not first.errors and not again.errors
    closed = rd.read_json("run")["closed"]
    assert closed["ledger"]["inputs"] == "recorded" and closed["ledger"]["times"] == 1
    entries = read_all(root)[(SCENARIO, "cpu")]
    assert [(e.run_id, e.verdict) for e in entries] == [(rd.run_id, rd.verdict()["status"])]
    assert (root / LEDGER_DIR / f"{SCENARIO}.cpu.jsonl").is_file()


def test_the_baseline_digest_is_the_one_the_run_was_judged_with(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    baseline = tmp_path / "tiny.cpu.json"
    shutil.copyfile(PROJECT / "params" / "baselines" / f"{SCENARIO}.cpu.json", baseline)
    judged_with = hashlib.sha256(baseline.read_bytes()).hexdigest()
    rd = finished_run(root, baseline)
    life.close(rd, announce=False)

    data = json.loads(baseline.read_text(encoding="utf-8"))
    baseline.write_text(json.dumps(data), encoding="utf-8")  # re-blessed after the run
    rebuilt = rebuild(root)[(SCENARIO, "cpu")]

    assert [e.baseline for e in rebuilt] == [{"path": str(baseline), "sha256": judged_with}]
    assert rd.read_json("run")["closed"]["ledger"]["baseline_sha256"] == judged_with


def test_a_noisy_metric_is_suspect_on_its_first_night_beyond_and_regressed_on_its_second(
        tmp_path: Path) -> None:
    root = tmp_path / "runs"
    baseline = tmp_path / "slow.cpu.json"  # any real step time is far above 1 ms
    baseline.write_text('{"metrics": {"timing_s/step": {"value": 0.001, "reduce": "mean"}}}',
                        encoding="utf-8")
    verdicts, statuses = [], []
    for hour in (10, 11):
        verdicts.append(noisy_night(root, baseline, hour).verdict()["status"])
        statuses.append(read_all(root)[(SCENARIO, "cpu")][-1].comparisons)

    assert verdicts == ["suspect", "regressed"]
    assert statuses == [{"timing_s/step": "suspect"}, {"timing_s/step": "fail"}]


def noisy_night(root: Path, baseline: Path, hour: int) -> RunDir:
    """A night whose step time is beyond its band, on a policy that asks 2 nights to confirm."""
    rd = RunDir.create(root, SCENARIO)
    shutil.copyfile(LOG, rd.file("log"))
    rd.update_run(run_id=rd.run_id, scenario=SCENARIO, status="running", expected_steps=4,
                  runs_root=str(root), notebook="gspo", profile="cpu",
                  started_at=f"2026-12-01T{hour}:00:00Z")
    rd.file("params").write_text(
        f"profile: cpu\ntotal_training_steps: 4\nchecks:\n  baseline: {baseline}\n"
        "  defaults: false\n  window: [1, 4]\n  metrics:\n"
        "    timing_s/step: {rtol: 0.05, confirm_nights: 2}\n", encoding="utf-8")
    life.record_outcome(rd, Outcome("succeeded", 0, f"2026-12-01T{hour}:00:00Z",
                                    f"2026-12-01T{hour}:03:00Z", 180.0), expected_steps=4)
    assert not life.close(rd, announce=False).errors
    return rd
