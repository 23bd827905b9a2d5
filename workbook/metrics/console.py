"""Reader for verl's console output: ``step:N - key:value - ...`` lines in every real form.

verl prints one line per step (``LocalLogger``: ``"step:{N} - " + " - ".join(f"{k}:{v}")``), but
the text that reaches a log file has been through Ray, tqdm and terminals:

* Ray prefixes ``(TaskRunner pid=1)``, ``(WorkerDict pid=2, ip=10.0.0.1)``, nested ones, ANSI
  colours and ``[repeated 3x across cluster]`` suffixes;
* tqdm bars glued before the step text, by ``\\r`` or directly (``...7.71s/it]step:5 - ``);
* values as ``0.123``, ``-0.000``, ``1e-06``, ``nan``, ``inf``, ``np.float64(0.1)``,
  ``np.int32(2)``;
* terminal hard-wraps that split a row at a fixed width, splitting keys and numbers and
  sometimes dropping the space after `` -`` at the wrap;
* lines cut mid-value, and the same step printed in several lines.

Everything else that merely looks like a step (``training/global_step:6 - `` inside a wrapped
row, ``ValueError: step 0 - ``, ``epoch 0, step 1``, wandb summaries) is not a step line: a step
line starts with ``step:`` right after the prefixes, a ``\\r`` or a tqdm bar's closing ``]``.

The parser is fed one physical line at a time and never holds more than one step row, so a
file of any size streams through it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Iterable, Iterator

from workbook.metrics.lines import gc_paused
from workbook.metrics.model import RunMetrics
from workbook.metrics.names import canonical, plan_for

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# One or more Ray log prefixes: "(TaskRunner pid=1)", "(WorkerDict pid=2, ip=1.2.3.4)", "(pid=3)",
# "(raylet)", "(raylet, ip=1.2.3.4)", "(autoscaler +1m2s)".
RAY_PREFIX_RE = re.compile(
    r"^(?:[ \t]*\((?:[^()\s]+ )?pid=\d+[^()]*\)"
    r"|[ \t]*\((?:raylet|gcs_server|autoscaler|monitor)\b[^()]*\))+ ?"
)
REPEATED_RE = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
STEP_AT_RE = re.compile(r"step:(\d+)(?= - |\s*$)")
NUMPY_RE = re.compile(r"^np\.[a-z]+\d*_?\((.*)\)$")
NUMPY_ANYWHERE_RE = re.compile(r"np\.[a-z]+\d*_?\(([^()]*)\)")  # literal prefix: fast scan
SEP = " - "
# Terminals are at least this wide (and at most that): a line outside cannot be a wrapped row.
MIN_WRAP_WIDTH = 80
MAX_WRAP_WIDTH = 1000
STRADDLE = 400
# A pprinted validation dict spans a few lines; give up on one that never closes.
MAX_DICT_LINES = 400

# re.sub with r"\1" expands the template in Python for every match; a C callable does not.
_GROUP_ONE = itemgetter(1)
_BOOLS = {"True": 1.0, "False": 0.0, "np.True_": 1.0, "np.False_": 0.0}


@dataclass
class StepLine:
    """The metrics one step row carried (canonical names) and where the row started."""

    step: int
    values: dict[str, float]
    originals: dict[str, str]
    line: int


def clean(line: str) -> str:
    """Drop the newline and ANSI colour codes (they have no width on a terminal)."""
    line = line.rstrip("\r\n")
    if "\x1b" in line:
        line = ANSI_RE.sub("", line)
    return line


def strip_prefix(line: str) -> str:
    """The text after Ray's ``(Name pid=N)`` prefixes."""
    match = RAY_PREFIX_RE.match(line)
    return line[match.end() :] if match else line


def ray_prefix(line: str) -> str:
    match = RAY_PREFIX_RE.match(line)
    return line[: match.end()].strip() if match else ""


def parse_value(raw: str) -> float | None:
    """A logged value as a float, or None when it is not a (complete) number."""
    try:
        return float(raw)
    except ValueError:
        pass
    match = NUMPY_RE.match(raw)
    if match:
        inner = match.group(1)
        if inner in _BOOLS:
            return _BOOLS[inner]
        try:
            return float(inner)
        except ValueError:
            return None
    return _BOOLS.get(raw)


def parse_pair(pair: str) -> tuple[str, float] | None:
    """``key:value`` -> (key, value); None for a fragment (cut line) or a non-number."""
    key, sep, raw = pair.rpartition(":")
    key = key.strip()
    if not sep or not key or " " in key or ":" in key:
        return None
    value = parse_value(raw.strip())
    return None if value is None else (key, value)


