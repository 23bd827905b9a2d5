"""``workbook align``: exit codes, what it prints, and ``--replay-from`` up to the run it starts
(the run itself is a stand-in here: verl does not run in unit tests)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.align.runs import SCENARIO, changed, records, write_run
from workbook.cli import main, parser
from workbook.cli.align import run_command
from workbook.core.layout import RunDir
from workbook.errors import InputError
from workbook.run.driver import RunResult

REPO = Path(__file__).resolve().parents[2]
GSPO = REPO / "params" / f"{SCENARIO}.yaml"
PINNED = REPO / "params" / "baselines" / "rollouts" / SCENARIO  # the scenario's own dump
LOSS = "actor/pg_loss"


def two_runs(root: Path, b_rows: list | None = None, b_scenario: str = SCENARIO) -> list[str]:
    a = write_run(root, "A", records())
    b = write_run(root, "B", records() if b_rows is None else b_rows, scenario=b_scenario)
    return [str(a), str(b)]


@pytest.mark.parametrize(("case", "code", "says"), [
    ("identical", 0, ""),
    ("loss doubled", 1, ""),
    ("not run directories", 2, "is not a run directory"),
    ("other scenario", 2, "runs of different scenarios: run A is 'gspo-tiny-1n1cpu-fsdp2-vllm', "
                          "run B is 'ppo-tiny-2n1cpu-fsdp2-vllm-ray'"),
    ("no metrics", 2, "logged no training step"),
    ("malformed threshold", 2, "'abc' is not a number"),
    ("one run", 2, "align takes two run directories"),
    ("a run option without a run", 2, "-s, --verl and --runs describe the run"),
])
def test_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, code: int,
                    says: str) -> None:
    root = tmp_path / "runs"
    argv = {
        "identical": lambda: two_runs(root),
        "loss doubled": lambda: two_runs(root, changed(records(), LOSS, lambda s, v: 2 * v)),
        "not run directories": lambda: [str(tmp_path), str(tmp_path)],
        "other scenario": lambda: two_runs(root, b_scenario="ppo-tiny-2n1cpu-fsdp2-vllm-ray"),
        "no metrics": lambda: two_runs(root, []),
        "malformed threshold": lambda: [*two_runs(root), "--threshold", "actor/pg_loss=abc"],
        "one run": lambda: two_runs(root)[:1],
        "a run option without a run": lambda: [*two_runs(root), "-s", "lr=0.1"],
    }[case]()

    assert main(["align", *argv, "--out", str(tmp_path / "out")]) == code

    assert says in capsys.readouterr().err
    assert (tmp_path / "out" / "alignment.html").is_file() == (code < 2)


def test_it_prints_the_table_then_the_page_last_and_writes_junit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = two_runs(tmp_path / "runs", changed(records(), LOSS, lambda s, v: 2 * v))

    code = main(["align", *runs, "--threshold", "actor/grad_norm=5", "--metric",
                 "critic/score/mean", "--out", str(tmp_path / "out"), "--junit",
                 str(tmp_path / "junit.xml")])

    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 1 and lines[-1] == str((tmp_path / "out" / "alignment.html").resolve())
    table = "\n".join(lines)
    assert "actor/pg_loss" in table and "BEYOND" in table and "critic/score/mean" in table
    assert "verdict: NOT ALIGNED - actor/pg_loss 100 % > 2 %, beyond it from step 1" in table
    assert 'failures="1"' in (tmp_path / "junit.xml").read_text()


class StandIn:
    """Stands in for execute_run: records what it was asked and leaves a run that trained like
    run A (its metrics copied), so the alignment after it has something to read."""

    def __init__(self, reference: Path, exit_code: int = 0) -> None:
        self.reference, self.exit_code = reference, exit_code
        self.calls: list[dict[str, Any]] = []

    def __call__(self, params: Path, sets: list[str], rd: RunDir, **kwargs: Any) -> RunResult:
        self.calls.append({"params": params, "sets": list(sets), **kwargs})
        shutil.copyfile(self.reference / "metrics.jsonl", rd.path / "metrics.jsonl")
        rd.write_json("run", {"run_id": rd.run_id, "scenario": SCENARIO, "expected_steps": 4,
                              "runs_root": str(kwargs["runs_root"]), "status": "succeeded"})
        (rd.path / "params.resolved.yaml").write_text(f"name: {SCENARIO}\n")
        verdict = "passed" if self.exit_code == 0 else "failed"
        return RunResult(rd.path, verdict, "stand-in", self.exit_code, 0.0, None, [])


def reference_with_dump(root: Path, scenario: str = SCENARIO) -> Path:
    a = write_run(root, "A", records(), scenario=scenario)
    shutil.copytree(PINNED, a / "rollouts")  # what a run made with rollouts.record keeps
    return a


def replay_args(a: Path, runs: Path, *more: str) -> Any:
    return parser().parse_args(["align", "--replay-from", str(a), str(GSPO), "--runs", str(runs),
                                "--quiet", "-s", "total_training_steps=4", *more])


def test_replay_from_runs_the_scenario_on_run_a_rollouts_then_aligns(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cpu_assets: object) -> None:
    a = reference_with_dump(tmp_path / "reference")
    stand_in = StandIn(a)

    code = run_command(replay_args(a, tmp_path / "runs"), execute=stand_in)

    (call,) = stand_in.calls
    assert call["params"] == GSPO
    assert call["sets"] == ["total_training_steps=4", f"rollouts.replay={a.resolve()}/rollouts"]
    (b,) = (tmp_path / "runs" / SCENARIO).iterdir()
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0
    assert out[0] == f"run directory: {b}" and out[1] == f"run B: {b} (passed: stand-in)"
    record = json.loads((Path(out[-1]).parent / "alignment.json").read_text())
    assert (record["run_a"]["path"], record["run_b"]["path"]) == (str(a.resolve()), str(b))


def test_replay_from_a_run_that_replayed_a_pinned_dump_replays_that_dump(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cpu_assets: object) -> None:
    # the same rollouts as A's own copy, named as A's baseline names them: B stays comparable
    a = reference_with_dump(tmp_path / "reference")
    params = a / "params.resolved.yaml"
    params.write_text(params.read_text() + f"rollouts:\n  replay: {PINNED}\n")
    stand_in = StandIn(a)

    assert run_command(replay_args(a, tmp_path / "runs"), execute=stand_in) == 0

    (call,) = stand_in.calls
    assert call["sets"] == ["total_training_steps=4", f"rollouts.replay={PINNED}"]


def test_replay_from_a_run_without_a_rollouts_dump_is_refused_before_anything_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "reference", "A", records())

    code = main(["align", "--replay-from", str(a), str(GSPO), "--runs", str(tmp_path / "runs")])

    assert code == 2 and "run A has no rollouts dump" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_replay_from_a_run_of_another_scenario_is_refused_before_anything_starts(
        tmp_path: Path, cpu_assets: object) -> None:
    a = reference_with_dump(tmp_path / "reference", scenario="gspo-elsewhere")
    stand_in = StandIn(a)

    with pytest.raises(InputError, match="runs of different scenarios: run A is 'gspo-elsewhere'"):
        run_command(replay_args(a, tmp_path / "runs"), execute=stand_in)

    assert stand_in.calls == [] and not (tmp_path / "runs").exists()


def test_replay_from_whose_run_failed_exits_3_after_aligning_what_it_left(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cpu_assets: object) -> None:
    a = reference_with_dump(tmp_path / "reference")

    code = run_command(replay_args(a, tmp_path / "runs"), execute=StandIn(a, exit_code=3))

    out = capsys.readouterr().out.strip().splitlines()
    assert code == 3 and out[-1].endswith("alignment.html") and "(failed: stand-in)" in out[1]


def test_a_page_that_cannot_be_written_exits_3_with_the_step_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import workbook.report.render

    def broken(folder: Path) -> Path:
        raise OSError("disk full while rendering")

    monkeypatch.setattr(workbook.report.render, "render_alignment", broken)

    code = main(["align", *two_runs(tmp_path / "runs"), "--out", str(tmp_path / "out")])

    assert code == 3  # never 0 or 1: the verdict was reached, its page was not
    assert "render the alignment: OSError: disk full while rendering" in capsys.readouterr().err
    assert "OSError" in (tmp_path / "out" / "workbook-error.log").read_text()
    assert (tmp_path / "out" / "alignment.json").is_file()
