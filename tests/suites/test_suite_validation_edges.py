"""Suite validation lists every problem of every line and entry at once, and reads nothing
outside the params folders: each case exits 2, names its line or entry, and launches nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.edges import NPU_SCENARIO, raised_within
from workbook.batch.suite import read_suite, validate_suite
from workbook.cli import main
from workbook.errors import InputError, ParamsError

GOOD = NPU_SCENARIO


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "good.yaml").write_text(GOOD)
    (suites / "bad.yaml").write_text(GOOD + "seed: -5\n")
    (tmp_path / "outside.yaml").write_text(GOOD)
    (suites / "link.yaml").symlink_to(tmp_path / "outside.yaml")
    return suites


def suite_validate(capsys: pytest.CaptureFixture[str], suite: Path) -> tuple[int, str]:
    code = main(["suite", "validate", str(suite)])
    return code, capsys.readouterr().err


def test_every_problem_of_every_line_and_entry_is_listed_at_once(
        folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = folder / "night.txt"
    suite.write_text("good.yaml\n"
                     "good.yaml --bogus\n"                      # line 2
                     "missing.yaml\n"                           # line 3
                     "good.yaml -s lr=nan -s seed=-5\n"          # entry 2
                     "bad.yaml\n"                                # entry 3
                     "good.yaml 'unclosed\n"                    # line 6
                     "good.yaml -s name=../../x\n")             # entry 4

    code, err = suite_validate(capsys, suite)

    assert code == 2, err
    for words in (f"{suite}:2: expected '-s KEY=VALUE'", f"{suite}:3: no such scenario file",
                  f"{suite}:6: No closing quotation", "entry 2 (good.yaml -s lr=nan -s seed=-5): lr",
                  "entry 2 (good.yaml -s lr=nan -s seed=-5): seed", "entry 3 (bad.yaml): seed",
                  "entry 4 (good.yaml -s name=../../x): name"):
        assert words in err, err
    assert "entry 1 " not in err  # the good entry has no problem


ESCAPES = [
    ("../outside.yaml", "outside the suite's folder"),
    ("link.yaml", "outside the suite's folder"),
    ("/etc/passwd", "outside the suite's folder"),
    ("cwd-only.yaml", "no such scenario file"),
]


@pytest.mark.parametrize("line, words", ESCAPES, ids=[e[0] for e in ESCAPES])
def test_an_entry_outside_the_params_folders_is_refused(
        folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        line: str, words: str) -> None:
    cwd = folder.parent / "cwd"
    cwd.mkdir()
    (cwd / "cwd-only.yaml").write_text(GOOD)
    monkeypatch.chdir(cwd)  # the working directory is never where an entry is looked for
    suite = folder / "escape.txt"
    suite.write_text(f"good.yaml\n{line}\n")

    code, err = suite_validate(capsys, suite)

    assert code == 2, err
    assert f"{suite}:2: " in err and words in err, err


def test_a_non_utf8_suite_names_the_file_and_the_byte(
        folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = folder / "latin1.txt"
    suite.write_bytes("# r\u00e9sum\u00e9\ngood.yaml\n".encode("latin-1"))

    code, err = suite_validate(capsys, suite)

    assert code == 2 and "internal error" not in err, err
    assert str(suite) in err and "not UTF-8" in err and "byte 3 on line 1" in err


def test_a_huge_suite_file_is_refused(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = folder / "huge.txt"
    suite.write_text("good.yaml\n" + "#" * (2 << 20) + "\n")

    code, err = suite_validate(capsys, suite)

    assert code == 2 and "larger than 1024 KiB" in err, err


def test_a_suite_that_is_a_fifo_never_blocks(folder: Path) -> None:
    suite = folder / "pipe.txt"
    os.mkfifo(suite)
    raised = raised_within(lambda: read_suite(suite))
    assert isinstance(raised, InputError) and "not a regular file" in raised.message


def test_read_suite_still_lists_every_unreadable_line(folder: Path) -> None:
    suite = folder / "lines.txt"
    suite.write_text("good.yaml --x\nnowhere.yaml\ngood.yaml\n")

    with pytest.raises(ParamsError) as raised:
        read_suite(suite)

    assert [f for f, _ in raised.value.problems] == [f"{suite}:1", f"{suite}:2"]


def test_run_with_an_invalid_suite_creates_nothing(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = folder / "run.txt"
    suite.write_text("good.yaml\nlink.yaml\ngood.yaml -s lr=inf\n")
    runs = tmp_path / "runs"

    code = main(["suite", "run", str(suite), "--runs", str(runs)])

    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{suite}:2: " in err and "entry 2 (good.yaml -s lr=inf): lr" in err
    assert not runs.exists()


def test_only_filters_entries_but_still_reports_unreadable_lines(folder: Path) -> None:
    suite = folder / "only.txt"
    suite.write_text("good.yaml\nbad.yaml\n")

    assert [e.params.name for e in validate_suite(suite, only="good")] == ["good.yaml"]
    suite.write_text("good.yaml\nnowhere.yaml\n")
    with pytest.raises(ParamsError, match="nowhere.yaml"):
        validate_suite(suite, only="good")


def test_one_entry_run_alone_keeps_the_other_entries_of_the_night() -> None:
    """A CI matrix runs ``suite run --only X`` per job into one night: nobody's record is lost."""
    from workbook.batch.records import merged_entries

    night = [{"key": "01-a", "status": "passed"}, {"key": "02-b", "status": "failed"}]
    assert merged_entries(night, [{"key": "02-b", "status": "passed"}]) == [
        {"key": "01-a", "status": "passed"}, {"key": "02-b", "status": "passed"}]
    assert merged_entries(night, [{"key": "03-c", "status": "regressed"}])[-1]["key"] == "03-c"
    assert merged_entries([], [{"key": "01-a", "status": "pending"}]) == [
        {"key": "01-a", "status": "pending"}]