def parse_row(text: str, line: int) -> StepLine | None:
    """Parse a full (joined) row that starts with ``step:N``.

    The fast path stays in C for a regular row (one colon per pair): turning each `` - `` into
    a colon and splitting on colons gives keys and values alternately; the keys name a cached
    :class:`KeyPlan` and ``float`` maps over the values. Anything unusual (a cut pair, a key
    with a space, a value that is not a float) takes the pair-by-pair path.
    """
    match = STEP_AT_RE.match(text)
    if match is None:
        return None
    step = int(match.group(1))
    row = NUMPY_ANYWHERE_RE.sub(_GROUP_ONE, text) if "np." in text else text
    row = row.rstrip()
    pairs = row.count(SEP)
    if pairs and row.count(":") == pairs + 1:  # "step:N" plus one colon per pair
        tokens = row.replace(SEP, ":").split(":")
        plan = plan_for(tuple(tokens[2::2]))
        if plan.valid:
            try:
                numbers = list(map(float, tokens[3::2]))
            except ValueError:
                pass
            else:
                for position, scale in plan.scales:
                    numbers[position] *= scale
                return StepLine(step, dict(zip(plan.names, numbers)), plan.originals, line)
    return _parse_row_slowly(step, text[match.end() :], line)


def _parse_row_slowly(step: int, body: str, line: int) -> StepLine:
    """Pair by pair, dropping fragments (cut lines) and values that are not numbers."""
    values: dict[str, float] = {}
    originals: dict[str, str] = {}
    for pair in body.split(SEP):
        if not pair:
            continue
        parsed = parse_pair(pair)
        if parsed is None:
            continue
        name, scale = canonical(parsed[0])
        values[name] = parsed[1] * scale if scale != 1.0 else parsed[1]
        if name != parsed[0]:
            originals[name] = parsed[0]
    return StepLine(step, values, originals, line)


def find_row(content: str) -> str | None:
    """The step row inside a line's content (after prefixes), or None if there is none.

    ``step:`` starts a row only at the start of the content, of a ``\\r`` segment, or right
    after a tqdm bar's ``]``; ``training/global_step:6`` or ``ValueError: step:0`` do not.
    """
    if "\r" in content:
        rows = [seg for seg in content.split("\r") if "step:" in seg]
        content = rows[-1] if rows else ""
    pos = content.find("step:")
    while pos >= 0:
        before = content[:pos].rstrip(" \t")
        if (not before or before[-1] == "]") and STEP_AT_RE.match(content, pos):
            row = content[pos:]
            if "repeated" in row:
                row = REPEATED_RE.sub("", row)
            return row.rstrip()
        pos = content.find("step:", pos + 5)
    return None


def _straddle_ok(head: str, joiner: str, tail: str) -> bool:
    """Does the pair that spans the wrap point parse once the two rows are joined?"""
    head, tail = head[-STRADDLE:], tail[:STRADDLE]  # no key:value pair is longer
    joined = head + joiner + tail
    cut = len(head)
    start = joined.rfind(SEP, 0, cut + 1)
    start = 0 if start < 0 else start + len(SEP)
    end = joined.find(SEP, start)
    pair = joined[start:] if end < 0 else joined[start:end]
    if pair.startswith("step:"):
        return pair[5:].isdigit()
    return parse_pair(pair) is not None


def _joiner(head: str, tail: str) -> str:
    """A terminal copy drops the trailing space at a wrap; put it back between `` -`` and a key."""
    if head.endswith(" -") and not tail.startswith(" "):
        return " "
    if tail.startswith("- ") and not head.endswith(" "):
        return " "
    return ""


@dataclass
class _Pending:
    parts: list[str]  # the row's physical lines, joiners included; joined once at the end
    line: int
    last_len: int
    width: int | None = None  # known once a second row joined

    @property
    def last(self) -> str:
        """The end of the row so far (enough to hold the pair that may span the next wrap)."""
        return "".join(self.parts[-4:])


@dataclass
class _DictCapture:
    kind: str
    prefix: str
    lines: list[str] = field(default_factory=list)


