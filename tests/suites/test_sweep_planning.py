"""Sweeps before any launch: the grid, the points, validation naming the point, resuming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbook.batch.sweep import parse_grid, points_of, sweep_dir
from workbook.cli import main
from workbook.errors import InputError

REPO = Path(__file__).resolve().parents[2]
GSPO = REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"


def test_the_grid_expands_to_every_combination_in_order() -> None:
    grid = parse_grid(["clip_ratio_high=4e-4,6e-4", "clip_ratio_low=3e-4,5e-4"])

    points = points_of(grid)

    assert [p.sets() for p in points] == [
        ["clip_ratio_high=4e-4", "clip_ratio_low=3e-4"], ["clip_ratio_high=4e-4", "clip_ratio_low=5e-4"],
        ["clip_ratio_high=6e-4", "clip_ratio_low=3e-4"], ["clip_ratio_high=6e-4", "clip_ratio_low=5e-4"]]
    assert points[0].key == "01-clip_ratio_high4e-4-clip_ratio_low3e-4"


@pytest.mark.parametrize("items, message", [
    ([], "at least one --grid"), (["clip_ratio_high"], "expected KEY=V1,V2"),
    (["a=1", "a=2"], "given twice"), (["a="], "expected KEY=V1,V2"),
])
def test_a_malformed_grid_is_refused(items: list[str], message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_grid(items)


def test_the_same_sweep_gets_the_same_directory_so_it_resumes(tmp_path: Path) -> None:
    grid = parse_grid(["clip_ratio_high=4e-4,6e-4"])
    a = sweep_dir(GSPO, grid, [], True, tmp_path)
    assert a == sweep_dir(GSPO, grid, [], True, tmp_path)
    assert a != sweep_dir(GSPO, grid, ["lr=1e-3"], True, tmp_path)
    assert a.parent == tmp_path / "sweeps" / GSPO.stem


def test_an_invalid_point_is_named_and_nothing_starts(tmp_path: Path, cpu_assets: object,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", str(GSPO), "--grid", "clip_ratio_high=4e-4,1.5",
                 "--runs", str(tmp_path / "runs")])

    assert code == 2
    err = capsys.readouterr().err
    assert "point 02-clip_ratio_high1.5" in err and "inside (0, 1)" in err
    assert not (tmp_path / "runs").exists()


def test_a_finished_point_is_kept_when_the_sweep_runs_again(tmp_path: Path, cpu_assets: object) -> None:
    from workbook.batch.sweep import plan_sweep

    first = plan_sweep(GSPO, ["clip_ratio_high=4e-4,6e-4"], [], replay_rollouts=False,
                       runs_root=tmp_path)
    first.directory.mkdir(parents=True)
    first.points[0].record.status, first.points[0].record.run_dir = "passed", "/somewhere/run"
    first.points[1].record.status = "running"  # its workbook died: it runs again
    first.save()

    again = plan_sweep(GSPO, ["clip_ratio_high=4e-4,6e-4"], [], replay_rollouts=False,
                       runs_root=tmp_path)

    assert [p.record.status for p in again.points] == ["passed", "pending"]
    assert json.loads((again.directory / "sweep.json").read_text())["points"][0]["run_dir"] == (
        "/somewhere/run")


def test_a_sigterm_to_the_sweep_reaches_its_running_points_as_a_stop(
        tmp_path: Path, cpu_assets: object, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """CI's SIGTERM reaches only the sweep process; its points must still be asked to stop."""
    import os
    import signal
    import threading
    from types import SimpleNamespace

    from tests.batch.fakes import FakeRun
    from workbook.batch.sweep import plan_sweep, run_sweep
    from workbook.launch.cluster import lifecycle

    urls = iter(("http://127.0.0.1:8001", "http://127.0.0.1:8002"))
    monkeypatch.setattr(lifecycle, "up", lambda **_: SimpleNamespace(dashboard_url=next(urls)))
    monkeypatch.setattr(lifecycle, "down", lambda *_a, **_k: {})
    both = threading.Barrier(2, action=lambda: os.kill(os.getpid(), signal.SIGTERM))
    fake = FakeRun(default="wait", on_start=lambda _key: both.wait(timeout=30))
    sweep = plan_sweep(GSPO, ["clip_ratio_high=4e-4,6e-4,8e-4"], [], replay_rollouts=False,
                       runs_root=tmp_path)

    done = run_sweep(sweep, runs_root=tmp_path, parallel=2, execute=fake)

    assert done.interrupted and "stopping (SIGTERM)" in capsys.readouterr().err
    assert [p.record.status for p in done.points] == ["stopped", "stopped", "pending"]
    assert [p.record.reason for p in done.points[:2]] == ["stopped by the user (SIGTERM)"] * 2
    addresses = sorted(s for _key, sets, _l in fake.calls for s in sets if "ray.address" in s)
    assert addresses == ["ray.address=http://127.0.0.1:8001", "ray.address=http://127.0.0.1:8002"]
    points = json.loads((done.directory / "sweep.json").read_text())["points"]
    assert [p["status"] for p in points] == ["stopped", "stopped", "pending"]
    assert done.exit_code == 3 and done.comparison is None
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back


def test_a_finished_sweep_run_again_in_parallel_starts_no_cluster(
        tmp_path: Path, cpu_assets: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbook.batch.sweep import plan_sweep, run_sweep
    from workbook.launch.cluster import lifecycle

    sweep = plan_sweep(GSPO, ["clip_ratio_high=4e-4,6e-4"], [], replay_rollouts=False,
                       runs_root=tmp_path)
    for point in sweep.points:
        point.record.status = "failed"  # finished, with no run directory to compare

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a Ray cluster was started for a sweep with nothing to run")

    monkeypatch.setattr(lifecycle, "up", refuse)
    done = run_sweep(sweep, runs_root=tmp_path, parallel=2)
    assert [p.record.status for p in done.points] == ["failed", "failed"]
