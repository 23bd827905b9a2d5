"""Merging another runs root's ledger (a site's when seeding, a runs root's when publishing) only
ever adds: each entry no line of the file ever held, once; never a line removed or rewritten; a
bad line quarantined; a runs root without a ledger first gets its own nights; any order, same
nights."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.history.nights import NEW_TORCH, SCENARIO, night
from workbook.history.ledger import (
    Entry,
    ledger_file,
    merge,
    quarantine_file,
    read_all,
    read_file,
    record,
)


def recorded(root: Path, *days: int, verdict: str = "passed") -> list[str]:
    """Nights of ``days`` closed into ``root``'s ledger; their run ids."""
    runs = [night(root, day, verdict) for day in days]
    for run in runs:
        record(run, root)
    return [run.name for run in runs]


def nights_of(root: Path) -> dict[tuple[str, str], list[Entry]]:
    return read_all(root, store=False)


def test_only_the_entries_missing_are_added_and_merging_again_adds_nothing(
        tmp_path: Path) -> None:
    site, root = tmp_path / "site", tmp_path / "runs"
    recorded(site, 1, 2)
    recorded(root, 2, 3)  # night 2 is the same night (same run id, same line) in both
    path = ledger_file(root, SCENARIO, "cpu")

    added = merge(nights_of(site), root)
    after = path.read_bytes()

    assert added == 1
    assert [e.run_id for e in read_file(path)] == [n for n in sorted(
        {e.run_id for k in (site, root) for e in nights_of(k)[(SCENARIO, "cpu")]})]
    assert merge(nights_of(site), root) == 0 and path.read_bytes() == after


def test_a_night_judged_again_keeps_its_newest_line_whatever_is_merged(tmp_path: Path) -> None:
    root, other = tmp_path / "runs", tmp_path / "other"
    run = night(root, 4, "regressed")
    record(run, root)
    old = nights_of(root)
    checks = json.loads((run / "checks.json").read_text())
    checks["verdict"]["status"] = "passed"  # judged again with a new baseline
    (run / "checks.json").write_text(json.dumps(checks))
    record(run, root)
    path = ledger_file(root, SCENARIO, "cpu")
    lines = path.read_bytes()

    assert merge(old, root) == 0  # the older line of the night is one the file held
    assert path.read_bytes() == lines
    assert [e.verdict for e in read_file(path)] == ["passed"]
    assert merge(nights_of(root), other) == 1 and nights_of(other) == nights_of(root)


def test_a_bad_line_of_the_target_is_set_aside_and_every_night_kept(tmp_path: Path) -> None:
    site, root = tmp_path / "site", tmp_path / "runs"
    recorded(site, 2)
    mine = recorded(root, 1)
    path = ledger_file(root, SCENARIO, "cpu")
    with path.open("ab") as out:
        out.write(b'{"torn": \n')

    assert merge(nights_of(site), root) == 1

    assert quarantine_file(path).read_bytes() == b'{"torn": \n'
    assert [e.run_id for e in read_file(path)] == mine + [e.run_id for e in
                                                        nights_of(site)[(SCENARIO, "cpu")]]


def test_a_runs_root_without_a_ledger_first_gets_its_own_nights(tmp_path: Path) -> None:
    site, root = tmp_path / "site", tmp_path / "runs"
    theirs = recorded(site, 1, 2)
    own = night(root, 3, "regressed", versions=NEW_TORCH)  # judged, never recorded

    assert merge(nights_of(site), root) == 2

    assert [e.run_id for e in read_file(ledger_file(root, SCENARIO, "cpu"))] == theirs + [own.name]


@pytest.mark.parametrize("first", ["one", "other"])
def test_merges_in_any_order_leave_the_same_nights(tmp_path: Path, first: str) -> None:
    sources = {"one": tmp_path / "one", "other": tmp_path / "other"}
    recorded(sources["one"], 1, 3)
    recorded(sources["other"], 2, 3)
    target = tmp_path / "site"
    for name in sorted(sources, key=lambda n: n != first):
        merge(nights_of(sources[name]), target)

    assert [e.run_id for e in nights_of(target)[(SCENARIO, "cpu")]] == sorted(
        {e.run_id for s in sources.values() for e in nights_of(s)[(SCENARIO, "cpu")]})
