"""Times as the run tree writes, reads and shows them: one ISO 8601 form written (UTC, to the
second, ``+00:00``), read back as aware UTC datetimes, shown to the minute.

Files written before the one form carry ``...Z`` (bless, imported logs, committed fixtures) or no
zone at all; every reader compares times, so they are all read here.
"""

from __future__ import annotations

from datetime import datetime, timezone


def now_iso() -> str:
    """Now, as every file of the workbook records a time."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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


def date_text(iso: str) -> str:
    """A recorded time as a page shows it, in UTC to the minute; the text as it is when it is
    not a time."""
    when = utc_time(iso)
    return when.strftime("%Y-%m-%d %H:%M UTC") if when else iso or "unknown"


__all__ = ["date_text", "now_iso", "utc_time"]
