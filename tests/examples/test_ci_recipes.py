"""The CI recipes in examples/ci stay valid: YAML that parses, workflows GitHub can schedule, and
every ``workbook ...`` command they show accepted by the real CLI parser.

Commands are collected from ``run:`` blocks of the workflows and from fenced code blocks of the
Markdown files. Backslash-continued lines are joined, shell redirections and what follows a pipe
or ``||`` are dropped, and ``${{ ... }}`` / ``$VAR`` become a placeholder word, so each command
is parsed the way the shell would hand it to ``workbook``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from workbook.cli import parser

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / "examples" / "ci"
YAML_FILES = sorted([*CI.glob("*.yml"), *CI.glob("*.yaml")])
MARKDOWN_FILES = sorted(CI.glob("*.md"))
PLACEHOLDER = "PLACEHOLDER"
_EXPRESSION = re.compile(r"\$\{\{.*?\}\}")
_VARIABLE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*")
_REDIRECT = re.compile(r"\s\d*(?:>>?|<)(?:&\d+|\s*\S+)")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
_SEPARATORS = {"|", "||", "&&", ";", "&"}


def _rel(path: Path) -> str:
    return str(path.relative_to(CI))


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    """``on:`` (PyYAML reads an unquoted ``on`` key as ``True``, YAML 1.1's boolean)."""
    found = workflow.get("on", workflow.get(True))
    return found if isinstance(found, dict) else {}


def _is_workflow(data: Any) -> bool:
    return isinstance(data, dict) and "jobs" in data and bool(_triggers(data) or "on" in data)


def _run_blocks(data: Any) -> Iterator[str]:
    """Every ``run:`` value anywhere in a workflow (or a snippet of one)."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "run" and isinstance(value, str):
                yield value
            else:
                yield from _run_blocks(value)
    elif isinstance(data, list):
        for item in data:
            yield from _run_blocks(item)


def _script_lines(script: str) -> Iterator[str]:
    """Logical shell lines: backslash continuations joined."""
    yield from script.replace("\\\n", " ").splitlines()


def workbook_argv(line: str) -> list[str] | None:
    """The arguments ``workbook`` gets from one shell line, or None if the line does not run it."""
    text = _VARIABLE.sub(PLACEHOLDER, _EXPRESSION.sub(PLACEHOLDER, line))
    text = text.split(" # ", 1)[0]
    lexer = shlex.shlex(_REDIRECT.sub(" ", " " + text), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True  # words split at blanks and at | & ; only, as in a shell
    words = list(lexer)
    if "workbook" not in words:
        return None
    start = words.index("workbook")
    if start and words[start - 1] not in _SEPARATORS:
        return None  # "workbook" as an argument of something else
    argv: list[str] = []
    for word in words[start + 1 :]:
        if word in _SEPARATORS:
            break
        argv.append(word)
    return argv


def _commands() -> list[Any]:
    """One ``pytest.param`` per ``workbook`` command, with an id naming its file and place."""
    found: list[Any] = []
    for path in [*YAML_FILES, *MARKDOWN_FILES]:
        if path.suffix == ".md":
            blocks = _FENCE.findall(path.read_text(encoding="utf-8"))
        else:
            blocks = list(_run_blocks(_load(path)))
        lines = [line for block in blocks for line in _script_lines(block)]
        argvs = [a for a in (workbook_argv(_shell_part(line)) for line in lines) if a is not None]
        found += [pytest.param(argv, id=f"{_rel(path)}#{n}:workbook {' '.join(argv[:2])}")
                  for n, argv in enumerate(argvs, 1)]
    return found


def _shell_part(line: str) -> str:
    """A YAML ``run: cmd`` line of a guide's snippet as the command alone; comments as nothing."""
    stripped = line.strip()
    if stripped.startswith("#"):
        return ""
    return re.sub(r"^(?:-\s+)?run:\s*", "", stripped)


COMMANDS = _commands()


@pytest.mark.parametrize("path", YAML_FILES, ids=_rel)
def test_every_recipe_is_valid_yaml(path: Path) -> None:
    assert _load(path) is not None


@pytest.mark.parametrize("path", [p for p in YAML_FILES if _is_workflow(_load(p))], ids=_rel)
def test_every_workflow_runs_nightly_and_on_demand_with_a_timeout(path: Path) -> None:
    workflow = _load(path)
    triggers = _triggers(workflow)
    assert triggers.get("schedule") and all("cron" in s for s in triggers["schedule"])
    assert "workflow_dispatch" in triggers
    assert workflow["jobs"]
    for name, job in workflow["jobs"].items():
        assert isinstance(job.get("timeout-minutes"), int), f"job {name} has no timeout-minutes"


@pytest.mark.parametrize("path", YAML_FILES, ids=_rel)
def test_every_run_step_fails_on_the_first_error(path: Path) -> None:
    for block in _run_blocks(_load(path)):
        assert block.lstrip().startswith("set -euo pipefail"), block


@pytest.mark.parametrize("path", YAML_FILES, ids=_rel)
def test_workflows_assume_no_home_of_root(path: Path) -> None:
    assert "/root" not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", MARKDOWN_FILES, ids=_rel)
def test_yaml_blocks_in_the_guides_parse(path: Path) -> None:
    blocks = re.findall(r"^```ya?ml\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S)
    for block in blocks:
        assert yaml.safe_load(block) is not None


def test_the_recipes_show_each_path_of_the_issue() -> None:
    shown = [p.values[0] for p in COMMANDS]

    def has(command: str, *options: str) -> bool:
        return any(a[: len(command.split())] == command.split() and set(options) <= set(a)
                   for a in shown)

    assert has("suite run", "--junit")
    assert has("publish")
    assert has("run")
    assert has("check", "--baseline", "--junit")
    assert has("check", "--scenario")
    assert has("report")
    assert has("rayjob", "--apply")


@pytest.mark.parametrize("argv", COMMANDS)
def test_every_workbook_command_parses(argv: list[str]) -> None:
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse's way of rejecting a command line
        pytest.fail(f"`workbook {shlex.join(argv)}` does not parse (exit {exc.code})")
    assert callable(args.handler)


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        ("workbook check run.log --junit junit.xml", ["check", "run.log", "--junit", "junit.xml"]),
        ('workbook rayjob "$P" -s "kuberay.image=$IMAGE" > rayjob.yaml',
         ["rayjob", PLACEHOLDER, "-s", f"kuberay.image={PLACEHOLDER}"]),
        ("workbook suite run x.txt 2>&1 | tee out || code=$?", ["suite", "run", "x.txt"]),
        ("workbook publish ${{ env.RUNS }} site && echo done", ["publish", PLACEHOLDER, "site"]),
        ("echo workbook run x", None),
        ("python3 -m pip install -e .", None),
    ],
)
def test_command_lines_are_read_as_the_shell_would(line: str, argv: list[str] | None) -> None:
    assert workbook_argv(line) == argv
