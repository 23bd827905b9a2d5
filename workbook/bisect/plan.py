"""A ``workbook bisect`` checked whole before anything starts: what the user asked, made sure of.

The repository and both revisions must exist, ``--good`` must come before ``--bad`` on the
first-parent line with a commit between them, the scenario must validate (once, against the
repository's own checkout, as ``workbook validate --verl REPO`` would) and the bad night must be
known or knowable: from ``--bad-run``, else the ledger (:mod:`workbook.bisect.bad_night`), else
the bad commit runs first. Each refusal is bad input (exit 2) before a worktree or a run exists;
:mod:`workbook.bisect.search` then runs the plan.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbook.batch.engine import Item, validate_items
from workbook.bisect import bad_night
from workbook.bisect.repository import Commit, Repository
from workbook.bisect.state import BadNight
from workbook.core.layout import bisect_dir
from workbook.errors import InputError
from workbook.scenario import load_scenario


@dataclass(frozen=True)
class BisectPlan:
    """A bisect checked whole before anything starts (:func:`plan_bisect`)."""

    params: Path
    sets: list[str]  # the user's overrides (and the step timeout); verl.path is each step's
    scenario: str
    repo: Repository
    good: str
    bad: str
    candidates: list[Commit]
    directory: Path
    bad_run: Path | None = None
    bad_night: BadNight | None = None  # from --bad-run, else the ledger; None: BAD runs first

    @property
    def asked(self) -> dict[str, Any]:
        """What a later invocation must ask the same to continue this bisect."""
        return {"scenario": self.scenario, "params": str(self.params), "sets": list(self.sets),
                "repo": str(self.repo.path), "good": self.good, "bad": self.bad,
                "bad_run": str(self.bad_run) if self.bad_run else None}


def plan_bisect(params: Path, sets: Sequence[str], repo: Path, good: str, bad: str, *,
                runs_root: Path, directory: Path | None = None, bad_run: Path | None = None,
                timeout_s: float | None = None) -> BisectPlan:
    """The repository, the revisions, the range, the scenario and the bad night, checked before
    anything starts (InputError or ParamsError naming what is wrong: exit 2)."""
    repository = Repository.open(repo)
    good_sha = repository.commit(good, option="--good")
    bad_sha = repository.commit(bad, option="--bad")
    if good_sha == bad_sha:
        raise InputError(f"--good {good} and --bad {bad} are the same commit {good_sha[:12]}: "
                         "no commit lies between them")
    if not repository.is_ancestor(good_sha, bad_sha):
        raise InputError(f"--good {good} ({good_sha[:12]}) is not an ancestor of --bad {bad} "
                         f"({bad_sha[:12]}): the green night's commit must come before the red one's")
    candidates = repository.first_parent_range(good_sha, bad_sha)
    if not candidates or candidates[-1].sha != bad_sha:
        raise InputError(f"{good_sha[:12]}..{bad_sha[:12]} holds no commit on the first-parent "
                         "line of --bad: nothing to bisect")
    if timeout_s is not None and not timeout_s > 0:
        raise InputError(f"--timeout-per-step {timeout_s:g}: expected a positive number of seconds")
    sets = list(sets) + ([f"timeout_s={timeout_s:g}"] if timeout_s else [])
    # validated once, against the repository's own checkout (as `workbook validate --verl REPO`)
    checkout = repository.work_tree
    checked = sets + ([f"verl.path={checkout}"] if checkout else [])
    validate_items([Item("bisect", params, checked, label=str(params), title=str(params))],
                   source="bisect")
    scenario = load_scenario(params, checked, check_files=False)
    night = bad_night.night_of_run(bad_run) if bad_run else bad_night.night_from_ledger(
        runs_root, scenario.name, scenario.profile, bad_sha)
    if bad_run and not bad_night.verl_commit_of(bad_run).startswith(bad_sha):
        print(f"bisect: warning: --bad-run ran verl "
              f"{bad_night.verl_commit_of(bad_run)[:12] or 'of no known commit'}, not --bad "
              f"{bad_sha[:12]}", file=sys.stderr)
    folder = Path(directory or bisect_dir(runs_root, scenario.name, good_sha, bad_sha))
    return BisectPlan(Path(params).resolve(), sets, scenario.name, repository, good_sha, bad_sha,
                      candidates, folder.expanduser().resolve(),
                      Path(bad_run).expanduser().resolve() if bad_run else None, night)


__all__ = ["BisectPlan", "plan_bisect"]
