"""One verdict per night: a run directory is judged one way (closing, ``workbook check`` and a
proposal's re-judge alike, with the nights before it), and only its closing records it.

A what-if check (another baseline, an expression, another scenario) writes only to ``--out``;
a plain check gives the verdict closing gave, and closes the run again when what it recorded is
stale, so checks.json, run.json, the report, the index and the ledger always say one thing.
Runs are real run directories of the tiny GSPO scenario's CPU log, closed as a run is.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.history.test_closing import SCENARIO, finished_run, noisy_night
from tests.report.report_assertions import banner, report_html
from workbook.checks.runner import check_path
from workbook.cli import main
from workbook.core.layout import RunDir
from workbook.core.serialization import load_yaml
from workbook.history import proposal
from workbook.history.judgement import judge_night
from workbook.history.ledger import read_ledger
from workbook.run import life

SLOW = '{"metrics": {"timing_s/step": {"value": 0.001, "reduce": "mean"}}}'  # any step is slower


def slow_baseline(tmp_path: Path) -> Path:
    path = tmp_path / "slow.cpu.json"
    path.write_text(SLOW, encoding="utf-8")
    return path


def files(root: Path) -> dict[str, bytes]:
    """Every file under the runs root, by path: what a check must leave as it found it."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def closed_run(tmp_path: Path) -> RunDir:
    rd = finished_run(tmp_path / "runs")
    assert not life.close(rd, announce=False).errors
    return rd


def _baseline(tmp_path: Path) -> list[str]:
    return ["--baseline", str(slow_baseline(tmp_path))]


def _expression(tmp_path: Path) -> list[str]:
    return ["--expr", "1 > 2"]


def _scenario(tmp_path: Path) -> list[str]:
    path = tmp_path / "other.yaml"
    path.write_text(f"name: {SCENARIO}\nprofile: cpu\nmodel_path: /m\ntrain_files: /t.parquet\n"
                    "val_files: /v.parquet\ntotal_training_steps: 40\n", encoding="utf-8")
    return ["--scenario", str(path)]


WHAT_IFS: list[Callable[[Path], list[str]]] = [_baseline, _expression, _scenario]


@pytest.mark.parametrize("out", [None, "whatif.json", "folder"], ids=["no-out", "file", "folder"])
@pytest.mark.parametrize("what_if", WHAT_IFS, ids=lambda f: f.__name__[1:])
def test_a_what_if_check_leaves_the_run_as_it_was_and_writes_only_to_out(
        tmp_path: Path, what_if: Callable[[Path], list[str]], out: str | None,
        capsys: pytest.CaptureFixture[str]) -> None:
    rd = closed_run(tmp_path)
    recorded = rd.verdict()["status"]
    options = what_if(tmp_path)
    target = tmp_path / out if out else None
    if out == "folder":
        (tmp_path / out).mkdir()
    written = target / "checks.json" if out == "folder" else target
    before = files(tmp_path)  # the run, the ledger, the index and all beside them
    capsys.readouterr()

    code = main(["check", str(rd.path), *options, *(["--out", str(target)] if target else [])])

    assert code in (1, 3) and recorded == "passed"  # the what-if is not the run's verdict
    after = files(tmp_path)
    if written is not None:
        assert json.loads(after.pop(str(written.relative_to(tmp_path))))["verdict"][
            "exit_code"] == code
    assert after == before  # checks.json, run.json, report.html, ledger, index: as they were
    err = capsys.readouterr().err
    assert "a what-if verdict" in err and "the run's recorded verdict is unchanged" in err
    assert (f"written to {written}" if written else "nothing written") in err


