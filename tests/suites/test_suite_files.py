"""Suite files: parsed as documented, every entry exists and validates, every scenario is in one."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbook.batch.suite import read_suite, suite_dir
from workbook.cli import main
from workbook.errors import InputError

REPO = Path(__file__).resolve().parents[2]
SUITES = sorted((REPO / "params" / "suites").glob("*.txt"))
SCENARIOS = sorted((REPO / "params").glob("*.yaml"))


def test_the_project_ships_the_smoke_and_nightly_suites() -> None:
    assert {"smoke-cpu", "nightly-npu-a2"} <= {p.stem for p in SUITES}
    smoke = [e.params.stem for e in read_suite(REPO / "params" / "suites" / "smoke-cpu.txt")]
    assert smoke == ["gspo-tiny-1n1cpu-fsdp2-vllm", "ppo-tiny-2n1cpu-fsdp2-vllm-ray",
                     "gspo-tiny-live-1n1cpu-fsdp2-vllm"]


@pytest.mark.parametrize("suite", SUITES, ids=[p.stem for p in SUITES])
def test_every_entry_of_every_suite_exists_and_validates(suite: Path, cpu_assets: object,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "validate", str(suite)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_runnable_scenario_is_in_some_suite(scenario: Path) -> None:
    listed = {e.params for suite in SUITES for e in read_suite(suite)}
    assert scenario.resolve() in listed


def test_lines_comments_and_overrides_parse(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("x: 1\n")
    suite = tmp_path / "s.txt"
    suite.write_text("# header\n\na.yaml   # trailing comment\n"
                     "a.yaml -s clip_ratio_high=6e-4 --set 'overrides+=trainer.x=1 2'\n")

    first, second = read_suite(suite)

    assert (first.index, first.sets, first.key) == (1, [], "01-a")
    assert second.sets == ["clip_ratio_high=6e-4", "overrides+=trainer.x=1 2"]
    assert second.key.startswith("02-a-") and second.key != "02-a"


@pytest.mark.parametrize("text, message", [
    ("", "lists no scenario"),
    ("missing.yaml\n", "no such scenario file: missing.yaml"),
    ("a.yaml --bogus\n", "s.txt:1: expected '-s KEY=VALUE'"),
    ("a.yaml 'unclosed\n", "s.txt:1"),
])
def test_a_bad_suite_line_names_its_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "a.yaml").write_text("x: 1\n")
    (tmp_path / "s.txt").write_text(text)
    with pytest.raises(InputError, match=message):
        read_suite(tmp_path / "s.txt")


def test_an_invalid_entry_stops_the_suite_before_any_launch(
        tmp_path: Path, cpu_assets: object, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "bad.txt"
    gspo = REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
    suite.write_text(f"{gspo}\n{gspo} -s clip_ratio_high=2.0\n")

    assert main(["suite", "run", str(suite), "--runs", str(tmp_path / "runs")]) == 2

    err = capsys.readouterr().err
    assert "entry 2" in err and "clip_ratio_high" in err and "inside (0, 1)" in err
    assert not (tmp_path / "runs").exists()  # nothing was created, nothing launched


def test_the_suite_directory_is_per_suite_and_night(tmp_path: Path) -> None:
    from datetime import datetime, timezone

    when = datetime(2026, 11, 30, 23, 59, tzinfo=timezone.utc)
    assert suite_dir("smoke-cpu", tmp_path, when) == tmp_path / "suites" / "smoke-cpu" / "2026-11-30"
