"""Every command the README and the docs show works as shown, and the pages keep their promises.

Each line of an ``sh`` block is split into commands as the shell would (``tests/shell.py``); each
command's program has a check: a ``workbook`` command parses with the real CLI's parser and names
scenario and suite files that exist, a ``make`` target exists in the Makefile, a papermill
parameter is one the notebook has, a pip extra is one pyproject.toml declares, and a pytest
marker expression names declared markers. A program with no check fails the test, so a new kind
of command cannot slip past it.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.shell import ROOT, commands, pages, script_lines, shown_line
from workbook.cli import parser

README = ROOT / "README.md"
CLI_PAGE = ROOT / "docs" / "reference" / "cli.md"
CONTRIBUTING = ROOT / "docs" / "contributing.md"
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
_TARGET = re.compile(r"^([A-Za-z][\w.-]*)\s*:(?!=)", re.M)
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
_FILE_ARG = re.compile(r"^(?:params/)?[\w./-]+\.(?:yaml|txt)$")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _blocks(language: str) -> Iterator[tuple[Path, str]]:
    for page in pages():
        for lang, body in _FENCE.findall(page.read_text(encoding="utf-8")):
            if lang == language:
                yield page, body


def _declared_extras() -> set[str]:
    section = PYPROJECT.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([\w-]+)\s*=", section, re.M))


def _declared_markers() -> set[str]:
    section = PYPROJECT.split("markers = [", 1)[1].split("]", 1)[0]
    return set(re.findall(r'^\s*"([\w-]+):', section, re.M))


def _shown() -> list[Any]:
    """One ``pytest.param`` per command of every ``sh`` block, its id naming page and program."""
    found: list[Any] = []
    for page, body in _blocks("sh"):
        for line in script_lines(body):
            if line.strip().startswith("#"):
                continue
            for words in commands(line):
                found.append(pytest.param(words, id=f"{_rel(page)}:{' '.join(words[:3])}"))
    return found


SHOWN = _shown()


def _makefile_targets() -> set[str]:
    return set(_TARGET.findall((ROOT / "Makefile").read_text(encoding="utf-8")))


def _notebook_parameters(path: Path) -> set[str]:
    """The names the notebook's ``parameters`` cell assigns (what papermill's -p may set)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    (cell,) = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    tree = ast.parse("".join(cell["source"]))
    return {t.id for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def _leaf_commands(top: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    subs = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(prefix)
        return
    for name, sub in subs[0].choices.items():
        yield from _leaf_commands(sub, (*prefix, name))


def check_workbook(args: list[str]) -> None:
    try:
        parsed = parser().parse_args(args)
    except SystemExit as exc:  # argparse's way of rejecting a command line (or of showing help)
        if exc.code == 0 and args[-1:] == ["--help"]:
            return
        pytest.fail(f"`workbook {' '.join(args)}` does not parse (exit {exc.code})")
    assert callable(parsed.handler)
    for word in args:
        if _FILE_ARG.match(word) and not any(c.isupper() for c in word):
            if "/" in word or word.endswith(".yaml"):
                path = ROOT / word if word.startswith("params/") else ROOT / "params" / word
                assert path.is_file(), f"`workbook {' '.join(args)}` names {word}, which is missing"


def check_make(args: list[str]) -> None:
    targets = [a for a in args if not a.startswith("-") and "=" not in a]
    assert targets, "a bare `make` shows no target"
    missing = set(targets) - _makefile_targets()
    assert not missing, f"no Makefile target {sorted(missing)}"


def check_papermill(args: list[str]) -> None:
    notebook = ROOT / args[0]
    assert notebook.is_file(), f"{args[0]} is missing"
    known = _notebook_parameters(notebook)
    named = [args[i + 1] for i, a in enumerate(args) if a in ("-p", "--parameters")]
    assert set(named) <= known, f"{sorted(set(named) - known)}: not parameters of {args[0]}"


def check_pip(args: list[str]) -> None:
    assert args[:2] == ["install", "-e"], args
    extras = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", args[2])
    assert extras, f"pip installs {args[2]}, not this project"
    declared = _declared_extras()
    wanted = set(filter(None, (extras.group(1) or "").split(",")))
    assert wanted <= declared, f"no extra {sorted(wanted - declared)} in pyproject.toml"


def check_python(args: list[str]) -> None:
    assert args[:2] == ["-m", "pytest"], f"python {' '.join(args)}: only pytest is shown"
    declared = _declared_markers()
    for i, word in enumerate(args[2:], 2):
        if args[i - 1] == "-m":
            named = set(re.findall(r"\w+", word)) - {"not", "and", "or"}
            assert named <= declared, f"markers {sorted(named - declared)} are not declared"
        elif not word.startswith("-") and args[i - 1] != "-p":
            assert (ROOT / word).exists(), f"pytest is shown running {word}, which is missing"


def check_mkdocs(args: list[str]) -> None:
    assert (ROOT / "mkdocs.yml").is_file()
    assert args and args[0] in ("build", "serve"), f"mkdocs {' '.join(args)}"


def check_source(args: list[str]) -> None:
    venv = re.search(r"^VENV\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert venv and args == [f"{venv.group(1)}/bin/activate"], args


CHECKS: dict[str, Callable[[list[str]], None]] = {
    "workbook": check_workbook, "make": check_make, "papermill": check_papermill,
    "pip": check_pip, "python": check_python, "mkdocs": check_mkdocs, ".": check_source,
}


@pytest.mark.parametrize("words", SHOWN)
def test_every_shown_command_works_as_shown(words: list[str]) -> None:
    program = words[0].rsplit("/", 1)[-1]
    assert program in CHECKS, f"`{' '.join(words)}`: no check for {program} (add one)"
    CHECKS[program](words[1:])


def test_the_pages_show_commands_of_each_kind() -> None:
    programs = {p.values[0][0].rsplit("/", 1)[-1] for p in SHOWN}
    assert {"workbook", "make", "papermill"} <= programs
    assert len(SHOWN) > 40


@pytest.mark.parametrize("page", pages(), ids=_rel)
def test_shell_blocks_are_labelled_sh(page: Path) -> None:
    languages = {lang for lang, _ in _FENCE.findall(page.read_text(encoding="utf-8"))}
    assert languages <= {"sh", "yaml", "text"}, f"{sorted(languages)}: only sh blocks are checked"


@pytest.mark.parametrize("body", [pytest.param(body, id=_rel(page))
                                  for page, body in _blocks("yaml")])
def test_yaml_blocks_parse(body: str) -> None:
    assert yaml.safe_load(body) is not None


@pytest.mark.parametrize(("line", "words"), [
    (". .venv/bin/activate", [[".", ".venv/bin/activate"]]),
    ("WORKBOOK_RUNS=/r workbook run x.yaml  # why", [["workbook", "run", "x.yaml"]]),
    ("workbook rayjob p.yaml > rayjob.yaml && kubectl create -f rayjob.yaml",
     [["workbook", "rayjob", "p.yaml"], ["kubectl", "create", "-f", "rayjob.yaml"]]),
    ("make check", [["make", "check"]]),
])
def test_lines_split_into_commands_as_the_shell_would(line: str, words: list[list[str]]) -> None:
    assert commands(line) == words


@pytest.mark.parametrize(("args", "fails"), [
    (["run", "params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml"], False),
    (["run", "params/no-such-scenario.yaml"], True),
    (["run", "params/SCENARIO.yaml"], False),  # a placeholder the reader fills in
    (["runn", "params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml"], True),
    (["suite", "run", "params/suites/smoke-cpu.txt", "--no-such-option"], True),
])
def test_a_wrong_workbook_command_fails_its_check(args: list[str], fails: bool) -> None:
    failed = False
    try:
        check_workbook(args)
    except (AssertionError, pytest.fail.Exception):
        failed = True
    assert failed is fails


def test_a_missing_make_target_or_notebook_parameter_fails_its_check() -> None:
    with pytest.raises(AssertionError, match="no Makefile target"):
        check_make(["chek"])
    with pytest.raises(AssertionError, match="not parameters"):
        check_papermill(["notebooks/gspo.ipynb", "out.ipynb", "-p", "clip_ratio", "1"])
    with pytest.raises(AssertionError, match="no extra"):
        check_pip(["install", "-e", ".[ci]"])


def test_the_readme_is_one_page_that_opens_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    first = next(body for lang, body in _FENCE.findall(text) if lang == "sh")
    assert [c for line in script_lines(first) for c in commands(line)] == [
        ["make", "report"], ["make", "test"]]


@pytest.mark.parametrize("page", [README, ROOT / "docs" / "index.md"], ids=_rel)
def test_every_page_the_readme_and_home_link_exists(page: Path) -> None:
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target or target.endswith(".png"):  # the report's picture is made elsewhere
            continue
        assert (page.parent / target).exists(), f"{_rel(page)} links to {target}, which is missing"


def test_every_cli_command_is_in_the_cli_reference() -> None:
    text = CLI_PAGE.read_text(encoding="utf-8")
    missing = [c for c in _leaf_commands(parser()) if f"`workbook {c}" not in text]
    assert not missing, f"not in {_rel(CLI_PAGE)}: {missing}"


def test_every_test_marker_is_documented(pytestconfig: pytest.Config) -> None:
    text = CONTRIBUTING.read_text(encoding="utf-8")
    declared = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert declared >= _declared_markers() >= {"verl", "ray", "browser"}
    for name in _declared_markers():
        assert f"| `{name}` |" in text, f"marker {name} is not in {_rel(CONTRIBUTING)}"


def test_the_live_papermill_test_finds_its_line() -> None:
    assert shown_line("papermill notebooks/gspo.ipynb") == "papermill notebooks/gspo.ipynb out.ipynb"


def _dry_run(target: str) -> list[str]:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    # as a contributor types it, also when this test runs under `make test` (CI): a parent
    # make's MAKEFLAGS/MAKELEVEL would add its "Entering directory" lines
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run([make, "--no-print-directory", "-n", target], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def test_make_check_needs_no_root_no_browser_and_no_real_run() -> None:
    steps = _dry_run("check")
    assert not any("apt-get" in s or "sudo" in s for s in steps), steps
    pytest_steps = [s for s in steps if "-m pytest" in s]
    assert pytest_steps == [s for s in pytest_steps if '-m "not verl and not ray and not browser"' in s]
    assert any("mkdocs build --strict" in s for s in steps)


def test_make_test_runs_every_step_of_make_check_then_the_rest() -> None:
    check, everything = _dry_run("check"), _dry_run("test")
    assert everything[: len(check)] == check
    rest = everything[len(check):]
    assert any("apt-get" in s for s in rest) and any('-m "verl or ray or browser"' in s for s in rest)
