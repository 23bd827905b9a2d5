"""Real git repositories made in a test's tmp_path: a line of commits, a merge, a tag.

Each commit changes ``verl/__init__.py`` (so a worktree of it looks like a verl checkout) and
a file named after it; the author is fixed, so ``git show`` tells the same every time.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

AUTHOR = {"GIT_AUTHOR_NAME": "Ada Tester", "GIT_AUTHOR_EMAIL": "ada@example.invalid",
          "GIT_COMMITTER_NAME": "Ada Tester", "GIT_COMMITTER_EMAIL": "ada@example.invalid",
          "GIT_AUTHOR_DATE": "2026-11-30T12:00:00+00:00",
          "GIT_COMMITTER_DATE": "2026-11-30T12:00:00+00:00",
          "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **AUTHOR}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env=env, check=True)
    return done.stdout.strip()


def commit(repo: Path, subject: str, *, name: str | None = None, lines: int = 1,
           verl: bool = True) -> str:
    """One commit touching ``<name>.py`` and (``verl``) ``verl/__init__.py``; its sha."""
    if verl:
        (repo / "verl").mkdir(exist_ok=True)
        (repo / "verl" / "__init__.py").write_text(f"# {subject}\n")
    (repo / f"{name or subject.split()[0]}.py").write_text("x = 1\n" * lines)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


def line_of(tmp_path: Path, count: int) -> tuple[Path, list[str]]:
    """A repository whose main line is ``count`` commits ``c0 ... c<count-1>``, oldest first."""
    repo = tmp_path / "verl-repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo, [commit(repo, f"c{i} change {i}", name=f"c{i}") for i in range(count)]
