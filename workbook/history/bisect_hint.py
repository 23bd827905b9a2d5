"""The ``workbook bisect`` command a red night offers, from what its ledger knows.

A red night whose verl commit differs from the last green night's may have been broken by a
verl commit in between; the command that finds it needs the checkout the night ran
(``verl_checkout.path`` in run.json), the green night's commit and tonight's (the ledger
entries' ``commits``). Where one is unknown (verl installed from a package has no commit; a
scenario never green here has no green night) the command is still shown, with a placeholder,
and a note says what must be supplied. When both nights ran the same commit, verl's history
cannot explain the change, and the note says so instead. One place writes the command, so the
report and the suite's summary say the same.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbook.core.layout import RunDir
from workbook.core.project import params_dir
from workbook.history.ledger import Entry, entry_of, last_green, read_ledger

GOOD, BAD, REPO = "<GOOD>", "<BAD>", "<VERL_REPO>"  # placeholders for what is not known
DIRTY = "-dirty"


@dataclass(frozen=True)
class BisectHint:
    """The command (empty when there is nothing to bisect) and what it still needs, if any."""

    command: str
    note: str = ""

    @property
    def ready(self) -> bool:
        """Every argument known: it can be run as it is."""
        return bool(self.command) and not any(p in self.command for p in (GOOD, BAD, REPO))


def bisect_hint(*, scenario: str, sets: list[str], checkout: str | None, good: str | None,
                bad: str | None) -> BisectHint:
    """The command for a red night that ran ``bad`` from ``checkout``, green last at ``good``
    (commits as recorded: ``-dirty`` when the checkout had uncommitted changes)."""
    good_sha, bad_sha = _sha(good), _sha(bad)
    if good_sha and bad_sha and good_sha == bad_sha:
        return BisectHint("", f"verl's commit {bad_sha[:12]} is the last green night's: "
                          "verl's history does not explain the change (see what changed since)")
    notes = []
    if not good_sha:
        notes.append("the last green night's verl commit is unknown (verl installed from a "
                     "package, or never green in this runs root): a known good commit is needed")
    if not bad_sha or not checkout:
        notes.append("tonight's verl was not a git checkout (verl.path or --verl): name the "
                     "repository and its commit")
    if (bad or "").endswith(DIRTY):
        notes.append("tonight's checkout had uncommitted changes, which no commit holds")
    words = ["workbook", "bisect", shlex.quote(scenario)]
    for item in sets:
        words += ["-s", shlex.quote(item)]
    words += ["--verl-repo", shlex.quote(checkout) if checkout else REPO,
              "--good", good_sha or GOOD, "--bad", bad_sha or BAD]
    return BisectHint(" ".join(words), "; ".join(notes))


def hint_for(run: Mapping[str, Any], this: Entry, green: Entry | None) -> BisectHint:
    """The command for the red night ``this`` (its run.json ``run``), green last at ``green``."""
    checkout = run.get("verl_checkout")
    path = checkout.get("path") if isinstance(checkout, dict) else None
    overrides = run.get("overrides")
    sets = [str(o) for o in overrides if not str(o).startswith("verl.path=")] if isinstance(
        overrides, list) else []
    return bisect_hint(scenario=_scenario(run, this.scenario), sets=sets,
                       checkout=str(path) if path else None,
                       good=green.commits.get("verl") if green else None,
                       bad=this.commits.get("verl"))


def hint_for_run(run_dir: Path, runs_root: Path) -> BisectHint | None:
    """The command a red run offers (None for a run that is not red, or not judged)."""
    this = entry_of(run_dir, runs_root)
    if this is None or not this.red:
        return None
    run = RunDir(Path(run_dir)).json_object("run")
    green = last_green(read_ledger(runs_root, this.scenario, this.hardware), before=this)
    return hint_for(run, this, green)


def _scenario(run: Mapping[str, Any], name: str) -> str:
    """The scenario as the command takes it: its file relative to the params folder when it
    is in there, else the file as recorded, else its name."""
    recorded = run.get("scenario_file")
    if not recorded:
        return name
    path = Path(str(recorded))
    try:
        return path.resolve().relative_to(params_dir().resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)


def _sha(commit: str | None) -> str:
    return (commit or "").removesuffix(DIRTY).strip()


__all__ = ["BAD", "GOOD", "REPO", "BisectHint", "bisect_hint", "hint_for", "hint_for_run"]
