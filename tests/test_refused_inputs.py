"""Inputs a hostile but honest user gives (issue 25's probe): each is refused with its exit code
and a message that says why, never an internal error, never a secret on the terminal."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.history.nights import night, scaled_night, scenario_in
from workbook.cli import main

Case = Callable[[Path], list[str]]


def _align_a_run_with_itself(tmp: Path) -> list[str]:
    run = night(tmp / "runs", 1)
    (tmp / "same").symlink_to(run, target_is_directory=True)
    return ["align", str(run), str(tmp / "same")]


def _compare(content: str) -> Case:
    def case(tmp: Path) -> list[str]:
        good, bad = night(tmp / "runs", 1), tmp / "runs" / "x" / "broken"
        bad.mkdir(parents=True)
        (bad / "run.json").write_text(content)
        return ["compare", str(good), str(bad), "--out", str(tmp / "page")]

    return case


def _diagnose(plant: Callable[[Path], None]) -> Case:
    def case(tmp: Path) -> list[str]:
        run = tmp / "run"
        run.mkdir()
        (run / "run.log").write_text("step:1 - actor/pg_loss:0.1\n")
        plant(run)
        return ["diagnose", str(run)]

    return case


def _linked_run_json(run: Path) -> None:
    (run.parent / "elsewhere.json").write_text(json.dumps({"status": "succeeded"}))
    (run / "run.json").symlink_to(run.parent / "elsewhere.json")


def _publish_nothing(tmp: Path) -> list[str]:
    run = tmp / "runs" / "s" / "20261201T000000Z-aaaaaa"
    run.mkdir(parents=True)
    (tmp / "passwd").write_text("root:x:0:0\n")
    (run / "run.log").symlink_to(tmp / "passwd")
    return ["publish", str(tmp / "runs"), str(tmp / "site")]


def _metrics_without_steps(tmp: Path) -> list[str]:
    (tmp / "x.log").write_text("Traceback (most recent call last):\nImportError: no verl\n")
    return ["metrics", str(tmp / "x.log")]


def _bless_hardware(label: str) -> Case:
    def case(tmp: Path) -> list[str]:
        scenario = scenario_in(tmp)
        runs = [scaled_night(tmp / "runs", scenario, d, factor=f)
                for d, f in ((1, 1.0), (2, 1.01), (3, 0.99))]
        return ["bless", *map(str, runs), "--hardware", label]

    return case


def _import_hardware(tmp: Path) -> list[str]:
    (tmp / "b.txt").write_text("actor/pg_loss: 0.1\n")
    return ["baseline", "import", str(tmp / "b.txt"), "--out", str(tmp / "b.json"),
            "--hardware", "../../etc"]


def _secret_in_an_error(tmp: Path) -> list[str]:
    return ["metrics", str(tmp / "mysql -pHunter2glued --wandb-key Hunter2flag x.log")]


CASES = [
    ("align-with-itself", _align_a_run_with_itself, 2, "are one run directory"),
    ("compare-run-json-a-list", _compare("[1, 2]"), 2, "holds a JSON list, not an object"),
    ("compare-run-json-invalid", _compare("{bad"), 2, "not valid JSON"),
    ("diagnose-run-json-a-list",
     _diagnose(lambda run: (run / "run.json").write_text("[]")), 2, "holds a JSON list"),
    ("diagnose-run-json-invalid",
     _diagnose(lambda run: (run / "run.json").write_text("{")), 2, "not valid JSON"),
    ("diagnose-run-json-a-link", _diagnose(_linked_run_json), 2, "run.json is a link, not read"),
    ("diagnose-run-json-a-fifo", _diagnose(lambda run: os.mkfifo(run / "run.json")), 2,
     "not a regular file"),
    ("publish-copying-nothing", _publish_nothing, 2, "no file of any run copied"),
    ("metrics-without-steps", _metrics_without_steps, 2, "no training step in it"),
    ("bless-hardware-leaving-params", _bless_hardware("/../.."), 2, "must be a plain name"),
    ("bless-hardware-with-a-slash", _bless_hardware("a2/x"), 2, "must be a plain name"),
    ("import-hardware-leaving-params", _import_hardware, 2, "must be a plain name"),
    ("secret-in-an-error-line", _secret_in_an_error, 2, "-p[REDACTED] --wandb-key [REDACTED]"),
]


@pytest.mark.parametrize("build, code, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_refused_input_exits_with_its_code_and_says_why(
        build: Case, code: int, words: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    argv = build(tmp_path)
    capsys.readouterr()

    assert main(argv) == code
    err = capsys.readouterr().err
    assert words in err and "internal error" not in err
    assert "Hunter2" not in err
    assert not (tmp_path / "page").exists()  # compare rendered nothing


def test_a_printed_line_is_redacted_whole_or_when_flushed_half_written() -> None:
    import io

    from workbook.cli.terminal import RedactedStream

    raw = io.StringIO()
    stream = RedactedStream(raw)
    stream.write("verdict: failed - sshpass -p Hunter2")
    assert raw.getvalue() == ""  # a partial line waits for its end
    stream.write("apart ssh host\nrunning mysql -pHunter2glued")
    stream.flush()  # a live log's chunk: written as it is, redacted
    assert raw.getvalue() == ("verdict: failed - sshpass -p [REDACTED] ssh host\n"
                              "running mysql -p[REDACTED]")


def test_plan_prints_the_exact_command_it_will_run(capsys: pytest.CaptureFixture[str]) -> None:
    gspo = Path(__file__).resolve().parents[1] / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
    assert main(["plan", str(gspo), "-s", "env.DB_PASSWORD=PlanPw-4242"]) == 0
    assert "PlanPw-4242" in capsys.readouterr().out  # the product asked for, piped on as is