class ConsoleParser:
    """Streaming parser: :meth:`feed` one physical line at a time, then :meth:`finish`.

    With ``wraps=True`` (files read after the fact) a row that may continue on the next
    physical line is held until that line arrives; with ``wraps=False`` (live output of a
    process, which no terminal wrapped) each row is returned as soon as its line ends.
    """

    def __init__(self, *, wraps: bool = True) -> None:
        self.wraps = wraps
        self.lineno = 0
        self.validation: dict[str, dict[str, float]] = {}
        self._pending: _Pending | None = None
        self._capture: _DictCapture | None = None

    def feed(self, raw: str) -> list[StepLine]:
        """One physical line (its newline optional); returns the rows it completed."""
        self.lineno += 1
        if (
            self._pending is None
            and self._capture is None
            and "step:" not in raw
            and "alidation metrics" not in raw
        ):
            return []
        line = clean(raw)
        out: list[StepLine] = []
        if self._pending is not None:
            joiner = self._continues(line)
            if joiner is not None:
                return self._extend(joiner, line)
            out.extend(self._flush_pending())
        content = strip_prefix(line)
        if self._capture is not None or ("alidation metrics" in content and "{" in content):
            self._capture_dict(line, content)
        if "step:" not in content:
            return out
        row = find_row(content)
        if row is None:
            return out
        if self.wraps and MIN_WRAP_WIDTH - 1 <= len(line) <= MAX_WRAP_WIDTH:
            self._pending = _Pending([row], self.lineno, len(line))
            return out
        parsed = parse_row(row, self.lineno)
        if parsed is not None:
            out.append(parsed)
        return out

    def finish(self) -> list[StepLine]:
        """End of input: return the row still held for a possible wrap."""
        if self._capture is not None:
            self._close_dict()
        return self._flush_pending()

    # -- hard wraps -----------------------------------------------------------------------
    def _continues(self, line: str) -> str | None:
        """If ``line`` is the next terminal row of the held step row, the text joining them.

        Every row of a wrap but the last is exactly the terminal width, counting a space lost at
        the row's end; the text must continue the row's `` - ``-separated pairs; and the pair
        spanning the wrap must parse once joined.
        """
        pending = self._pending
        assert pending is not None
        if (
            not line
            or len(line) > pending.last_len + 1
            or (line[0] == "(" and RAY_PREFIX_RE.match(line))
        ):
            return None
        last = pending.parts[-1]
        joiner = _joiner(last, line)
        width = pending.last_len + (1 if joiner else 0)
        if pending.width is None:
            if width < MIN_WRAP_WIDTH:
                return None
        elif width != pending.width:
            return None
        if len(line) > width:
            return None
        body = line[1:] if line.startswith(" ") else line
        body = body[2:] if body.startswith("- ") else body
        space = body.find(" ")
        if space == 0 or (space > 0 and not body.startswith(SEP, space) and body[space:] != " -"):
            return None
        # Once two rows established the width, the shape suffices, unless this looks like a row
        # of its own; the first wrap must also show a pair that only parses when joined.
        first_wrap = pending.width is None
        if (first_wrap or line.startswith("step:")) and not _straddle_ok(
            last if SEP in last else pending.last, joiner, line
        ):
            return None
        pending.width = width
        return joiner

    def _extend(self, joiner: str, line: str) -> list[StepLine]:
        pending = self._pending
        assert pending is not None
        if joiner:
            pending.parts.append(joiner)
        pending.parts.append(line)
        pending.last_len = len(line)
        return []

    def _flush_pending(self) -> list[StepLine]:
        pending, self._pending = self._pending, None
        if pending is None:
            return []
        text = "".join(pending.parts)
        if "repeated" in text:
            text = REPEATED_RE.sub("", text)
        parsed = parse_row(text.rstrip(), pending.line)
        return [parsed] if parsed is not None else []

    # -- pprinted validation dicts ------------------------------------------------------------
    def _capture_dict(self, line: str, content: str) -> None:
        capture = self._capture
        if capture is None:
            lowered = content.lower()
            kind = (
                "initial"
                if "initial validation" in lowered
                else "final"
                if "final validation" in lowered
                else "validation"
            )
            capture = self._capture = _DictCapture(kind, ray_prefix(line))
        elif ray_prefix(line) != capture.prefix:
            return  # another process's line interleaved into the dict; not part of it
        capture.lines.append(content)
        text = "\n".join(capture.lines)
        if (
            "{" in text
            and text.count("{") <= text.count("}")
            and text.count("(") <= text.count(")")
        ):
            self._close_dict()
        elif len(capture.lines) >= MAX_DICT_LINES:
            self._capture = None

    def _close_dict(self) -> None:
        capture, self._capture = self._capture, None
        if capture is None:
            return
        values = parse_validation_text("\n".join(capture.lines))
        if values:
            self.validation.setdefault(capture.kind, {}).update(values)


def parse_validation_text(text: str) -> dict[str, float]:
    """The numbers of a pprinted ``"Initial validation metrics: {...}"`` (string or dict form)."""
    text = text.strip()
    if text[:1] in "(\"'":
        try:
            text = str(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            pass
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return {}
    body = NUMPY_ANYWHERE_RE.sub(_GROUP_ONE, text[start : end + 1])
    try:
        data = ast.literal_eval(body)
    except (ValueError, SyntaxError):
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, (int, float)) and isinstance(key, str):
            name, scale = canonical(key)
            out[name] = float(value) * scale
    return out


def iter_steps(lines: Iterable[str], *, wraps: bool = True) -> Iterator[StepLine]:
    """Every step row of a stream of physical lines, in order of appearance."""
    parser = ConsoleParser(wraps=wraps)
    for line in lines:
        yield from parser.feed(line)
    yield from parser.finish()


def read_console(
    lines: Iterable[str], source: str = "run.log", *, wraps: bool = True
) -> RunMetrics:
    """A console log as :class:`RunMetrics`; rows for the same step merge, later values win."""
    run = RunMetrics()
    parser = ConsoleParser(wraps=wraps)

    def put(rows: list[StepLine]) -> None:
        for row in rows:
            if row.values:
                run.put_many(row.step, row.values, f"{source}:{row.line}", row.originals)

    with gc_paused():
        for line in lines:
            rows = parser.feed(line)
            if rows:
                put(rows)
        put(parser.finish())
    for kind, values in parser.validation.items():
        run.validation.setdefault(kind, {}).update(values)
    return run
