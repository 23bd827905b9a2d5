"""A red night offers the ``workbook bisect`` command that finds the verl commit it started at,
in its report and in the suite's summary; what the ledger does not know is a placeholder."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from tests.history.nights import SCENARIO, night
from workbook.batch.records import Record
from workbook.cli.suite import bisect_hints
from workbook.history.bisect_hint import BisectHint, bisect_hint
from workbook.history.ledger import record
from workbook.report import cache, sections

GREEN, RED = "a1" * 20, "b2" * 20

HINTS = [
    # what the ledger knows: green's commit, tonight's, the checkout; the command; the note
    ("both commits known", GREEN, RED, "/src/verl",
     f"workbook bisect s.yaml --verl-repo /src/verl --good {GREEN} --bad {RED}", ""),
    ("verl from a package the green night", None, RED, "/src/verl",
     f"workbook bisect s.yaml --verl-repo /src/verl --good <GOOD> --bad {RED}",
     "a known good commit is needed"),
    ("tonight's verl from a package", GREEN, None, None,
     f"workbook bisect s.yaml --verl-repo <VERL_REPO> --good {GREEN} --bad <BAD>",
     "was not a git checkout"),
    ("a dirty checkout tonight", GREEN, RED + "-dirty", "/src/my verl",
     f"workbook bisect s.yaml --verl-repo '/src/my verl' --good {GREEN} --bad {RED}",
     "uncommitted changes"),
    ("the same commit both nights", RED, RED, "/src/verl", "", "does not explain the change"),
]


@pytest.mark.parametrize("case, good, bad, checkout, command, note", HINTS,
                         ids=[h[0] for h in HINTS])
def test_the_command_holds_what_the_ledger_knows(case: str, good: str | None, bad: str | None,
                                                 checkout: str | None, command: str,
                                                 note: str) -> None:
    hint = bisect_hint(scenario="s.yaml", sets=[], checkout=checkout, good=good, bad=bad)

    assert hint.command == command
    assert (note in hint.note) if note else hint.note == ""
    assert hint.ready == (bool(command) and "<" not in command)


def test_a_suite_entrys_overrides_go_with_the_command() -> None:
    hint = bisect_hint(scenario="s.yaml", sets=["timeout_s=7200", "overrides+=a.b=1 2"],
                       checkout="/v", good=GREEN, bad=RED)

    assert hint.command.startswith("workbook bisect s.yaml -s timeout_s=7200 -s "
                                   "'overrides+=a.b=1 2' --verl-repo /v")


def _red_night(root: Path, *, green_commit: str | None) -> Path:
    if green_commit is not None:
        record(night(root, 3, commits={"workbook": "1", "verl": green_commit}), root)
    red = night(root, 4, "regressed", commits={"workbook": "1", "verl": RED},
                overrides=["verl.path=/src/verl", "timeout_s=600"])
    run = json.loads((red / "run.json").read_text())
    run.update(verl_checkout={"path": "/src/verl", "commit": RED, "dirty": False},
               scenario_file=str(root / "elsewhere" / f"{SCENARIO}.yaml"))
    (red / "run.json").write_text(json.dumps(run))
    return red


@pytest.mark.parametrize("green_commit, expected", [
    (GREEN, f"--good {GREEN} --bad {RED}"),
    (None, f"--good <GOOD> --bad {RED}"),
], ids=["green commit known", "never green"])
def test_a_red_nights_report_shows_the_command(tmp_path: Path, green_commit: str | None,
                                               expected: str) -> None:
    cache.forget()
    red = _red_night(tmp_path, green_commit=green_commit)

    block = sections.history(red).html

    command = re.search(r"<pre data-bisect-command>(.*?)</pre>", block, re.DOTALL)
    assert command is not None
    assert html.unescape(command.group(1)) == (
        f"workbook bisect {tmp_path / 'elsewhere' / SCENARIO}.yaml -s timeout_s=600 "
        f"--verl-repo /src/verl {expected}")
    assert ("data-bisect-note" in block) == (green_commit is None)


def test_a_green_nights_report_offers_no_bisect(tmp_path: Path) -> None:
    cache.forget()
    green = night(tmp_path, 3, commits={"workbook": "1", "verl": GREEN})

    assert "data-bisect" not in sections.history(green).html


def test_the_suite_summary_prints_each_red_entrys_command(tmp_path: Path) -> None:
    red = _red_night(tmp_path, green_commit=GREEN)
    green = night(tmp_path, 5, commits={"workbook": "1", "verl": GREEN})
    records = [Record("01-red", status="regressed", run_dir=str(red)),
               Record("02-green", status="passed", run_dir=str(green))]

    lines = bisect_hints(records, tmp_path)

    assert len(lines) == 1
    assert lines[0].startswith("suite: 01-red: the verl commit it started at: workbook bisect ")
    assert lines[0].endswith(f"--good {GREEN} --bad {RED}")


def test_a_hint_for_the_same_commit_has_no_command() -> None:
    assert bisect_hint(scenario="s", sets=[], checkout="/v", good=RED, bad=RED) == BisectHint(
        "", f"verl's commit {RED[:12]} is the last green night's: verl's history does not "
        "explain the change (see what changed since)")
