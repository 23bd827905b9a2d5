"""``workbook seed``: a runs root that remembers the nights a published site holds.

On verl's runners (ephemeral job pods) nothing of a runs root survives the job, so the last
green night, what changed, trends, onsets, ``confirm_nights`` and stale baselines would start
empty every night. The published site is the nightly's durable record
(:mod:`workbook.report.publish`); seeding a runs root from it (a checkout of its Pages branch, or
any folder publish wrote) before the night runs brings back:

- the ledger, merged (:func:`workbook.history.ledger.merge`): every night, for ever;
- each run's ``run.json``, ``checks.json``, params, ``command.json`` and ``metrics.jsonl`` (its
  log only when it has no metrics file) and the retention's note: what the across-nights
  features and the index read from run directories. Reports and logs stay on the site;
- each suite night's ``suite.json`` (merged, so a later cron slot resumes the night an earlier
  one began) and the baseline proposals' review pages and records.

Nothing the runs root already has is overwritten, and every file goes through publish's
redacting, link-refusing copy. The runs taken are listed in
:data:`~workbook.core.layout.SEEDED_FILE`, so publishing the runs root leaves them out: the site
has them. Seeding again adds nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workbook.core.clock import now_iso
from workbook.core.layout import (
    PRUNED_FILE,
    RUN_FILES,
    SEEDED_FILE,
    is_run_dir,
    write_json,
)
from workbook.errors import InputError
from workbook.history.ledger import merge, read_all
from workbook.report.publish import Publication, copy_tree, places, seeded_runs

SEEDED = ("run", "checks", "params", "command_json", "metrics")  # a run's files a seed takes


@dataclass
class Seeding:
    """What a seed took: runs, ledger entries, and what it refused and why."""

    runs: list[str] = field(default_factory=list)  # relative to the runs root
    entries: int = 0
    skipped: list[str] = field(default_factory=list)


def seed(site: Path, runs_root: Path) -> Seeding:
    """Seed ``runs_root`` from the published ``site`` (see the module docstring).

    Raises:
        InputError: ``site`` is not a folder, or one of the two holds the other.
    """
    site, runs_root = Path(site), Path(runs_root)
    if not site.is_dir():
        raise InputError(f"{site}: not a folder (a checkout of the site's branch, or a folder "
                         "`workbook publish` wrote)")
    source, root = places(site, runs_root)
    root.mkdir(parents=True, exist_ok=True)
    done = Seeding()
    # the ledger before the runs: a runs root without one builds it from its own runs alone
    done.entries = merge(read_all(site, store=False), root)

    def chosen(rel: Path, dir_fd: int) -> Sequence[str] | None:
        if is_run_dir(root / rel):
            return None  # the runs root's own run (or one seeded before) stays as it is
        done.runs.append(rel.as_posix())
        names = [RUN_FILES[key] for key in SEEDED] + [PRUNED_FILE]
        if not os.path.lexists(source / rel / RUN_FILES["metrics"]):
            names.append(RUN_FILES["log"])  # its only metrics
        return names

    copied = Publication(root / SEEDED_FILE)
    copy_tree(site, root, chosen, copied)
    done.skipped = copied.skipped
    if done.runs:
        write_json(root / SEEDED_FILE, {"site": str(source), "seeded_at": now_iso(),
                                        "runs": sorted(seeded_runs(root) | set(done.runs))})
    return done


__all__ = ["SEEDED", "Seeding", "seed"]
