"""Suites: many scenarios, one command, one verdict, one JUnit file, one summary.

A suite is a commented text file (``params/suites/<name>.txt``), one scenario per line with
optional per-line overrides, as NeMo-RL keeps its nightly lists::

    # tiny CPU scenarios the project's own CI runs
    gspo-tiny-1n1cpu-fsdp2-vllm.yaml
    ppo-tiny-2n1cpu-fsdp2-vllm-ray.yaml -s total_training_steps=2

Scenario paths are relative to the suite file's folder, else to the project's ``params/``.
A line ``NAME: VALUE`` is an option of the whole suite; the one there is::

    retry: {max: 1}

runs an entry again (at most ``max`` times) whose run failed on the infrastructure (a device,
disk, Ray node or link broke; its diagnosis says ``infrastructure``), never one that failed any
other way. Both attempts stay in the suite directory, and the entry's record says why it ran
again (:class:`~workbook.batch.engine.Retry`).

This module reads the file; :mod:`workbook.batch.engine` runs it: every entry validated before
any launches, then each in order into one suite directory (``<runs>/suites/<suite>/<UTC
date>/``, recorded in its ``suite.json``, which keeps the entries other ``--only`` invocations
ran there), going on when an entry crashes or times out, sharing a local Ray cluster between
consecutive entries that ask for the same one, clearing what an earlier crashed workbook run
left behind before each entry, and stopping when the user stops it. Running the same suite
again the same day resumes: finished entries are skipped unless ``rerun``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workbook.batch.engine import Batch, Engine, Execute, Item, Retry, validate_items
from workbook.batch.records import BatchFile, Record
from workbook.core.layout import SUITE_FILE, SUITES_DIR
from workbook.core.quoting import cut, short
from workbook.core.redaction import redact_text
from workbook.core.serialization import load_yaml_text
from workbook.core.textfile import read_text
from workbook.errors import InputError, ParamsError

# ``retry: {...}``: a line that starts with a lowercase name and a colon (a scenario file name
# never does: it has no space after a colon, nor a colon at its end)
OPTION_RE = re.compile(r"^(?P<name>[a-z_]+):(?:\s+(?P<value>.*))?$")
OPTIONS = ("retry",)


@dataclass
class Entry:
    """One line of a suite file."""

    index: int
    line: str
    params: Path
    sets: list[str]

    @property
    def key(self) -> str:
        """``01-gspo-tiny-...`` (``-<hash>`` of the overrides when there are any)."""
        key = f"{self.index:02d}-{self.params.stem}"
        if self.sets:
            key += "-" + hashlib.sha1(" ".join(self.sets).encode()).hexdigest()[:6]
        return key

    def item(self, timeout_s: float | None = None) -> Item:
        """The entry as the engine runs it (``timeout_s`` ends its run after that long)."""
        line = redact_text(self.line)
        sets = list(self.sets) + ([f"timeout_s={timeout_s:g}"] if timeout_s else [])
        return Item(self.key, self.params, sets, label=f"entry {self.index} ({cut(self.line)})",
                    title=f"entry {self.index}: {line}", about={"line": line})


@dataclass
class SuiteResult:
    name: str
    directory: Path
    entries: list[Record]
    exit_code: int
    interrupted: bool = False


def read_suite(path: Path) -> list[Entry]:
    """The entries of a suite file; ParamsError naming every line that cannot be read."""
    entries, _, problems = _read_entries(Path(path))
    if problems:
        raise ParamsError(problems, "suite")
    return entries


def _read_entries(path: Path) -> tuple[list[Entry], Retry | None, list[tuple[str, str]]]:
    """The entries that can be read, the retry option, and a ``(file:line, message)`` for each
    line that cannot be read."""
    if not path.exists():
        raise InputError(f"no such suite file: {path}")
    text = read_text(path, what="suite file")
    roots = _roots(path)
    entries: list[Entry] = []
    problems: list[tuple[str, str]] = []
    retry: Retry | None = None
    given: dict[str, int] = {}  # option -> the line that gave it
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        where = f"{path}:{number}"
        option = OPTION_RE.match(line)
        if option:
            name = option.group("name")
            if name in given:
                problems.append((where, f"{name}: given twice (first on line {given[name]})"))
                continue
            given[name] = number
            found, said = _option(name, option.group("value") or "", where)
            retry = found if found is not None else retry
            problems += [(where, f"{name}: {message}") for message in said]
            continue
        try:
            words = shlex.split(line)
        except ValueError as exc:
            problems.append((where, f"{exc}: {cut(line)}"))
            continue
        sets, rest, bad = [], words[1:], False
        while rest:
            flag = rest.pop(0)
            if flag not in ("-s", "--set") or not rest:
                problems.append((where, f"expected '-s KEY=VALUE', got {short(flag)}"))
                bad = True
                break
            sets.append(rest.pop(0))
        scenario, problem = _entry_file(words[0], path.parent, roots)
        if problem:
            problems.append((where, problem))
        if scenario is not None and not bad:
            entries.append(Entry(len(entries) + 1, line, scenario, sets))
    if not entries and not problems:
        problems.append((str(path), "the suite lists no scenario"))
    return entries, retry, problems


def _option(name: str, value: str, where: str) -> tuple[Retry | None, list[str]]:
    """A suite option's value (``retry`` is the one there is), and what is wrong with it."""
    if name not in OPTIONS:
        return None, [f"not a suite option (the options: {', '.join(OPTIONS)})"]
    try:
        parsed = load_yaml_text(value, where)
    except InputError as exc:
        return None, [exc.message.removeprefix(f"{where}: ")]
    return Retry.parse(parsed)


