"""A suite's JUnit file comes from each run's recorded verdict: a run is judged once, never again
to write the file."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from workbook.batch.junit import recorded_verdict, write_batch_junit
from workbook.batch.records import Record
from workbook.checks.rows import CheckRow
from workbook.checks.verdict import RunVerdict
from workbook.cli import main
from workbook.core.layout import RunDir
from workbook.run.driver import RunResult

ROWS = [
    CheckRow("finite loss", "finite", "pass", value=0.5, steps=[1, 2]),
    CheckRow("clip fraction vs baseline", "baseline", "fail", value=math.nan, expected="0.2..0.3",
             message="nan outside the band", metric="actor/pg_clipfrac", baseline=0.25,
             lower=0.2, upper=0.3, window=(2, 4), baseline_series={2: 0.25, 3: math.inf}),
    CheckRow("device memory", "bounds", "not_measured", message="not measured on CPU"),
    CheckRow("reward", "expression", "error", message="no metric reward", source="reward > 0"),
]
REGRESSED = RunVerdict("regressed", "1 failed and 1 could not be computed of 3 checks", rows=ROWS,
                    last_step=4, required_step=4, diagnosis={"summary": "ok", "evidence": []},
                    run_status="succeeded")


def test_the_recorded_verdict_reads_back_as_it_was_written(tmp_path: Path) -> None:
    REGRESSED.write_json(tmp_path / "checks.json")
    assert recorded_verdict(tmp_path).to_dict() == REGRESSED.to_dict()


CASES = [
    # what the run directory holds -> status, reason
    ({"run.json": {"verdict": {"status": "stopped", "reason": "stopped by the user"}}},
     ("stopped", "stopped by the user")),
    ({"run.json": {"status": "failed"}}, ("failed", "the record's reason")),
    ({"checks.json": "{not json"}, ("failed", "the record's reason")),
]


@pytest.mark.parametrize("files, expected", CASES, ids=["run-json", "never-judged", "unreadable"])
def test_a_run_without_its_checks_is_taken_at_what_it_recorded(
        tmp_path: Path, files: dict, expected: tuple[str, str]) -> None:
    for name, content in files.items():
        (tmp_path / name).write_text(content if isinstance(content, str) else json.dumps(content))
    verdict = recorded_verdict(tmp_path, Record("k", reason="the record's reason"))
    assert (verdict.status, verdict.reason) == expected and verdict.rows == []


def test_an_item_that_never_ran_is_a_skipped_suite(tmp_path: Path) -> None:
    junit = write_batch_junit([Record("01-a", status="pending")], tmp_path / "j.xml")
    (suite,) = ET.parse(junit).getroot().iter("testsuite")
    assert suite.get("name") == "01-a" and suite.get("skipped") == "1"


def test_suite_run_writes_junit_from_each_runs_checks_without_judging_again(
        tmp_path: Path, scenario: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from workbook.checks import runner
    from workbook.run import driver

    def fake_run(params: Path, sets: list[str], rd: RunDir, **_: object) -> RunResult:
        REGRESSED.write_json(rd.file("checks"))
        rd.update_run(status="succeeded", verdict=REGRESSED.summary())
        return RunResult(rd.path, "regressed", REGRESSED.reason, 1, 2.0, None, [])

    def judging(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a run was judged again to write the JUnit file")

    monkeypatch.setattr(driver, "execute_run", fake_run)
    monkeypatch.setattr(runner, "check_path", judging)
    monkeypatch.setattr(runner, "judge_run_dir", judging)
    suite, junit = tmp_path / "night.txt", tmp_path / "junit.xml"
    suite.write_text(f"{scenario}\n{scenario} -s seed=7\n")

    code = main(["suite", "run", str(suite), "--runs", str(tmp_path / "runs"), "--junit",
                 str(junit)])

    out = capsys.readouterr().out
    assert code == 1, out
    suites = list(ET.parse(junit).getroot().iter("testsuite"))
    assert [str(s.get("name"))[:3] for s in suites] == ["01-", "02-"]
    for found in suites:
        assert (found.get("tests"), found.get("failures"), found.get("errors"),
                found.get("skipped")) == ("5", "2", "1", "1")
        props = {p.get("name"): p.get("value") for p in found.iter("property")}
        assert props["verdict"] == "regressed" and props["scenario"] == "npu"
    assert f"junit: {junit}" in out
    assert out.strip().splitlines()[-1].startswith(str(tmp_path / "runs" / "suites" / "night"))
