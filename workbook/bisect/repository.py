"""A verl git repository as a bisect uses it: the one module that runs ``git`` for it.

verl is pure Python, so a commit is tested by checking it out into a worktree of its own
(``git worktree add --detach``) and putting that worktree first on the run's PYTHONPATH (a
scenario's ``verl.path``); nothing is built or installed. This module lists the commits between
two revisions along the first-parent line (the commits the branch's nights actually ran, one
after another, never a side branch's intermediate state), checks worktrees out and removes them,
and reads what a commit changed (``git show``). Revisions the user typed that git cannot use are
bad input (:class:`RepositoryError`, exit 2, nothing started); a worktree that cannot be made
while the bisect runs is a step that could not run (:class:`~workbook.errors.LaunchError`).

git runs without the user's hooks (a ``post-checkout`` hook has no business running for each
step), without a pager or a terminal prompt, and in the C locale.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from workbook.core.quoting import cut, short
from workbook.errors import InputError, LaunchError

GIT_TIMEOUT_S = 600.0  # a worktree of a large repository on a slow disk; never for ever
SHOW_FORMAT = "%H%x00%an%x00%aI%x00%s"  # sha, author, ISO date, subject (NUL-separated)


class RepositoryError(InputError):
    """A path that is not a git repository, or a revision git cannot use (exit 2)."""


@dataclass(frozen=True)
class Commit:
    """One commit of the range: its full sha and the first line of its message."""

    sha: str
    subject: str


@dataclass(frozen=True)
class FileChange:
    """One file a commit changed (``None`` lines for a binary file)."""

    path: str
    added: int | None
    deleted: int | None


@dataclass(frozen=True)
class CommitFacts:
    """What a page says of a commit: who, when, what, and the files it changed."""

    sha: str
    subject: str
    author: str
    date: str
    files: tuple[FileChange, ...] = field(default=())

    @property
    def stat(self) -> str:
        """``3 files changed, 10 insertions(+), 2 deletions(-)``, as ``git show --stat`` ends."""
        added = sum(f.added or 0 for f in self.files)
        deleted = sum(f.deleted or 0 for f in self.files)
        count = len(self.files)
        return (f"{count} file{'' if count == 1 else 's'} changed, {added} insertion"
                f"{'' if added == 1 else 's'}(+), {deleted} deletion{'' if deleted == 1 else 's'}(-)")

    def to_json(self) -> dict[str, object]:
        return {"sha": self.sha, "subject": self.subject, "author": self.author,
                "date": self.date, "stat": self.stat,
                "files": [{"path": f.path, "added": f.added, "deleted": f.deleted}
                          for f in self.files]}


@dataclass(frozen=True)
class Repository:
    """A git repository on this machine (``path`` as given, resolved)."""

    path: Path

    @classmethod
    def open(cls, path: Path | str) -> Repository:
        """The repository at ``path``; RepositoryError when there is none."""
        if shutil.which("git") is None:
            raise RepositoryError("git is not installed: a bisect checks commits out with it")
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise RepositoryError(f"--verl-repo {cut(str(path))}: no such directory")
        found = _git(folder.resolve(), "rev-parse", "--git-dir", check=False)
        if found.returncode != 0:
            raise RepositoryError(f"--verl-repo {cut(str(path))} is not a git repository "
                                  f"({_said(found)})")
        return cls(folder.resolve())

    @property
    def work_tree(self) -> Path | None:
        """The checkout's root (None for a bare repository)."""
        found = _git(self.path, "rev-parse", "--show-toplevel", check=False)
        top = found.stdout.strip()
        return Path(top) if found.returncode == 0 and top else None

    def commit(self, rev: str, *, option: str = "revision") -> str:
        """The full sha of the commit ``rev`` names; RepositoryError naming ``option``."""
        if not rev or rev.startswith("-") or "\n" in rev or "\0" in rev:
            raise RepositoryError(f"{option} {short(rev)} is not a revision")
        found = _git(self.path, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}",
                     check=False)
        sha = found.stdout.strip()
        if found.returncode != 0 or not sha:
            raise RepositoryError(f"{option} {short(rev)}: no such commit in {self.path}")
        return sha

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether ``older`` is reachable from ``newer`` (a commit is its own ancestor)."""
        found = _git(self.path, "merge-base", "--is-ancestor", older, newer, check=False)
        if found.returncode not in (0, 1):
            raise RepositoryError(f"git merge-base failed in {self.path}: {_said(found)}")
        return found.returncode == 0

    def first_parent_range(self, good: str, bad: str) -> list[Commit]:
        """The commits of ``good..bad`` along ``bad``'s first parents, oldest first (``bad``
        last): ``git rev-list --first-parent --reverse good..bad``, with each subject."""
        found = _git(self.path, "log", "--first-parent", "--reverse", "--no-color",
                     "--format=%H%x00%s", f"{good}..{bad}", "--")
        commits = []
        for line in found.stdout.splitlines():
            sha, _, subject = line.partition("\0")
            if sha:
                commits.append(Commit(sha, subject))
        return commits

    def facts(self, sha: str) -> CommitFacts:
        """Author, date, subject and the files ``sha`` changed (a merge against its first
        parent: what it brought into the line the nights ran)."""
        found = _git(self.path, "show", "--no-color", "--numstat", "-m", "--first-parent",
                     f"--format={SHOW_FORMAT}", sha, "--")
        lines = found.stdout.splitlines()
        head = lines[0].split("\0") if lines else []
        if len(head) != 4:
            raise RepositoryError(f"git show {sha[:12]}: unexpected output {short(found.stdout)}")
        files = []
        for line in lines[1:]:
            parts = line.split("\t", 2)
            if len(parts) == 3:
                files.append(FileChange(parts[2], _count(parts[0]), _count(parts[1])))
        return CommitFacts(head[0], head[3], head[1], head[2], tuple(files))

    def worktrees(self) -> dict[Path, str]:
        """The repository's worktrees: their path and the commit each has checked out."""
        found = _git(self.path, "worktree", "list", "--porcelain")
        listed: dict[Path, str] = {}
        current: Path | None = None
        for line in found.stdout.splitlines():
            if line.startswith("worktree "):
                current = Path(line[len("worktree "):]).resolve()
                listed[current] = ""
            elif line.startswith("HEAD ") and current is not None:
                listed[current] = line[len("HEAD "):].strip()
        return listed

    def checkout(self, folder: Path, sha: str) -> bool:
        """A detached worktree of ``sha`` at ``folder``: the one already there when it is this
        repository's, at ``sha`` and unchanged (True: reused), else a fresh one (False); a
        worktree a killed bisect left is replaced. LaunchError when git cannot make it."""
        folder = Path(folder).resolve()
        try:
            if self.worktrees().get(folder) == sha and self._clean(folder):
                return True
            self.remove(folder)
            folder.parent.mkdir(parents=True, exist_ok=True)
            _git(self.path, "worktree", "add", "--detach", str(folder), sha)
        except (RepositoryError, OSError) as exc:
            message = exc.message if isinstance(exc, RepositoryError) else str(exc)
            raise LaunchError(f"could not check {sha[:12]} out into {folder}: {message}") from None
        return False

    def remove(self, folder: Path) -> None:
        """Remove the worktree at ``folder`` (whatever is there) and forget worktrees whose
        folder is gone (``git worktree prune``)."""
        folder = Path(folder).resolve()
        if folder in self.worktrees():
            _git(self.path, "worktree", "remove", "--force", str(folder), check=False)
        if folder.exists() or folder.is_symlink():
            if folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder)
            else:
                folder.unlink()
        self.prune()

    def prune(self) -> None:
        _git(self.path, "worktree", "prune", check=False)

    def _clean(self, folder: Path) -> bool:
        found = _git(folder, "status", "--porcelain", "--untracked-files=no", check=False)
        return found.returncode == 0 and not found.stdout.strip()


def _git(folder: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``git -C folder ARGS`` without hooks, pager or prompt; RepositoryError when ``check``
    and git fails (or cannot be started, or hangs)."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"}
    for inherited in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):  # a hook's, not ours
        env.pop(inherited, None)
    argv = ["git", "-c", "core.hooksPath=/dev/null", "-C", str(folder), *args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env,
                              timeout=GIT_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RepositoryError(f"git {args[0]} could not run in {folder}: {exc}") from None
    if check and done.returncode != 0:
        raise RepositoryError(f"git {' '.join(args[:2])} failed in {folder}: {_said(done)}")
    return done


def _said(done: subprocess.CompletedProcess[str]) -> str:
    """git's own last words (its last line of stderr), else its exit status."""
    lines = [line for line in (done.stderr or "").splitlines() if line.strip()]
    return cut(lines[-1].strip(), 300) if lines else f"exit status {done.returncode}"


def _count(text: str) -> int | None:
    return int(text) if text.isdigit() else None


__all__ = ["Commit", "CommitFacts", "FileChange", "Repository", "RepositoryError"]
