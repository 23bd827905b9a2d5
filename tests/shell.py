"""Shell lines read as the shell would hand them to a program, for the tests that check the
commands the README, the docs and the CI recipes show.

Backslash-continued lines are joined, a `` # `` comment, shell redirections and what follows a
pipe or ``||`` are dropped, and ``${{ ... }}`` / ``$VAR`` become a placeholder word.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = "PLACEHOLDER"
_EXPRESSION = re.compile(r"\$\{\{.*?\}\}")
_VARIABLE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*")
_REDIRECT = re.compile(r"\s\d*(?:>>?|<)(?:&\d+|\s*\S+)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SEPARATORS = {"|", "||", "&&", ";", "&"}


def script_lines(script: str) -> Iterator[str]:
    """Logical shell lines: backslash continuations joined."""
    yield from script.replace("\\\n", " ").splitlines()


def words(line: str) -> list[str]:
    """The words of one shell line, split at blanks and at | & ; only, as in a shell."""
    text = _VARIABLE.sub(PLACEHOLDER, _EXPRESSION.sub(PLACEHOLDER, line))
    text = text.split(" # ", 1)[0]
    lexer = shlex.shlex(_REDIRECT.sub(" ", " " + text), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def commands(line: str) -> list[list[str]]:
    """Each simple command of a line (program first), variable assignments before it dropped."""
    found: list[list[str]] = [[]]
    for word in words(line):
        if word in SEPARATORS:
            found.append([])
        elif found[-1] or not _ASSIGNMENT.match(word):
            found[-1].append(word)
    return [c for c in found if c]


def workbook_argv(line: str) -> list[str] | None:
    """The arguments ``workbook`` gets from one shell line, or None if the line does not run it."""
    if "workbook" not in line:
        return None  # e.g. a line of a Python here-document, which is no shell
    split = words(line)
    if "workbook" not in split:
        return None
    start = split.index("workbook")
    if start and split[start - 1] not in SEPARATORS:
        return None  # "workbook" as an argument of something else
    argv: list[str] = []
    for word in split[start + 1 :]:
        if word in SEPARATORS:
            break
        argv.append(word)
    return argv


def shown_line(prefix: str) -> str:
    """The command line the README or the docs show starting with ``prefix``, comment dropped."""
    for page in pages():
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.strip().startswith(prefix):
                return line.split("  #")[0].strip()
    raise AssertionError(f"no line of the README or the docs starts with {prefix!r}")


def pages() -> list[Path]:
    """Every page a reader is shown: the README, the docs and the benchmarks' figures."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
            ROOT / "benchmarks" / "README.md"]