def _roots(suite: Path) -> tuple[Path, ...]:
    """Where a suite's scenarios may live: its own folder and the params folders."""
    from workbook.core.project import params_dir, root

    return tuple(dict.fromkeys((suite.resolve().parent, (root() / "params").resolve(),
                                params_dir())))


def _entry_file(word: str, folder: Path, roots: tuple[Path, ...]) -> tuple[Path | None, str]:
    """A suite line's scenario file: beside the suite, else in the params folder (never the
    working directory), and inside one of ``roots`` once symlinks are resolved."""
    from workbook.core.project import params_dir

    given = Path(word)
    candidates = [given] if given.is_absolute() else [folder / given, params_dir() / given]
    if given.parts[:1] == ("params",):
        candidates.append(params_dir() / Path(*given.parts[1:]))
    for candidate in candidates:
        try:
            if not candidate.is_file():
                continue
            found = candidate.resolve()
        except (OSError, ValueError, RuntimeError):
            continue
        if not any(found == r or r in found.parents for r in roots):
            return None, (f"{short(word)} resolves to {cut(str(found))}, outside the suite's "
                          f"folder and the params folder {params_dir()}")
        return found, ""
    tried = ", ".join(dict.fromkeys(cut(str(c)) for c in candidates))
    return None, f"no such scenario file: {cut(word)} (looked for {tried})"


def validate_suite(path: Path, only: str | None = None) -> list[Entry]:
    """The suite's entries (those matching ``only``), every one valid; else one ParamsError
    listing every problem of every line, option and entry at once."""
    return _validated(path, only)[0]


def _validated(path: Path, only: str | None) -> tuple[list[Entry], Retry | None]:
    entries, retry, problems = _read_entries(Path(path))
    if only:
        entries = [e for e in entries if fnmatch.fnmatch(e.params.stem, only)
                   or fnmatch.fnmatch(e.key, only)]
        if not entries and not problems:
            raise InputError(f"--only {only!r} matches no entry of {path}")
    validate_items([e.item() for e in entries], source="suite", problems=problems)
    return entries, retry


def suite_dir(name: str, runs_root: Path, when: datetime | None = None) -> Path:
    """``<runs root>/suites/<name>/<UTC date>``: the same command on the same night resumes."""
    day = (when or datetime.now(timezone.utc)).strftime("%Y-%m-%d")
    return Path(runs_root) / SUITES_DIR / name / day


def run_suite(path: Path, *, runs_root: Path, directory: Path | None = None,
              only: str | None = None, timeout_s: float | None = None, rerun: bool = False,
              echo: bool = False, on_start: Callable[[Path], object] | None = None,
              execute: Execute | None = None) -> SuiteResult:
    """Validate, then run every entry (see the module docstring); never raises for an entry.

    ``on_start(directory)`` is called once the suite directory exists (before any launch).
    """
    name = Path(path).stem
    entries, retry = _validated(path, only)
    items = [e.item(timeout_s) for e in entries]
    directory = Path(directory or suite_dir(name, runs_root)).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    header: dict[str, Any] = {"suite": name, "file": str(Path(path).resolve())}
    if retry is not None:
        header["retry"] = retry.model_dump()
    batch = Batch("suite", directory, items, BatchFile(directory / SUITE_FILE, "entries",
                                                    keep_others=True), lambda: header)
    batch.save()
    if on_start is not None:
        on_start(directory)
    with Engine(batch, runs_root=runs_root, echo=echo, execute=execute, retry=retry) as engine:
        engine.run(items, rerun=rerun)
    final = {r.key: r.status for r in batch.records}
    for key, times in engine.retried.items():
        print(f"suite: {key} ran again {times} time(s) after an infrastructure failure; "
              f"its last attempt {final[key]}", flush=True)
    return SuiteResult(name, directory, batch.records, batch.exit_code, engine.interrupted)
