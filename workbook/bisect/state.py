"""``bisect.json``: what a bisect was asked, what it learnt, and each step it ran.

The file is the bisect's memory: running the same command again continues from it, so it is
read strictly (a field that cannot be read is named, exit 2: a guess would test the wrong
commits) and written after every change, atomically and through the redaction guard (the
batch's :class:`~workbook.batch.records.BatchFile`). Its fields:

    scenario, params, sets, repo, good, bad, bad_run
                 what was asked (full shas); a later invocation must ask the same
    bad_night    the verdict that counts as bad: ``status`` (regressed or failed), ``category``
                 (a failed night's diagnosis), ``source`` (``--bad-run``, ``ledger`` or ``step``),
                 ``run_dir`` and ``reason``; null until known
    candidates   ``good..bad`` along the first-parent line, oldest first: ``sha``, ``subject``,
                 ``state`` (its outcome, ``untested``, ``not needed``; written for the page)
    result       ``status`` (running, found, ambiguous, green, stopped, failed), ``message``,
                 ``first_bad`` (sha, subject, author, date, stat, files) and ``one_of``
    steps        one record per step, the batch's record (:mod:`workbook.batch.records`: its
                 verdict as ``status``, ``reason``, ``run_dir``, ``runs``, ``report``, ...) plus
                 ``step`` (its number), ``sha``, ``subject``, ``outcome`` (good, bad, skip, or
                 null: stopped, tested again), ``why``, ``started``, ``ended``
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.bisect.decision import BadVerdict, CommitOutcome
from workbook.bisect.repository import Commit
from workbook.core.quoting import short
from workbook.errors import InputError

FORMAT = 1
RESULTS = ("running", "found", "ambiguous", "green", "stopped", "failed")
SOURCES = ("--bad-run", "ledger", "step")
STEP_FIELDS = ("step", "sha", "subject", "outcome", "why", "started", "ended")


class StateError(InputError):
    """A bisect.json that cannot be read (exit 2): named with the field at fault."""


@dataclass
class BadNight:
    """The verdict that counts as bad, and where it was learnt."""

    status: str
    category: str | None
    source: str
    run_dir: str | None
    reason: str = ""

    @property
    def verdict(self) -> BadVerdict:
        return BadVerdict(self.status, self.category)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "category": self.category, "source": self.source,
                "run_dir": self.run_dir, "reason": self.reason}


@dataclass
class Result:
    """How the bisect ended; ``running`` while it goes on, so a page written after each step,
    or left by a killed bisect, never claims an end that did not come."""

    status: str = "running"
    message: str = ""
    first_bad: dict[str, Any] | None = None
    one_of: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, "first_bad": self.first_bad,
                "one_of": list(self.one_of)}


@dataclass
class BisectState:
    """Everything in bisect.json but the steps' own records (those are the batch's)."""

    asked: dict[str, Any]  # scenario, params, sets, repo, good, bad, bad_run
    candidates: list[Commit]
    bad_night: BadNight | None = None
    result: Result = field(default_factory=Result)
    steps: list[dict[str, Any]] = field(default_factory=list)  # as read; the batch keeps them

    def header(self, states: list[str]) -> dict[str, Any]:
        """The file's fields but the steps; ``states``: each candidate's, for the page."""
        return {"format": FORMAT, **self.asked,
                "bad_night": self.bad_night.to_json() if self.bad_night else None,
                "candidates": [{"sha": c.sha, "subject": c.subject, "state": state}
                               for c, state in zip(self.candidates, states, strict=True)],
                "result": self.result.to_json()}


def read_state(path: Path) -> BisectState | None:
    """The state in ``path``, None when there is no file; StateError naming the field that
    cannot be read."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise StateError(f"{path}: cannot be read: {exc}") from None
    except ValueError as exc:
        raise StateError(f"{path}: not JSON ({exc}); move it away or pass --restart") from None
    try:
        return parse_state(data)
    except StateError as exc:
        raise StateError(f"{path}: {exc.message}; move it away or pass --restart") from None


