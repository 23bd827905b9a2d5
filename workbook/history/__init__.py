"""The history of a scenario: a ledger of its judged nights, and what changed between two.

:mod:`~workbook.history.ledger` keeps one entry per judged night per scenario and hardware (an
append-only file that outlives the run directories it was built from);
:mod:`~workbook.history.judgement` judges a run directory with the nights before it (closing,
``workbook check`` and a proposal's re-judge alike); :mod:`~workbook.history.changes`
says what differs between two entries: a red night's "what changed since the last green one",
and the environment changes the index's trend charts mark; :mod:`~workbook.history.proposal`
picks the nights a baseline refresh is blessed from, :mod:`~workbook.history.proposal_record`
the record each proposal leaves for the index; :mod:`~workbook.history.overview` sums a
scenario's nights up for the index (red since when, improved nights, a stale baseline).
"""

from workbook.history.changes import Change, changes_since, environment_changes
from workbook.history.ledger import Entry, entry_of, last_green, read_all, read_ledger, record

__all__ = ["Change", "Entry", "changes_since", "entry_of", "environment_changes", "last_green",
           "read_all", "read_ledger", "record"]
