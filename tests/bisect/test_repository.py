"""The git plumbing of a bisect, against real repositories made here with ``git init``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bisect.repos import commit, git, line_of
from workbook.bisect.repository import Repository, RepositoryError
from workbook.errors import LaunchError


def test_the_range_is_oldest_first_and_ends_with_the_bad_commit(tmp_path: Path) -> None:
    repo, shas = line_of(tmp_path, 5)

    found = Repository.open(repo).first_parent_range(shas[1], shas[4])

    assert [c.sha for c in found] == shas[2:5]
    assert [c.subject for c in found] == ["c2 change 2", "c3 change 3", "c4 change 4"]


def test_the_range_follows_the_first_parent_across_a_merge(tmp_path: Path) -> None:
    repo, shas = line_of(tmp_path, 2)
    git(repo, "checkout", "-q", "-b", "side")
    side = [commit(repo, "s0 side work", name="s0", verl=False),
            commit(repo, "s1 side work", name="s1", verl=False)]
    git(repo, "checkout", "-q", "main")
    after = commit(repo, "c2 on main", name="c2")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = git(repo, "rev-parse", "HEAD")

    found = [c.sha for c in Repository.open(repo).first_parent_range(shas[1], merge)]

    assert found == [after, merge]
    assert not set(side) & set(found), "a side branch's commits are never candidates"


def test_a_merge_commits_files_are_what_it_brought_into_the_line(tmp_path: Path) -> None:
    repo, _ = line_of(tmp_path, 1)
    git(repo, "checkout", "-q", "-b", "side")
    commit(repo, "s0 side work", name="s0", lines=3, verl=False)
    git(repo, "checkout", "-q", "main")
    commit(repo, "c1 on main", name="c1")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")

    facts = Repository.open(repo).facts(git(repo, "rev-parse", "HEAD"))

    assert facts.subject == "merge side"
    assert {f.path: (f.added, f.deleted) for f in facts.files} == {"s0.py": (3, 0)}


def test_show_tells_who_when_what_and_the_files_changed(tmp_path: Path) -> None:
    repo, shas = line_of(tmp_path, 2)
    (repo / "blob.bin").write_bytes(b"\0\1\2")
    sha = commit(repo, "c2 binary and text", name="c2", lines=4)

    facts = Repository.open(repo).facts(sha)

    assert (facts.sha, facts.subject, facts.author) == (sha, "c2 binary and text", "Ada Tester")
    assert facts.date.startswith("2026-11-30T12:00:00")
    assert {f.path: (f.added, f.deleted) for f in facts.files} == {
        "blob.bin": (None, None), "c2.py": (4, 0), "verl/__init__.py": (1, 1)}
    assert facts.stat == "3 files changed, 5 insertions(+), 1 deletion(-)"


BAD_INPUT = [
    ("a folder that is not a repository", "plain", None, "is not a git repository"),
    ("no such folder", "missing", None, "no such directory"),
    ("an unknown revision", "repo", "no-such-branch", "no such commit"),
    ("an option in place of a revision", "repo", "--all", "is not a revision"),
]


@pytest.mark.parametrize("case, where, rev, message", BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_what_git_cannot_use_is_bad_input_named(tmp_path: Path, case: str, where: str,
                                                rev: str | None, message: str) -> None:
    repo, _ = line_of(tmp_path, 1)
    (tmp_path / "plain").mkdir()
    folder = {"repo": repo, "plain": tmp_path / "plain", "missing": tmp_path / "gone"}[where]

    with pytest.raises(RepositoryError, match=message) as caught:
        Repository.open(folder).commit(rev or "HEAD", option="--good")

    assert caught.value.exit_code == 2


def test_ancestry_is_asked_of_git(tmp_path: Path) -> None:
    repo, shas = line_of(tmp_path, 3)
    repository = Repository.open(repo)

    assert repository.is_ancestor(shas[0], shas[2])
    assert not repository.is_ancestor(shas[2], shas[0])
    assert repository.commit("main~2") == shas[0]


def test_a_worktree_is_made_reused_and_removed(tmp_path: Path) -> None:
    repo, shas = line_of(tmp_path, 3)
    repository = Repository.open(repo)
    folder = tmp_path / "bisect" / ".worktrees" / shas[1][:12]

    assert repository.checkout(folder, shas[1]) is False
    assert (folder / "verl" / "__init__.py").read_text() == "# c1 change 1\n"
    assert repository.worktrees()[folder.resolve()] == shas[1]
    assert repository.checkout(folder, shas[1]) is True, "an unchanged worktree is reused"

    repository.remove(folder)

    assert not folder.exists()
    assert folder.resolve() not in repository.worktrees()


def test_a_worktree_left_changed_or_at_another_commit_is_replaced(tmp_path: Path) -> None:
    repo, shas = line_of(tmp_path, 3)
    repository = Repository.open(repo)
    folder = tmp_path / "wt"
    repository.checkout(folder, shas[0])
    (folder / "verl" / "__init__.py").write_text("# edited by a killed run\n")

    assert repository.checkout(folder, shas[0]) is False
    assert (folder / "verl" / "__init__.py").read_text() == "# c0 change 0\n"
    assert repository.checkout(folder, shas[2]) is False
    assert (folder / "verl" / "__init__.py").read_text() == "# c2 change 2\n"


def test_a_stray_folder_where_a_worktree_goes_is_replaced(tmp_path: Path) -> None:
    repo, shas = line_of(tmp_path, 2)
    folder = tmp_path / "wt"
    (folder / "leftover").mkdir(parents=True)

    Repository.open(repo).checkout(folder, shas[1])

    assert not (folder / "leftover").exists()
    assert (folder / "c1.py").is_file()


def test_a_worktree_git_cannot_make_is_a_step_that_could_not_run(tmp_path: Path) -> None:
    repo, _ = line_of(tmp_path, 1)

    with pytest.raises(LaunchError, match="could not check"):
        Repository.open(repo).checkout(tmp_path / "wt", "0" * 40)


def test_a_bare_repository_has_no_work_tree(tmp_path: Path) -> None:
    repo, _ = line_of(tmp_path, 1)
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))

    assert Repository.open(bare).work_tree is None
    assert Repository.open(repo).work_tree == repo.resolve()
