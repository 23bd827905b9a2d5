"""The ledger: one entry per judged night of a scenario, rebuilt from the run directories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.history.nights import IDLE, SCENARIO, VERSIONS, newer, night
from workbook.history.ledger import (
    LEDGER_DIR,
    SINGLE,
    dump,
    entry_of,
    last_green,
    ledger_file,
    previous_comparisons,
    read_all,
    read_file,
    read_ledger,
    rebuild,
    record,
)


def test_an_entry_holds_what_a_red_night_is_compared_by(tmp_path: Path) -> None:
    baseline = tmp_path / "b.cpu.json"
    baseline.write_text('{"metrics": {"timing_s/step": {"value": 5.0}}}', encoding="utf-8")
    run = night(tmp_path, 3, "regressed", baseline=baseline)

    entry = entry_of(run, tmp_path)

    assert entry is not None
    assert (entry.scenario, entry.hardware, entry.verdict) == (SCENARIO, "cpu", "regressed")
    assert entry.path == f"{SCENARIO}/{run.name}" and entry.night == SINGLE
    assert entry.date == "2026-11-03T02:00:00Z" and entry.host == "vm"
    assert entry.versions == VERSIONS and entry.commits == {"workbook": "1111111", "verl": "aaaaaaa"}
    assert entry.hardware_key == {"profile": "cpu", "device": "AMD EPYC", "count": 2}
    assert entry.settings == {"lr": 0.0001, "clip_ratio_high": 0.0004, "total_training_steps": 4}
    assert entry.baseline["path"] == str(baseline) and len(entry.baseline["sha256"] or "") == 64
    assert entry.headline == {"timing_s/step": pytest.approx(5.3)}


def test_cann_is_a_version_like_the_packages(tmp_path: Path) -> None:
    run = night(tmp_path, 3)
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "cann_version": "8.3.RC1"}))

    entry = entry_of(run, tmp_path)

    assert entry is not None and entry.versions["CANN"] == "8.3.RC1"


def _sweep_point(root: Path) -> Path:
    return night(root, 4, folder=root / "sweeps" / SCENARIO / "abc123" / "clip_ratio_high=6e-4")


def _sweep_elsewhere(root: Path) -> Path:
    sweep = root / "my-sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text("{}")
    return night(root, 4, folder=sweep / "point-0")


def _fault_in_env(root: Path) -> Path:
    return night(root, 4, "regressed", env={"WORKBOOK_FAULT": "pg_loss_x2"})


def _fault_in_overrides(root: Path) -> Path:
    return night(root, 4, "regressed", overrides=["env.WORKBOOK_FAULT=slow_update@3"])


def _unjudged(root: Path) -> Path:
    run = night(root, 4)
    (run / "checks.json").unlink()
    info = json.loads((run / "run.json").read_text())
    info.pop("verdict")
    (run / "run.json").write_text(json.dumps(info))
    return run


@pytest.mark.parametrize("make", [_sweep_point, _sweep_elsewhere, _fault_in_env,
                                  _fault_in_overrides, _unjudged],
                         ids=lambda f: f.__name__[1:])
def test_what_is_not_a_night_is_not_in_the_ledger(tmp_path: Path, make) -> None:
    green = night(tmp_path, 3)
    other = make(tmp_path)

    assert record(other, tmp_path) is None
    entries = read_ledger(tmp_path, SCENARIO, "cpu")

    assert [e.run_id for e in entries] == [green.name]
    assert [e.run_id for e in rebuild(tmp_path)[(SCENARIO, "cpu")]] == [green.name]


def test_an_empty_fault_variable_loads_no_fault(tmp_path: Path) -> None:
    run = night(tmp_path, 3, env={"WORKBOOK_FAULT": ""})

    assert record(run, tmp_path) is not None


def test_a_suite_nights_entry_names_its_night(tmp_path: Path) -> None:
    folder = tmp_path / "suites" / "smoke-cpu" / "2026-11-05"
    folder.mkdir(parents=True)
    (folder / "suite.json").write_text("{}")
    run = night(tmp_path, 5, folder=folder / SCENARIO)

    entry = record(run, tmp_path)

    assert entry is not None and entry.night == "suites/smoke-cpu/2026-11-05"
    assert entry.path == f"suites/smoke-cpu/2026-11-05/{SCENARIO}/{run.name}"


def test_the_ledger_rebuilds_from_the_run_directories_identically(tmp_path: Path) -> None:
    runs = [night(tmp_path, 3), night(tmp_path, 5, "regressed"),
            night(tmp_path, 4, versions=newer(VERSIONS, torch="2.14.0+cpu")),
            night(tmp_path, 6, "failed", host="other")]
    for run in runs:  # as each is closed, not in date order
        record(run, tmp_path)
    path = ledger_file(tmp_path, SCENARIO, "cpu")
    recorded = path.read_bytes()

    shutil.rmtree(tmp_path / LEDGER_DIR)
    rebuilt = read_all(tmp_path)

    assert path.read_bytes() == recorded == dump(rebuilt[(SCENARIO, "cpu")]).encode()
    assert [e.date[:10] for e in read_file(path)] == [
        "2026-11-03", "2026-11-04", "2026-11-05", "2026-11-06"]


def test_a_copy_of_a_night_judged_elsewhere_is_not_a_second_night(tmp_path: Path) -> None:
    run = night(tmp_path / "runs", 3)
    record(run, tmp_path / "runs")
    copy = tmp_path / "scratch" / run.name
    shutil.copytree(run, copy)  # run.json still names the runs root it was made in

    assert record(copy, tmp_path / "runs") is None
    assert [e.path for e in read_ledger(tmp_path / "runs", SCENARIO, "cpu")] == [
        f"{SCENARIO}/{run.name}"]


def test_a_night_moved_out_of_its_runs_root_keeps_one_entry_that_follows_it(
        tmp_path: Path) -> None:
    run = night(tmp_path / "runs", 3)
    record(run, tmp_path / "runs")
    moved = tmp_path / "kept" / run.name
    moved.parent.mkdir()
    shutil.move(run, moved)

    record(moved, tmp_path / "runs")

    assert [e.path for e in read_ledger(tmp_path / "runs", SCENARIO, "cpu")] == [str(moved)]


def test_a_copy_inside_the_runs_root_counts_once_when_the_ledger_is_rebuilt(
        tmp_path: Path) -> None:
    run = night(tmp_path, 3)
    shutil.copytree(run, tmp_path / "site" / run.name)

    assert [e.run_id for e in rebuild(tmp_path)[(SCENARIO, "cpu")]] == [run.name]


def test_the_first_record_in_an_old_runs_root_builds_every_ledger(tmp_path: Path) -> None:
    older = night(tmp_path, 3)  # closed before the ledger existed
    run = night(tmp_path, 4)

    record(run, tmp_path)

    assert [e.run_id for e in read_file(ledger_file(tmp_path, SCENARIO, "cpu"))] == [
        older.name, run.name]


@pytest.mark.parametrize("verdicts, before, expected", [
    (["passed", "regressed", "regressed"], 2, 0),
    (["passed", "improved", "regressed"], 2, 1),  # improved is green: the baseline is stale
    (["passed", "failed", "stopped", "regressed"], 3, 0),
    (["regressed", "failed"], 1, None),
    (["passed", "passed"], 0, None),  # nothing before the first night
], ids=["last-pass", "improved-counts", "skips-red-and-stopped", "never-green", "first-night"])
def test_last_green_is_the_newest_green_night_before(tmp_path: Path, verdicts: list[str],
                                                    before: int, expected: int | None) -> None:
    runs = [night(tmp_path, 3 + i, v) for i, v in enumerate(verdicts)]
    entries = [entry_of(r, tmp_path) for r in runs]
    ledger = [e for e in entries if e is not None]

    found = last_green(ledger, before=ledger[before])

    assert found == (None if expected is None else ledger[expected])


def test_a_date_written_with_an_offset_sorts_with_the_others(tmp_path: Path) -> None:
    early, late = night(tmp_path, 3), night(tmp_path, 3, hour=5)
    info = json.loads((early / "run.json").read_text())
    (early / "run.json").write_text(json.dumps({**info, "started_at": "2026-11-03T02:00:00+00:00"}))

    order = [e.run_id for e in rebuild(tmp_path)[(SCENARIO, "cpu")]]

    assert order == [early.name, late.name]


def test_the_image_the_runs_own_environment_names_is_its_image(tmp_path: Path) -> None:
    named = "registry/verl@sha256:" + "a" * 64
    run = night(tmp_path, 3, env={"WORKBOOK_IMAGE": named})
    info = json.loads((run / "run.json").read_text())
    hint = {"ref": None, "digest": None, "container": "c" * 64, "source": "container hints"}
    (run / "run.json").write_text(json.dumps({**info, "image": hint}))

    entry = entry_of(run, tmp_path)

    assert entry is not None
    assert entry.image == {"ref": named, "digest": "sha256:" + "a" * 64, "source": "WORKBOOK_IMAGE"}


def test_an_entry_keeps_each_compared_metrics_status_through_its_file(tmp_path: Path) -> None:
    run = night(tmp_path, 3, "regressed")
    checks = json.loads((run / "checks.json").read_text(encoding="utf-8"))
    checks["rows"] += [{"name": "perf/throughput vs baseline", "kind": "baseline",
                        "metric": "perf/throughput", "status": "suspect"},
                       {"name": "perf/throughput vs baseline", "kind": "baseline",
                        "metric": "perf/throughput", "status": "pass"},  # the first row counts
                       {"name": "loss finite", "kind": "finite", "metric": "actor/pg_loss",
                        "status": "fail"}]
    (run / "checks.json").write_text(json.dumps(checks), encoding="utf-8")

    entry = entry_of(run, tmp_path)
    path = tmp_path / "ledger.jsonl"
    path.write_text(dump([entry]), encoding="utf-8")

    assert entry is not None
    assert entry.comparisons == {"timing_s/step": "fail", "perf/throughput": "suspect"}
    assert read_file(path) == [entry]


def test_an_entry_written_before_comparisons_were_kept_still_loads(tmp_path: Path) -> None:
    entry = entry_of(night(tmp_path, 3), tmp_path)
    assert entry is not None
    old = {k: v for k, v in entry.to_dict().items() if k != "comparisons"}
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(old) + "\n", encoding="utf-8")

    (loaded,) = read_file(path)

    assert loaded.comparisons == {} and loaded.run_id == entry.run_id


def test_the_previous_nights_statuses_are_newest_first_and_leave_the_run_out(
        tmp_path: Path) -> None:
    for day, verdict in ((1, "passed"), (2, "regressed"), (3, "passed"), (5, "regressed")):
        night(tmp_path, day, verdict)
    ledger = read_ledger(tmp_path, SCENARIO, "cpu")
    tonight = ledger[-1]

    previous = previous_comparisons(ledger, tonight.path, tonight.date)
    two = previous_comparisons(ledger, "elsewhere", "2026-11-04T02:00:00Z", nights=2)

    assert previous == {"timing_s/step": ["pass", "fail", "pass"]}
    assert two == {"timing_s/step": ["pass", "fail"]}


def test_an_entry_records_the_tuning_env_and_machine_apart_from_the_settings(
        tmp_path: Path) -> None:
    overrides = ["actor_rollout_ref.actor.use_torch_compile=False",
                 "algorithm.use_kl_in_reward=False"]
    run = night(tmp_path, 3, settings={"overrides": overrides, "env": {"OMP_NUM_THREADS": "1"},
                                       "rollout_memory_utilization": 0.3}, conditions=IDLE)

    entry = entry_of(run, tmp_path)

    assert entry is not None
    assert entry.settings["overrides"] == ["algorithm.use_kl_in_reward=False"]
    assert entry.tuning == {"actor_rollout_ref.actor.use_torch_compile": "False",
                            "rollout_memory_utilization": 0.3}
    assert entry.env == {"OMP_NUM_THREADS": "1"} and entry.conditions == IDLE


def test_an_entry_written_before_tuning_env_and_conditions_were_kept_still_loads(
        tmp_path: Path) -> None:
    entry = entry_of(night(tmp_path, 3), tmp_path)
    assert entry is not None
    old = {k: v for k, v in entry.to_dict().items() if k not in ("tuning", "env", "conditions")}
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(old) + "\n", encoding="utf-8")

    (loaded,) = read_file(path)

    assert (loaded.tuning, loaded.env, loaded.conditions) == (None, None, None)
    assert loaded.settings == entry.settings and loaded.run_id == entry.run_id
