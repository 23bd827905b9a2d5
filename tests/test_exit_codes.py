"""The exit-code contract under surprise: 1 is only ever a verdict; a surprise is 3 once a run
started (its traceback kept in the run directory), 2 before anything started."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbook.cli import main

REPO = Path(__file__).resolve().parents[1]
GSPO = REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"


def test_a_surprise_before_anything_started_exits_2_with_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import workbook.cli.check

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("surprise inside check")

    monkeypatch.setattr(workbook.cli.check, "check_path", boom)
    (tmp_path / "x.log").write_text("step:1 - a:1\n")

    assert main(["check", str(tmp_path / "x.log")]) == 2

    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "internal error: RuntimeError: surprise inside check" in err[0]
    trace = Path(err[0].rsplit("traceback: ", 1)[1].rstrip(")"))
    assert "RuntimeError" in trace.read_text()


def test_a_surprise_once_a_run_started_exits_3_and_keeps_the_traceback_in_the_run(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        cpu_assets: object) -> None:
    import workbook.run.driver

    def boom(*args: object, **kwargs: object) -> None:
        raise ValueError("surprise during the run")

    monkeypatch.setattr(workbook.run.driver, "execute_run", boom)

    assert main(["run", str(GSPO), "--runs", str(tmp_path / "runs")]) == 3

    (run,) = (tmp_path / "runs" / GSPO.stem).iterdir()
    assert "ValueError: surprise during the run" in (run / "workbook-error.log").read_text()
    assert "internal error" in capsys.readouterr().err


def test_bad_input_found_after_a_run_started_is_a_failed_run(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cpu_assets: object) -> None:
    import workbook.run.driver
    from workbook.errors import BaselineError

    def late(*args: object, **kwargs: object) -> None:
        raise BaselineError("the baseline vanished mid-run")

    monkeypatch.setattr(workbook.run.driver, "execute_run", late)

    assert main(["run", str(GSPO), "--runs", str(tmp_path / "runs")]) == 3


def test_one_clean_up_step_failing_does_not_stop_the_others(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import workbook.report.render
    from workbook.core.layout import RunDir
    from workbook.run.steps import finish

    def broken(*args: object) -> None:
        raise OSError("disk full while rendering")

    monkeypatch.setattr(workbook.report.render, "render_report", broken)
    rd = RunDir.create(tmp_path / "runs", "x")
    rd.update_run(run_id=rd.run_id, status="succeeded", exit_code=0, runs_root=str(tmp_path / "runs"))
    rd.file("log").write_text("step:1 - actor/pg_loss:0.1\n")

    done = finish(rd.path, announce=False)

    assert done.errors == ["render the report: OSError: disk full while rendering"]
    assert (rd.path / "checks.json").is_file()                 # judged before
    assert (tmp_path / "runs" / "index.html").is_file()        # indexed after
    assert "OSError" in (rd.path / "workbook-error.log").read_text()
    assert rd.read_json("run")["finished_at"]
