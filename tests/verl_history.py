"""A verl repository with a short history, made from the installed verl's own sources.

The bisect and the across-nights tests need what a nightly maintainer has: a verl checkout whose
history holds the commit that broke the night. verl is pure Python, so the installed package is
the source tree of its release; it becomes the first commit of a local repository, and a few
commits follow, as a week of upstream work would bring them:

    c1  a comment                      (harmless; the last green night ran it)
    c2  the version bumped             (verl 0.9.1 -> 0.9.2.dev0: a changed package version)
    c3  a comment                      (harmless)
    c4  a comment                      (harmless)
    c5  a comment                      (harmless)
    c6  the loss-scaling bug           (the policy loss doubled when one rank trains)
    c7  a comment                      (harmless; tonight's commit)

A bisect from c1 to c7 tests c4 first (the middle of c2..c6), then c5 when c4 is skipped (the
later of the two nearest the middle), then c6: two runs and a skip name c6.

The bug is one plausible line in ``agg_loss``'s ``seq-mean-token-mean`` branch (the GSPO
scenarios' aggregation): the sequence mean scaled by ``dp_size + 1`` instead of ``dp_size``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

BUMPED = "0.9.2.dev0"
LOSS_FILE = "verl/trainer/ppo/core_algos.py"
BRANCH = 'elif loss_agg_mode == "seq-mean-token-mean":'
GOOD_LINE = "loss = verl_F.masked_sum(seq_losses, seq_mask) / global_batch_size * dp_size  # seq-mean"
BAD_LINE = ("loss = verl_F.masked_sum(seq_losses, seq_mask) / global_batch_size * (dp_size + 1)"
            "  # seq-mean over every rank")
GIT_ENV = {"GIT_AUTHOR_NAME": "verl dev", "GIT_AUTHOR_EMAIL": "dev@verl.invalid",
           "GIT_COMMITTER_NAME": "verl dev", "GIT_COMMITTER_EMAIL": "dev@verl.invalid"}


@dataclass(frozen=True)
class VerlHistory:
    """The repository and its commits, oldest first (``commits[0]`` is the release)."""

    root: Path
    commits: tuple[str, ...]
    subjects: tuple[str, ...]

    @property
    def good(self) -> str:
        return self.commits[0]

    @property
    def bad(self) -> str:
        return self.commits[-1]

    @property
    def culprit(self) -> str:
        return self.commits[6]


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True, env={**os.environ, **GIT_ENV})
    return done.stdout.strip()


def _commit(root: Path, subject: str) -> str:
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", subject)
    return _git(root, "rev-parse", "HEAD")


def _append_comment(path: Path, text: str) -> None:
    path.write_text(path.read_text() + f"\n# {text}\n")


def make_verl_history(root: Path) -> VerlHistory:
    """The repository at ``root`` (its working tree ends at the last commit)."""
    spec = find_spec("verl")
    assert spec is not None and spec.origin, "verl is not installed"
    package = Path(spec.origin).parent
    root.mkdir(parents=True)
    shutil.copytree(package, root / "verl",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "README.md").write_text("verl, as released, then a week of commits\n")
    _git(root, "init", "-q", "-b", "main")
    steps = [
        ("verl 0.9.1 as released", None),
        ("docs: say which aggregation GSPO recommends",
         lambda: _append_comment(root / LOSS_FILE, "GSPO: seq-mean-token-mean is recommended")),
        (f"Bump version to {BUMPED}",
         lambda: (root / "verl" / "version" / "version").write_text(BUMPED + "\n")),
        ("trainer: note where checkpoints go",
         lambda: _append_comment(root / "verl" / "trainer" / "main_ppo.py",
                                 "checkpoints go to trainer.default_local_dir")),
        ("workers: name the rollout skip's dump folder",
         lambda: _append_comment(root / "verl" / "workers" / "__init__.py",
                                 "skip.rollout_tq dumps under its dump_dir")),
        ("utils: a word on the file logger",
         lambda: _append_comment(root / "verl" / "utils" / "__init__.py",
                                 "the file logger writes one JSON line per step")),
        ("core_algos: scale the sequence mean by every data-parallel rank", _plant_bug(root)),
        ("README: the CPU smoke suite",
         lambda: _append_comment(root / "verl" / "trainer" / "__init__.py", "smoke-tested on CPU")),
    ]
    commits, subjects = [], []
    for subject, change in steps:
        if change is not None:
            change()
        commits.append(_commit(root, subject))
        subjects.append(subject)
    return VerlHistory(root, tuple(commits), tuple(subjects))


def _plant_bug(root: Path):  # type: ignore[no-untyped-def]
    def change() -> None:
        path = root / LOSS_FILE
        head, branch, tail = path.read_text().partition(BRANCH)
        assert branch and GOOD_LINE in tail, "verl's agg_loss changed: update the planted bug"
        path.write_text(head + branch + tail.replace(GOOD_LINE, BAD_LINE, 1))
    return change


def checkout_at(history: VerlHistory, commit: str, where: Path) -> Path:
    """A worktree of ``history`` at ``commit`` (a night that ran that commit)."""
    _git(history.root, "worktree", "add", "-q", "--detach", str(where), commit)
    return where
