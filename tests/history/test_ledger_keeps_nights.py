"""The ledger never loses a night: a bad line is kept aside (every other night kept), appends
from two processes at once both land, a FIFO never blocks a reader, and a rebuild from the run
directories happens only where a ledger file is missing, adding nights, never replacing them.

Each test records a real series of nights (``tests/history/nights.py``: run directories as
closing leaves them) and then prunes run directories, so a night the ledger kept can only come
from the ledger itself, never from a rebuild.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.edges import never_blocks, raised_within
from tests.history.nights import SCENARIO, night
from workbook.cli import main
from workbook.history.ledger import (
    LEDGER_DIR,
    LINE_MAX_BYTES,
    entry_of,
    ledger_file,
    quarantine_file,
    read_all,
    read_file,
    read_ledger,
    record,
)

DAYS = (1, 2, 3, 4, 5)


def recorded_series(root: Path, *, prune: tuple[int, ...] = (1, 2)) -> list[str]:
    """Nights of ``DAYS`` recorded as each was closed; the run directories of the ``prune``
    days removed afterwards (as a runs root's clean-up does). Their run ids, oldest first."""
    runs = [night(root, day, "regressed" if day == 4 else "passed") for day in DAYS]
    for run in runs:
        assert record(run, root) is not None
    for day in prune:
        shutil.rmtree(runs[DAYS.index(day)])
    return [run.name for run in runs]


def ids(root: Path) -> list[str]:
    return [e.run_id for e in read_ledger(root, SCENARIO, "cpu")]


def _truncated(line: bytes) -> bytes:
    return line[: len(line) // 2]


def _json_list(line: bytes) -> bytes:
    return json.dumps([json.loads(line)]).encode()


def _not_utf8(line: bytes) -> bytes:
    return line.replace(b'"passed"', b'"pass\xff\xfeed"')


def _not_an_entry(line: bytes) -> bytes:
    return json.dumps({"verdict": "passed", "note": "hand-written"}).encode()


def _wrong_kinds(line: bytes) -> bytes:
    data = json.loads(line)
    return json.dumps({**data, "run_id": "20261109T020000Z-odd009", "settings": ["a"]}).encode()


def _huge(line: bytes) -> bytes:
    data = json.loads(line)
    return json.dumps({**data, "run_id": "20261108T020000Z-big008",
                       "host": "x" * LINE_MAX_BYTES}).encode()


def _empty(line: bytes) -> bytes:
    return b"   "


# how a line is spoiled, and whether it is set aside (an empty line holds nothing to keep)
CORRUPTIONS: list[tuple[Callable[[bytes], bytes], bool]] = [
    (_truncated, True), (_json_list, True), (_not_utf8, True), (_not_an_entry, True),
    (_wrong_kinds, True), (_huge, True), (_empty, False)]


@pytest.mark.parametrize("spoil, set_aside", CORRUPTIONS, ids=lambda c: getattr(c, "__name__", "")[1:])
def test_a_bad_line_is_kept_aside_and_every_other_night_kept(
        tmp_path: Path, spoil: Callable[[bytes], bytes], set_aside: bool,
        capsys: pytest.CaptureFixture[str]) -> None:
    nights = recorded_series(tmp_path)
    path = ledger_file(tmp_path, SCENARIO, "cpu")
    lines = path.read_bytes().splitlines()
    bad = spoil(lines[2])
    path.write_bytes(b"\n".join([*lines[:2], bad, *lines[2:]]) + b"\n")

    found = ids(tmp_path)

    assert found == nights  # the pruned nights 1 and 2 too: nothing was rebuilt
    aside = quarantine_file(path)
    if set_aside:
        assert aside.read_bytes() == bad + b"\n"
        assert path.read_bytes().splitlines() == lines  # every other line, as it was
        assert str(aside) in capsys.readouterr().err
        assert main(["index", str(tmp_path)]) == 0
        index = (tmp_path / "index.html").read_text(encoding="utf-8")
        assert f"{LEDGER_DIR}/{aside.name} holds 1 line of {LEDGER_DIR}/{path.name}" in index
    else:
        assert not aside.exists() and capsys.readouterr().err == ""


def test_a_night_recorded_after_a_torn_last_line_keeps_its_own_line(tmp_path: Path) -> None:
    nights = recorded_series(tmp_path)
    path = ledger_file(tmp_path, SCENARIO, "cpu")
    with path.open("ab") as ledger:  # a disk that filled up mid-line
        ledger.write(b'{"scenario": "gspo-tiny-1n1cpu-fsdp2-vllm", "run_id": "2026')

    later = night(tmp_path, 9)
    assert record(later, tmp_path) is not None

    assert ids(tmp_path) == [*nights, later.name]
    assert quarantine_file(path).read_bytes().startswith(b'{"scenario"')


def test_a_ledger_read_from_a_published_copy_skips_a_bad_line_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nights = recorded_series(tmp_path)
    path = ledger_file(tmp_path, SCENARIO, "cpu")
    spoiled = path.read_bytes() + b"[1, 2]\n"
    path.write_bytes(spoiled)

    found = read_all(tmp_path, store=False)[(SCENARIO, "cpu")]

    assert [e.run_id for e in found] == nights
    assert path.read_bytes() == spoiled and not quarantine_file(path).exists()
    assert "line 6" in capsys.readouterr().err


def _fifo_ledger(root: Path) -> Path:
    path = ledger_file(root, SCENARIO, "cpu")
    path.unlink()
    os.mkfifo(path)
    return path


def _fifo_beside(root: Path) -> Path:
    path = root / LEDGER_DIR / "other.cpu.jsonl"
    os.mkfifo(path)
    return path


def _fifo_lock(root: Path) -> Path:
    path = root / LEDGER_DIR / ".lock"
    path.unlink()
    os.mkfifo(path)
    return path


def _fifo_quarantine(root: Path) -> Path:
    path = quarantine_file(ledger_file(root, SCENARIO, "cpu"))
    os.mkfifo(path)
    ledger = ledger_file(root, SCENARIO, "cpu")
    ledger.write_bytes(ledger.read_bytes() + b"[]\n")
    return path


# where the FIFO is, and whether the scenario's nights can still be read
FIFOS = [(_fifo_ledger, False), (_fifo_beside, True), (_fifo_lock, True),
         (_fifo_quarantine, True)]


@pytest.mark.parametrize("make, readable", FIFOS, ids=lambda c: getattr(c, "__name__", "")[1:])
def test_a_fifo_in_the_ledger_folder_blocks_neither_index_nor_read_ledger(
        tmp_path: Path, make: Callable[[Path], Path], readable: bool,
        capsys: pytest.CaptureFixture[str]) -> None:
    nights = recorded_series(tmp_path, prune=())
    fifo = make(tmp_path)

    with never_blocks(60):
        found = ids(tmp_path)
        assert main(["index", str(tmp_path)]) == 0
    assert raised_within(lambda: read_all(tmp_path), 30) is None

    assert found == (nights if readable else [])
    if fifo.name.endswith(".jsonl"):
        assert f"{fifo}: the ledger file is not a regular file" in capsys.readouterr().err
        index = (tmp_path / "index.html").read_text(encoding="utf-8")
        assert f"{LEDGER_DIR}/{fifo.name} is not a regular file" in index


def test_a_night_cannot_be_written_through_a_fifo_and_says_so(tmp_path: Path) -> None:
    recorded_series(tmp_path, prune=())
    _fifo_lock(tmp_path)
    later = night(tmp_path, 9)

    with never_blocks(60):
        raised = raised_within(lambda: record(later, tmp_path), 30)

    assert raised is not None and "the ledger's lock is not a regular file" in str(raised)


def _record_nights(root: Path, hour: int, start: Any) -> None:
    start.wait()
    for day in range(10, 22):
        record(night(root, day, hour=hour), root)


def test_concurrent_appends_from_two_processes_lose_nothing(tmp_path: Path) -> None:
    first = recorded_series(tmp_path, prune=())
    context = multiprocessing.get_context("fork")
    start = context.Barrier(2)
    writers = [context.Process(target=_record_nights, args=(tmp_path, hour, start))
               for hour in (3, 7)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=300)
    assert [w.exitcode for w in writers] == [0, 0]

    path = ledger_file(tmp_path, SCENARIO, "cpu")
    lines = path.read_bytes().splitlines()
    found = ids(tmp_path)

    assert len(found) == len(lines) == len(first) + 24 == len(set(found))
    assert not quarantine_file(path).exists()


def _no_folder(root: Path) -> None:
    shutil.rmtree(root / LEDGER_DIR)


def _no_file(root: Path) -> None:
    ledger_file(root, SCENARIO, "cpu").unlink()
    (root / LEDGER_DIR / "other.cpu.jsonl").write_text("")  # another scenario's stays


# what is missing, and who finds it so (the index's read_all rebuilds only a runs root with no
# ledger file at all: a scenario's own file comes back when its ledger is read or recorded)
MISSING = [(_no_folder, "read_ledger"), (_no_folder, "read_all"), (_no_folder, "record"),
           (_no_file, "read_ledger"), (_no_file, "record")]


@pytest.mark.parametrize("remove, reader", MISSING,
                         ids=[f"{r.__name__[4:]}-{how}" for r, how in MISSING])
def test_a_missing_ledger_is_rebuilt_from_the_run_directories(
        tmp_path: Path, remove: Callable[[Path], None], reader: str) -> None:
    nights = recorded_series(tmp_path, prune=())
    remove(tmp_path)
    later = night(tmp_path, 9)

    if reader == "read_ledger":
        read_ledger(tmp_path, SCENARIO, "cpu")
    elif reader == "read_all":
        read_all(tmp_path)
    else:
        record(later, tmp_path)

    stored = [e.run_id for e in read_file(ledger_file(tmp_path, SCENARIO, "cpu"))]
    assert stored == [*nights, later.name]  # the rebuild found tonight's directory too


@pytest.mark.parametrize("reader", ["read_ledger", "read_all", "record", "index"])
def test_a_present_ledger_is_never_replaced_by_a_rebuild(tmp_path: Path, reader: str) -> None:
    nights = recorded_series(tmp_path, prune=(1, 2, 3))
    (tmp_path / LEDGER_DIR / "other.cpu.jsonl").unlink(missing_ok=True)
    stray = night(tmp_path, 8)  # a run directory the ledger never heard of (no closing)
    later = night(tmp_path, 9)
    path = ledger_file(tmp_path, SCENARIO, "cpu")
    before = path.read_bytes()

    if reader == "read_ledger":
        read_ledger(tmp_path, SCENARIO, "cpu")
    elif reader == "read_all":
        read_all(tmp_path)
    elif reader == "record":
        record(later, tmp_path)
    else:
        assert main(["index", str(tmp_path)]) == 0

    after = path.read_bytes()
    assert after.startswith(before)  # only ever appended to
    expected = [*nights, later.name] if reader == "record" else nights
    assert ids(tmp_path) == expected and stray.name not in ids(tmp_path)


def test_a_night_judged_again_is_a_new_line_whose_last_one_counts(tmp_path: Path) -> None:
    run = night(tmp_path, 3, "regressed")
    record(run, tmp_path)
    checks = json.loads((run / "checks.json").read_text())
    checks["verdict"]["status"] = "passed"
    (run / "checks.json").write_text(json.dumps(checks))

    record(run, tmp_path)
    record(run, tmp_path)  # closed again, unchanged: no line

    path = ledger_file(tmp_path, SCENARIO, "cpu")
    assert len(path.read_bytes().splitlines()) == 2
    assert [e.verdict for e in read_ledger(tmp_path, SCENARIO, "cpu")] == ["passed"]
    assert read_file(path) == [entry_of(run, tmp_path)]
