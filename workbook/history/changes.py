"""What changed between two nights of a scenario: pure functions of two ledger entries.

A red night's report lists what changed since the last green night (:func:`changes_since`):
package versions, verl and workbook commits, the image, the host, the hardware key, the
baseline (its path or its content), the scenario's algorithmic settings, its tuning (what moves
speed, memory or rounding only: :mod:`workbook.params.settings`) and its ``env:``. The index's
trend charts mark the nights where the environment changed (:func:`environment_changes`): the
same, less the settings (the scenario's own, shown with the run: a night with other settings
is not compared at all) and the workbook's commit (the tool that judges, which moves with every
change to it). Tuning and env stay: they explain a step time that moved.

An entry or baseline recorded before tuning and env were (``None``) has its tuning read back
from its settings' overrides, and neither its env nor its tuning fields compared: "not
recorded" is not "empty".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbook.core.quoting import value_text
from workbook.core.redaction import REDACTED, is_secret_name, redact_text
from workbook.history.ledger import Entry
from workbook.params.settings import TUNING_FIELDS, changed, tuning_in

# a Change's kind, in the order a table lists them
PACKAGE, COMMIT, IMAGE, HOST, HARDWARE, BASELINE, SETTING, TUNING, ENVIRONMENT = (
    "package", "commit", "image", "host", "hardware", "baseline", "setting", "tuning",
    "environment")
KINDS = (PACKAGE, COMMIT, IMAGE, HOST, HARDWARE, BASELINE, SETTING, TUNING, ENVIRONMENT)
WORKBOOK_COMMIT = "workbook commit"
UNKNOWN = "unknown"
ABSENT = "not installed"


@dataclass(frozen=True)
class Change:
    """One fact that differs: its kind, its name, what it was and what it is."""

    kind: str
    name: str
    old: str
    new: str

    @property
    def text(self) -> str:
        return f"{self.name}: {self.old} -> {self.new}"


def changes_since(green: Entry, this: Entry) -> list[Change]:
    """Everything that differs from ``green`` (the last green night) to ``this``, by kind.

    Both sides of a row are redacted (:func:`_guarded`): the rows reach the index, the report
    and the review page."""
    return [_guarded(c) for c in (
        *_mapping(PACKAGE, green.versions, this.versions, absent=ABSENT),
        *_commits(green.commits, this.commits),
        *_one(IMAGE, "image", _image_text(green.image), _image_text(this.image)),
        *_one(HOST, "host", green.host or UNKNOWN, this.host or UNKNOWN),
        *_one(HARDWARE, "hardware key", _key_text(green.hardware_key),
              _key_text(this.hardware_key)),
        *_baseline(green.baseline, this.baseline),
        *_settings(green.settings, this.settings),
        *_tuning(green, this),
        *_environment(green.env, this.env),
    )]


_PLACEHOLDERS = frozenset({"unset", "not set", "set", "none", UNKNOWN, ABSENT})


def _guarded(change: Change) -> Change:
    """``change`` with a secret's values (``env DB_PASSWORD``) redacted on both sides, and
    every other value redacted as text (a token-shaped value wherever it is)."""
    if is_secret_name(change.name.removeprefix("env ")):
        old, new = (v if v in _PLACEHOLDERS else REDACTED for v in (change.old, change.new))
    else:
        old, new = redact_text(change.old), redact_text(change.new)
    if (old, new) == (change.old, change.new):
        return change
    return Change(change.kind, redact_text(change.name), old, new)


def environment_changes(before: Entry, after: Entry) -> list[Change]:
    """What a trend chart marks between two consecutive nights: the environment only."""
    return [c for c in changes_since(before, after)
            if c.kind != SETTING and c.name != WORKBOOK_COMMIT]


def _one(kind: str, name: str, old: str, new: str) -> list[Change]:
    return [] if old == new else [Change(kind, name, old, new)]


def _mapping(kind: str, old: Mapping[str, Any], new: Mapping[str, Any], *, absent: str,
             suffix: str = "", prefix: str = "") -> list[Change]:
    found = []
    for name in sorted(set(old) | set(new), key=str.lower):
        before, after = old.get(name), new.get(name)
        if before != after:
            found.append(Change(kind, f"{prefix}{name}{suffix}", value_text(before, absent),
                                value_text(after, absent)))
    return found


def _commits(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    return _mapping(COMMIT, old, new, absent=UNKNOWN, suffix=" commit")


def _baseline(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """Another baseline file, or the same file with other content (blessed again)."""
    if old.get("path") != new.get("path"):
        return [Change(BASELINE, "baseline", value_text(old.get("path"), "none"),
                       value_text(new.get("path"), "none"))]
    return _one(BASELINE, "baseline content (sha256)", _short(old.get("sha256")),
                _short(new.get("sha256")))


def _settings(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """Each setting that differs; an override added or dropped, by itself."""
    found = []
    for name, before, after in changed(old, new):
        if name.startswith("override ") and isinstance(before, bool):
            found.append(Change(SETTING, name, "set" if before else "not set",
                                "set" if after else "not set"))
        else:
            found.append(Change(SETTING, name, value_text(before, "unset"),
                                value_text(after, "unset")))
    return found


def _tuning(old: Entry, new: Entry) -> list[Change]:
    """Each tuning key that differs (unset: verl's default). Where a side was recorded before
    tuning was, its overrides are read from its settings and the scenario's own tuning fields
    (``rollout_memory_utilization``...) are not compared: that side never said."""
    before = old.tuning if old.tuning is not None else tuning_in(old.settings)
    after = new.tuning if new.tuning is not None else tuning_in(new.settings)
    if old.tuning is None or new.tuning is None:
        before, after = _overrides_only(before), _overrides_only(after)
    return _mapping(TUNING, before, after, absent="unset")


def _overrides_only(tuning: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in tuning.items() if k not in TUNING_FIELDS}


def _environment(old: Mapping[str, str] | None, new: Mapping[str, str] | None) -> list[Change]:
    """Each ``env:`` variable that differs; nothing when a side did not record its env."""
    if old is None or new is None:
        return []
    return _mapping(ENVIRONMENT, old, new, absent="unset", prefix="env ")


def _image_text(image: Mapping[str, Any] | None) -> str:
    """Which image: its name (and digest), or its id; a container's own id says nothing of it."""
    if not image:
        return UNKNOWN
    ref, digest, ident = image.get("ref"), image.get("digest"), image.get("id")
    if ref and digest and str(digest) not in str(ref):
        return f"{ref} ({digest})"
    return str(ref or digest or ident or UNKNOWN)


def _key_text(key: Mapping[str, Any] | None) -> str:
    if not key:
        return UNKNOWN
    count = f" x {key['count']}" if key.get("count") is not None else ""
    return f"{key.get('profile') or UNKNOWN}: {key.get('device') or UNKNOWN}{count}"


def _short(digest: Any) -> str:
    return str(digest)[:12] if digest else UNKNOWN


__all__ = ["BASELINE", "COMMIT", "ENVIRONMENT", "HARDWARE", "HOST", "IMAGE", "KINDS",
           "PACKAGE", "SETTING", "TUNING", "Change", "changes_since",
           "environment_changes"]