@pytest.mark.parametrize("name", ["checks.json", "run.json", "report.html", "."])
def test_a_what_if_check_never_writes_over_the_runs_own_files(
        tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    rd = closed_run(tmp_path)
    before = files(rd.path)

    assert main(["check", str(rd.path), "--expr", "1 > 2", "--out", str(rd.path / name)]) == 2

    assert files(rd.path) == before and "only the run's closing writes" in capsys.readouterr().err


def test_a_check_of_a_confirm_nights_run_gives_the_verdict_its_closing_gave(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, baseline = tmp_path / "runs", slow_baseline(tmp_path)
    first, second = noisy_night(root, baseline, 10), noisy_night(root, baseline, 11)
    assert [first.verdict()["status"], second.verdict()["status"]] == ["suspect", "regressed"]
    before = files(root)
    capsys.readouterr()

    codes = [main(["check", str(first.path)]), main(["check", str(second.path)])]

    assert codes == [0, 1]  # judged alone, the second night would be suspect (exit 0)
    out = capsys.readouterr().out
    assert "verdict: SUSPECT" in out and "verdict: REGRESSED" in out
    assert files(root) == before  # nothing was stale: nothing written
    scenario = (load_yaml(second.file("params")), tmp_path)
    night = read_ledger(root, SCENARIO, "cpu")[-1]
    assert [r.status for r in proposal.rejudge([night], root, baseline, scenario)] == [
        "regressed"]  # the proposal's re-judge has the nights before it too


def test_a_check_of_a_run_still_running_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rd = finished_run(tmp_path / "runs")
    rd.update_run(status="running")
    before = files(tmp_path)

    main(["check", str(rd.path)])

    assert files(tmp_path) == before and "it is not closed" in capsys.readouterr().err


def _check(rd: RunDir, tmp_path: Path) -> None:
    main(["check", str(rd.path)])


def _check_baseline(rd: RunDir, tmp_path: Path) -> None:
    main(["check", str(rd.path), *_baseline(tmp_path)])


def _check_baseline_out(rd: RunDir, tmp_path: Path) -> None:
    main(["check", str(rd.path), *_baseline(tmp_path), "--out", str(tmp_path / "w.json")])


def _check_expression(rd: RunDir, tmp_path: Path) -> None:
    main(["check", str(rd.path), "--expr", "1 > 2"])


def _report(rd: RunDir, tmp_path: Path) -> None:
    main(["report", str(rd.path)])


def _older_what_if(rd: RunDir, tmp_path: Path) -> None:
    """checks.json replaced as ``check RUN --baseline OTHER`` of an older workbook did."""
    verdict, out = check_path(rd.path, baseline=slow_baseline(tmp_path))
    verdict.write_json(out)


def _moved_baseline(rd: RunDir, tmp_path: Path) -> None:
    """The run's baseline re-blessed slow after it was closed: its verdict is stale."""
    (tmp_path / "blessed.cpu.json").write_text(SLOW, encoding="utf-8")


STEPS = {f.__name__[1:]: f for f in (_check, _check_baseline, _check_baseline_out,
                                     _check_expression, _report, _older_what_if,
                                     _moved_baseline)}
SEQUENCES = [
    ("check_baseline", "report"),
    ("check_baseline_out", "check_expression", "check"),
    ("report", "check_baseline", "check", "report"),
    ("older_what_if", "check"),
    ("older_what_if", "report"),
    ("older_what_if", "check_baseline", "report", "check"),
    ("moved_baseline", "check"),
    ("moved_baseline", "check_expression", "report"),
]


def said(rd: RunDir) -> dict[str, str]:
    """What each record of the run says its verdict is."""
    root = rd.path.parents[1]
    index = (root / "index.html").read_text(encoding="utf-8")
    row = re.search(rf'<tr data-scenario="[^"]*" data-verdict="([^"]+)" data-run="{rd.run_id}">',
                    index)
    (entry,) = [e for e in read_ledger(root, SCENARIO, "cpu") if e.run_id == rd.run_id]
    return {"checks.json": rd.json_object("checks")["verdict"]["status"],
            "run.json": rd.json_object("run")["verdict"]["status"],
            "report": banner(report_html(rd.path))["verdict"],
            "index": row.group(1) if row else "not listed", "ledger": entry.verdict}


@pytest.mark.parametrize("sequence", SEQUENCES, ids=["-".join(s) for s in SEQUENCES])
def test_index_report_run_json_and_ledger_agree_after_any_checks_and_reports(
        tmp_path: Path, sequence: tuple[str, ...]) -> None:
    rd = finished_run(tmp_path / "runs", tmp_path / "blessed.cpu.json")
    shutil.copyfile(Path(__file__).parents[2] / "params" / "baselines" / f"{SCENARIO}.cpu.json",
                    tmp_path / "blessed.cpu.json")  # the run's baseline, as blessed
    assert not life.close(rd, announce=False).errors

    for step in sequence:
        STEPS[step](rd, tmp_path)

    now = judge_night(rd.path).status  # what closing would say now
    assert said(rd) == dict.fromkeys(("checks.json", "run.json", "report", "index", "ledger"),
                                     now)
    assert now == ("regressed" if "moved_baseline" in sequence else "passed")
