"""A suite may run an entry again whose run failed on the infrastructure, never any other.

``retry: {max: 1}`` in a suite file: validated with every problem listed
(exit 2), then the engine runs an entry whose diagnosis is ``infrastructure`` once more, keeps
both attempts' run directories and says in the record why. The per-entry run is a stand-in that
writes the diagnosis a real closing would (from the real diagnoser, on real log lines).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from workbook.batch.engine import Retry
from workbook.batch.suite import _validated, run_suite
from workbook.cli import main
from workbook.core.layout import RunDir
from workbook.metrics import diagnose
from workbook.run.driver import RunResult

RAY_DOWN = ("Exception: The current node timed out during startup. This could happen because "
            "some of the raylet failed to startup or the GCS has become overloaded.")
BAD_KEY = "Could not override 'actor_rollout_ref.actor.optim.lrr'."
# The real log of a run whose rendezvous port another process took (tests/data/derived_logs)
PORT_TAKEN = (Path(__file__).resolve().parents[1] / "data" / "derived_logs"
              / "gspo-port-in-use-before-step-1.log").read_text().splitlines()
LOGS = {"infrastructure": [RAY_DOWN], "config_error": [BAD_KEY], "none": [],
        "port_in_use": PORT_TAKEN}


class Attempts:
    """``execute_run``'s stand-in: the n-th call for an entry ends as the n-th of its plan (the
    last one repeats), a ``(verdict, log)`` (a key of LOGS: the diagnosis category its lines
    give, or ``port_in_use``), the diagnosis of those lines in its run.json."""

    def __init__(self, plans: dict[str, list[tuple[str, str]]]) -> None:
        self.plans = plans
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, params: Path, sets: list[str], rd: RunDir, *, runs_root: Path,
                 launcher: str, echo: bool, **more: Any) -> RunResult:
        key = rd.path.parent.name
        with self.lock:
            attempt = self.calls.count(key)
            self.calls.append(key)
        plan = self.plans.get(key, [("passed", "none")])
        verdict, log = plan[min(attempt, len(plan) - 1)]
        found = diagnose(LOGS[log], exit_code=0 if log == "none" else 1)
        rd.update_run(status="succeeded" if log == "none" else "failed",
                      diagnosis=found.to_dict())
        return RunResult(rd.path, verdict, f"it {verdict}", 0, 1.25, None, [])


def night(tmp_path: Path, scenario: Path, option: str | None) -> Path:
    suite = tmp_path / "night.txt"
    suite.write_text((f"{option}\n" if option else "") + f"{scenario}\n{scenario} -s seed=7\n")
    return suite


FIRST, SECOND = "01-npu", "02-npu-"
RETRIES = [
    # option line, plan of the first entry, its calls, its final status, retried
    ("retry: {max: 1}", [("failed", "infrastructure"), ("passed", "none")],
     2, "passed", True),
    ("retry: {max: 1}", [("failed", "infrastructure")], 2, "failed", True),
    ("retry: {max: 2}", [("failed", "infrastructure")], 3, "failed", True),
    ("retry: {max: 1}", [("failed", "config_error")], 1, "failed", False),
    ("retry: {max: 1}", [("regressed", "none")], 1, "regressed", False),
    ("retry: {max: 0}", [("failed", "infrastructure")], 1, "failed", False),
    (None, [("failed", "infrastructure")], 1, "failed", False),
]


@pytest.mark.parametrize("option, plan, calls, status, retried", RETRIES,
                         ids=[f"{o}-{p[0][1]}-{c}" for o, p, c, _, _ in RETRIES])
def test_only_an_infrastructure_failure_is_run_again_and_at_most_max_times(
        tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str], option: str | None,
        plan: list[tuple[str, str]], calls: int, status: str, retried: bool) -> None:
    fake = Attempts({FIRST: plan})
    result = run_suite(night(tmp_path, scenario, option), runs_root=tmp_path / "runs",
                       execute=fake)

    first = fake.calls[0]
    assert first == FIRST and fake.calls[:calls] == [first] * calls  # a retry runs next
    assert [k[:7] for k in fake.calls[calls:]] == [SECOND]  # the other entry ran once, after
    data = json.loads((result.directory / "suite.json").read_text())
    entry = next(e for e in data["entries"] if e["key"] == first)
    assert entry["status"] == status and len(entry["runs"]) == calls
    assert all(Path(run).is_dir() for run in entry["runs"])  # every attempt is kept
    if retried:
        assert [r["run_dir"] for r in entry["retries"]] == entry["runs"][:-1]
        assert all("Ray node start-up failure" in r["why"] for r in entry["retries"])
        assert "run again" in entry["reason"] and "Ray node start-up failure" in entry["reason"]
        printed = capsys.readouterr()
        assert "running it again (retry 1 of" in printed.err
        assert f"suite: {first} ran again {calls - 1} time(s)" in printed.out
    else:
        assert "retries" not in entry and entry["reason"] == f"it {status}"
    assert result.exit_code == {"passed": 0, "regressed": 1, "failed": 3}[status]


def test_a_run_whose_port_another_process_took_is_run_again(tmp_path: Path,
                                                            scenario: Path) -> None:
    fake = Attempts({FIRST: [("failed", "port_in_use"), ("passed", "none")]})
    result = run_suite(night(tmp_path, scenario, "retry: {max: 1}"),
                       runs_root=tmp_path / "runs", execute=fake)

    assert fake.calls.count(fake.calls[0]) == 2
    entry = next(e for e in json.loads((result.directory / "suite.json").read_text())["entries"]
                 if e["key"] == fake.calls[0])
    assert entry["status"] == "passed"
    assert "network port already in use on the node" in entry["retries"][0]["why"]


def test_the_suite_file_records_its_retry_policy(tmp_path: Path, scenario: Path) -> None:
    result = run_suite(night(tmp_path, scenario, "retry: {max: 1}"),
                       runs_root=tmp_path / "runs", execute=Attempts({}))
    header = json.loads((result.directory / "suite.json").read_text())
    assert header["retry"] == {"max": 1}


def test_a_resumed_record_keeps_its_retries(tmp_path: Path, scenario: Path) -> None:
    suite = night(tmp_path, scenario, "retry: {max: 1}")
    fake = Attempts({FIRST: [("failed", "infrastructure"), ("passed", "none")]})
    first = run_suite(suite, runs_root=tmp_path / "runs", execute=fake)
    again = run_suite(suite, runs_root=tmp_path / "runs", directory=first.directory,
                      execute=fake)  # everything finished: nothing runs, nothing is lost
    entry = next(r for r in again.entries if r.key.startswith(FIRST))
    assert len(fake.calls) == 3 and len(entry.retries) == 1 and entry.status == "passed"


VALID = [
    ("retry: {max: 1}", Retry(max=1)),
    ("retry: {max: 3}  # a comment", Retry(max=3)),
    ("retry: {}", Retry(max=1)),
    ("retry: {'max': 0}", Retry(max=0)),
    (None, None),
]


@pytest.mark.parametrize("option, retry", VALID, ids=[str(v[0]) for v in VALID])
def test_a_valid_retry_option_is_read(tmp_path: Path, scenario: Path, option: str | None,
                                      retry: Retry | None) -> None:
    entries, found = _validated(night(tmp_path, scenario, option), None)
    assert found == retry and len(entries) == 2


INVALID = [
    # line, what the problem says
    ("retry: {on: oom, max: 1}", "retry: unknown key 'on' (known: max); only infrastructure"),
    ("retry: {on: infrastructure}", "retry: unknown key 'on' (known: max)"),
    ("retry: {max: 5}", "retry: max: 5 is not a whole number from 0 to 3"),
    ("retry: {max: -1}", "retry: max: -1 is not a whole number"),
    ("retry: {max: yes}", "retry: max: True is not a whole number"),
    ("retry: {max: 1.5}", "retry: max: 1.5 is not a whole number"),
    ("retry: {max: 1, tries: 2}", "retry: unknown key 'tries' (known: max)"),
    ("retry: [infrastructure]", "retry: expected a mapping such as {max: 1}"),
    ("retry:", "retry: expected a mapping"),
    ("retry: {max: [", "retry: not valid YAML"),
    ("retries: {max: 1}", "retries: not a suite option (the options: retry)"),
]


@pytest.mark.parametrize("line, words", INVALID, ids=[i[0] for i in INVALID])
def test_a_bad_retry_option_is_refused_with_its_line_and_nothing_runs(
        tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, line: str, words: str) -> None:
    from workbook.run import driver

    suite = night(tmp_path, scenario, line)
    assert main(["suite", "validate", str(suite)]) == 2
    err = capsys.readouterr().err
    assert f"{suite}:1: {words}" in err, err

    fake = Attempts({})
    monkeypatch.setattr(driver, "execute_run", fake)
    assert main(["suite", "run", str(suite), "--runs", str(tmp_path / "runs")]) == 2
    assert fake.calls == []


def test_every_problem_of_the_options_and_entries_is_listed_at_once(
        tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "night.txt"
    suite.write_text("retry: {on: oom, max: 9, tries: 1}\n"
                     "retry: {max: 1}\n"
                     f"{scenario}\n"
                     "missing.yaml\n")
    assert main(["suite", "validate", str(suite)]) == 2
    err = capsys.readouterr().err
    for words in (f"{suite}:1: retry: unknown key 'tries'", f"{suite}:1: retry: unknown key 'on'",
                  f"{suite}:1: retry: max: 9", f"{suite}:2: retry: given twice (first on line 1)",
                  f"{suite}:4: no such scenario file"):
        assert words in err, err