def parse_state(data: Any) -> BisectState:
    """A bisect.json document as a state (StateError naming the first field at fault)."""
    if not isinstance(data, dict):
        raise StateError(f"expected a JSON object, got {short(data)}")
    if data.get("format") != FORMAT:
        raise StateError(f"format: {short(data.get('format'))} is not {FORMAT}")
    asked: dict[str, Any] = {name: _text(data, name)
                             for name in ("scenario", "params", "repo", "good", "bad")}
    asked["sets"] = _texts(data.get("sets"), "sets")
    bad_run = data.get("bad_run")
    if bad_run is not None and not isinstance(bad_run, str):
        raise StateError(f"bad_run: expected a path or null, got {short(bad_run)}")
    asked["bad_run"] = bad_run
    candidates = _candidates(data.get("candidates"))
    if not candidates or candidates[-1].sha != asked["bad"]:
        raise StateError("candidates: the range must end with the bad commit "
                         f"{short(asked['bad'])}")
    return BisectState(asked, candidates, _bad_night(data.get("bad_night")),
                       _result(data.get("result")), _steps(data.get("steps"), candidates))


def _text(data: dict[str, Any], name: str, where: str = "") -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise StateError(f"{where}{name}: expected a non-empty string, got {short(value)}")
    return value


def _texts(value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StateError(f"{name}: expected a list of strings, got {short(value)}")
    return list(value)


def _candidates(value: Any) -> list[Commit]:
    if not isinstance(value, list):
        raise StateError(f"candidates: expected a list, got {short(value)}")
    found = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise StateError(f"candidates[{i}]: expected an object, got {short(item)}")
        subject = item.get("subject")
        if not isinstance(subject, str):
            raise StateError(f"candidates[{i}].subject: expected a string, got {short(subject)}")
        found.append(Commit(_text(item, "sha", f"candidates[{i}]."), subject))
    return found


def _bad_night(value: Any) -> BadNight | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise StateError(f"bad_night: expected an object or null, got {short(value)}")
    status = value.get("status")
    if status not in ("regressed", "failed"):
        raise StateError(f"bad_night.status: {short(status)} is not regressed or failed")
    source = value.get("source")
    if source not in SOURCES:
        raise StateError(f"bad_night.source: {short(source)} is not one of {', '.join(SOURCES)}")
    category, run_dir = value.get("category"), value.get("run_dir")
    for name, given in (("category", category), ("run_dir", run_dir)):
        if given is not None and not isinstance(given, str):
            raise StateError(f"bad_night.{name}: expected a string or null, got {short(given)}")
    return BadNight(str(status), category, str(source), run_dir, str(value.get("reason") or ""))


def _result(value: Any) -> Result:
    if value is None:
        return Result()
    if not isinstance(value, dict):
        raise StateError(f"result: expected an object, got {short(value)}")
    status = value.get("status")
    if status not in RESULTS:
        raise StateError(f"result.status: {short(status)} is not one of {', '.join(RESULTS)}")
    first_bad = value.get("first_bad")
    if first_bad is not None and not isinstance(first_bad, dict):
        raise StateError(f"result.first_bad: expected an object or null, got {short(first_bad)}")
    return Result(str(status), str(value.get("message") or ""), first_bad,
                  _texts(value.get("one_of") or [], "result.one_of"))


def _steps(value: Any, candidates: list[Commit]) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise StateError(f"steps: expected a list, got {short(value)}")
    known = {c.sha for c in candidates}
    steps = []
    for i, step in enumerate(value):
        where = f"steps[{i}]."
        if not isinstance(step, dict):
            raise StateError(f"steps[{i}]: expected an object, got {short(step)}")
        _text(step, "key", where)
        if _text(step, "sha", where) not in known:
            raise StateError(f"{where}sha: {short(step['sha'])} is not a candidate of the range")
        if step.get("step") != i + 1:
            raise StateError(f"{where}step: expected {i + 1}, got {short(step.get('step'))}")
        outcome = step.get("outcome")
        if outcome is not None and outcome not in tuple(o.value for o in CommitOutcome):
            raise StateError(f"{where}outcome: {short(outcome)} is not good, bad, skip or null")
        if not isinstance(step.get("status"), str):
            raise StateError(f"{where}status: expected a verdict word, got "
                             f"{short(step.get('status'))}")
        steps.append(step)
    return steps


__all__ = ["FORMAT", "STEP_FIELDS", "BadNight", "BisectState", "Result", "StateError",
           "parse_state", "read_state"]
