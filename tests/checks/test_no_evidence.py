"""No evidence, no pass: ``check``, ``diagnose`` and ``report`` agree on input with no training.

Each row: an input kind, a command, the exit code, a fragment of what the command says. A run
or log with no completed training step is a failed run (exit 3, "no metrics") whatever else is
missing; what is not a log, JSONL file or run directory is bad input (exit 2, said so).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.checks.handmade import console_log, jsonl, steady, write_run
from tests.edges import never_blocks
from workbook.cli import main

STARTUP = ("(TaskRunner pid=7) Initializing Ray ...\n(TaskRunner pid=7) Total training steps: 15\n"
           "(TaskRunner pid=7) Loading checkpoint shards: 100%|##########| 2/2\n")
TRAINED = steady({"actor/pg_loss": 0.01, "actor/pg_clipfrac": 0.1})  # steps 1-15


@pytest.fixture(autouse=True)
def no_blocking_read() -> Iterator[None]:
    with never_blocks(120):
        yield


def file_with(text: str | bytes, name: str = "input.log") -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        return path
    return make


def run_dir(series: dict[str, dict[int, float]], **kwargs: object) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        return write_run(tmp, series, settings={"total_training_steps": 15}, **kwargs)
    return make


def run_json_only(tmp: Path) -> Path:
    path = tmp / "runs" / "x" / "20261129T000000Z-000001"
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"status": "succeeded", "exit_code": 0}))
    return path


def plain_folder(tmp: Path) -> Path:
    (tmp / "folder").mkdir()
    (tmp / "folder" / "notes.txt").write_text("hello\n")
    return tmp / "folder"


def fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "pipe.log")
    return tmp / "pipe.log"


NO_STEP = "No metrics: no training step completed"
NOT_A_RUN = "not a log, JSONL file or run directory"
INPUTS: dict[str, Callable[[Path], Path]] = {
    "empty-log": file_with(""),
    "startup-only-log": file_with(STARTUP),
    "validation-only-log": file_with(STARTUP + "(TaskRunner pid=7) step:0 - val-core/acc:0.1\n"),
    "jsonl-without-step": file_with('{"step": 0, "data": {"val-core/acc": 0.1}}\n'
                                    '{"step": 1, "data": {}}\n', "metrics.jsonl"),
    "succeeded-run-dir-without-step": run_dir({}, log=STARTUP),
    "run-dir-with-only-run-json": run_json_only,
    "random-bytes": file_with(random.Random(5).randbytes(2 << 20), "random.bin"),
    "plain-folder": plain_folder,
    "fifo": fifo,
    "device": lambda _: Path("/dev/zero"),
    "missing": lambda tmp: tmp / "absent.log",
    "trained-log": file_with(console_log(TRAINED)),
    "trained-run-dir": run_dir(TRAINED),
    "run-dir-short-of-its-steps": run_dir(steady({"actor/pg_loss": 0.01}, range(1, 3))),
}
CASES = [
    # input, command, exit code, fragment of stdout+stderr
    ("empty-log", "check", 3, NO_STEP),
    ("empty-log", "diagnose", 0, '"category": "no_metrics"'),
    ("empty-log", "report", 3, "report.html"),
    ("startup-only-log", "check", 3, NO_STEP),
    ("startup-only-log", "diagnose", 0, '"status": "failed"'),
    ("validation-only-log", "check", 3, "only validation metrics, at step 0"),
    ("validation-only-log", "diagnose", 0, '"category": "no_metrics"'),
    ("jsonl-without-step", "check", 3, NO_STEP),
    ("jsonl-without-step", "diagnose", 0, '"category": "no_metrics"'),
    ("succeeded-run-dir-without-step", "check", 3, f"{NO_STEP} (exit code 0)"),
    ("succeeded-run-dir-without-step", "diagnose", 0, f"{NO_STEP} (exit code 0)"),
    ("succeeded-run-dir-without-step", "report", 3, "report.html"),
    ("run-dir-with-only-run-json", "check", 3, NO_STEP),
    ("run-dir-with-only-run-json", "diagnose", 0, '"category": "no_metrics"'),
    ("random-bytes", "check", 2, "binary data (NUL bytes"),
    ("random-bytes", "diagnose", 2, "binary data (NUL bytes"),
    ("random-bytes", "report", 2, "binary data (NUL bytes"),
    ("plain-folder", "check", 2, "not a run directory"),
    ("plain-folder", "diagnose", 2, "not a run directory"),
    ("plain-folder", "report", 2, "not a run directory"),
    ("fifo", "check", 2, f"a FIFO, {NOT_A_RUN}"),
    ("fifo", "diagnose", 2, f"a FIFO, {NOT_A_RUN}"),
    ("device", "check", 2, f"a device, {NOT_A_RUN}"),
    ("device", "diagnose", 2, f"a device, {NOT_A_RUN}"),
    ("missing", "check", 2, "no such file or directory"),
    ("missing", "diagnose", 2, "no such file or directory"),
    ("missing", "report", 2, "no such file or directory"),
    ("trained-log", "check", 0, "all 4 checks passed"),
    ("trained-run-dir", "check", 0, "all 4 checks passed"),
    ("trained-run-dir", "diagnose", 0, '"status": "succeeded"'),
    ("run-dir-short-of-its-steps", "check", 3, "before step 15"),
    ("run-dir-short-of-its-steps", "diagnose", 0, "reached step 2 of 15"),
]


@pytest.mark.parametrize("kind, command, code, fragment", CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_each_input_kind_gets_its_exit_code_and_says_why(
        kind: str, command: str, code: int, fragment: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = INPUTS[kind](tmp_path)
    extra = {"check": ["--out", str(tmp_path / "checks.json")],
             "report": ["--out", str(tmp_path / "out")], "diagnose": []}[command]

    assert main([command, str(path), *extra]) == code

    said = capsys.readouterr()
    assert fragment in said.out + said.err
    if command == "check" and code == 3:
        verdict = json.loads((tmp_path / "checks.json").read_text())
        assert verdict["verdict"]["status"] == "failed"
        assert verdict["diagnosis"]["status"] != "succeeded"
        if NO_STEP in fragment:
            assert verdict["diagnosis"]["category"] == "no_metrics"


@pytest.mark.parametrize("kind", ["empty-log", "succeeded-run-dir-without-step"])
def test_the_report_of_a_run_without_training_says_failed_no_metrics(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = INPUTS[kind](tmp_path)

    assert main(["report", str(path), "--out", str(tmp_path / "runs")]) == 3

    report = Path(capsys.readouterr().out.strip().splitlines()[-1])
    run = report.parent if path.is_file() else path
    verdict = json.loads((run / "checks.json").read_text())["verdict"]
    assert verdict["status"] == "failed" and NO_STEP in verdict["reason"]
    assert NO_STEP in report.read_text()


def test_report_exits_3_for_an_imported_run_whose_verdict_is_failed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = file_with(STARTUP + "torch.OutOfMemoryError: CUDA out of memory.\n")(tmp_path)
    assert main(["report", str(log), "--out", str(tmp_path / "runs")]) == 3
    imported = Path(capsys.readouterr().out.strip().splitlines()[-1]).parent

    assert main(["report", str(imported)]) == 3

    assert json.loads((imported / "checks.json").read_text())["verdict"]["status"] == "failed"


@pytest.mark.parametrize("kind", ["empty-log", "startup-only-log", "succeeded-run-dir-without-step",
                                  "run-dir-with-only-run-json", "trained-run-dir",
                                  "run-dir-short-of-its-steps"])
def test_diagnose_and_check_agree_on_the_run_status(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = INPUTS[kind](tmp_path)
    code = main(["check", str(path), "--out", str(tmp_path / "checks.json")])
    checked = json.loads((tmp_path / "checks.json").read_text())
    capsys.readouterr()

    assert main(["diagnose", str(path)]) == 0

    diagnosed = json.loads(capsys.readouterr().out)
    assert diagnosed["status"] == checked["diagnosis"]["status"]
    assert (diagnosed["status"] == "succeeded") == (code == 0)


def test_check_log_writes_next_to_the_log_never_into_the_working_directorys_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unrelated = write_run(tmp_path, TRAINED, run_id="20261129T000000Z-cwd001")
    (unrelated / "checks.json").write_text('{"verdict": {"status": "passed"}}')
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "nightly.log").write_text("")
    monkeypatch.chdir(unrelated)

    assert main(["check", str(logs / "nightly.log")]) == 3

    assert json.loads((unrelated / "checks.json").read_text()) == {"verdict": {"status": "passed"}}
    assert json.loads((logs / "checks.json").read_text())["verdict"]["status"] == "failed"


def test_check_of_a_runs_own_log_keeps_the_runs_checks_json(tmp_path: Path) -> None:
    run = write_run(tmp_path, TRAINED, log=console_log(TRAINED))
    assert main(["check", str(run)]) == 0
    judged = (run / "checks.json").read_text()

    assert main(["check", str(run / "run.log"), "--expr", "1 > 2"]) == 1

    assert (run / "checks.json").read_text() == judged
    regressed = json.loads((run / "run.log.checks.json").read_text())
    assert regressed["verdict"]["status"] == "regressed"


@pytest.mark.parametrize("out, written", [("result.json", "result.json"),
                                          ("folder", "folder/checks.json")],
                         ids=["a-file", "a-folder"])
def test_check_out_names_where_checks_json_goes(tmp_path: Path, out: str, written: str) -> None:
    (tmp_path / "folder").mkdir()
    log = tmp_path / "metrics.jsonl"
    log.write_text(jsonl(TRAINED))

    assert main(["check", str(log), "--out", str(tmp_path / out)]) == 0

    assert json.loads((tmp_path / written).read_text())["verdict"]["status"] == "passed"
    assert not (tmp_path / "checks.json").exists()
