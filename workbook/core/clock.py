"""Times as the run tree writes them: ISO 8601 text read back as aware UTC datetimes.

run.json, the ledger and proposals write ``...+00:00`` (and older files ``...Z``), some without a
zone; every reader compares them, so they are read one way here.
"""

from __future__ import annotations

from datetime import datetime, timezone


def utc_time(text: str) -> datetime | None:
    """``text`` as an aware UTC time (a time without a zone is taken as UTC); None when it is
    empty or not ISO 8601."""
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


__all__ = ["utc_time"]
