"""Reader for verl's console output as it reaches a log file, after Ray, tqdm and terminals.

verl prints one line per step (``rows`` reads one), but the text that reaches a log file has
been through Ray, tqdm and terminals:

* Ray prefixes ``(TaskRunner pid=1)``, ``(WorkerDict pid=2, ip=10.0.0.1)``, nested ones, ANSI
  colours and ``[repeated 3x across cluster]`` suffixes;
* tqdm bars glued before the step text, by ``\\r`` or directly (``...7.71s/it]step:5 - ``);
* terminal hard-wraps that split a row at a fixed width, splitting keys and numbers and
  sometimes dropping the space after `` -`` at the wrap;
* lines cut mid-value, and the same step printed in several lines (later values win);
* validation metrics pprinted as a dict over several lines.

The parser is fed one physical line at a time and never holds more than one step row, so a
file of any size streams through it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import islice
from operator import itemgetter

from workbook.metrics.lines import gc_paused
from workbook.metrics.model import RunMetrics
from workbook.metrics.names import canonical
from workbook.metrics.rows import (
    NUMPY_ANYWHERE_RE,
    SEP,
    StepLine,
    locate_row,
    parse_matched_row,
    parse_pair,
    parse_row,
    unrepeated,
)

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# One or more Ray log prefixes: "(TaskRunner pid=1)", "(WorkerDict pid=2, ip=1.2.3.4)", "(pid=3)",
# "(raylet)", "(raylet, ip=1.2.3.4)", "(autoscaler +1m2s)".
RAY_PREFIX_RE = re.compile(
    r"^(?:[ \t]*\((?:[^()\s]+ )?pid=\d+[^()]*\)"
    r"|[ \t]*\((?:raylet|gcs_server|autoscaler|monitor)\b[^()]*\))+ ?"
)
# The text of a wrapped row's next terminal row: after an optional space and "- ", no space,
# or a first space that starts " - " or the row's final " -".
CONTINUATION_RE = re.compile(r"(?> ?)(?>(?:- )?)(?:[^ ]+(?: - | -\Z)|[^ ]*\Z)")
# Terminals are at least this wide (and at most that): a line outside cannot be a wrapped row.
MIN_WRAP_WIDTH = 80
MAX_WRAP_WIDTH = 1000
STRADDLE = 400
# A pprinted validation dict spans a few lines; give up on one that never closes.
MAX_DICT_LINES = 400
# Lines handed to the parser at once when reading a whole file.
BATCH = 4096

# re.sub with r"\1" expands the template in Python for every match; a C callable does not.
_GROUP_ONE = itemgetter(1)
_PREFIX_STARTS = "( \t"  # RAY_PREFIX_RE matches only a line that starts with one of these


def clean(line: str) -> str:
    """Drop the newline and ANSI colour codes (they have no width on a terminal)."""
    line = line.rstrip("\r\n")
    return _uncoloured(line) if "\x1b" in line else line


def _uncoloured(line: str) -> str:
    """Without ANSI codes; the regex runs only up to the end of the last one (most often the
    end of Ray's coloured prefix), not over the whole row."""
    last = line.rfind("\x1b")
    code = ANSI_RE.match(line, last)
    end = code.end() if code else last + 1
    return ANSI_RE.sub("", line[:end]) + line[end:]


def strip_prefix(line: str) -> str:
    """The text after Ray's ``(Name pid=N)`` prefixes."""
    match = RAY_PREFIX_RE.match(line)
    return line[match.end() :] if match else line


def ray_prefix(line: str) -> str:
    match = RAY_PREFIX_RE.match(line)
    return line[: match.end()].strip() if match else ""


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
        pending = self._pending
        if (  # the test of most lines: inlined, like in feed_lines
            pending is None
            and self._capture is None
            and "step:" not in raw
            and ("{" not in raw or "alidation metrics" not in raw)
        ):
            return []
        line = raw.rstrip("\r\n")
        if "\x1b" in line:
            line = _uncoloured(line)
        out: list[StepLine] = []
        if pending is not None:
            joiner = self._continues(pending, line)
            if joiner is not None:
                if joiner:
                    pending.parts.append(joiner)
                pending.parts.append(line)
                pending.last_len = len(line)
                return out
            out = self._flush_pending()
        prefix = RAY_PREFIX_RE.match(line) if line[:1] in _PREFIX_STARTS else None
        content = line[prefix.end() :] if prefix else line
        if self._capture is not None or ("{" in content and "alidation metrics" in content):
            self._capture_dict(line, content)
        found = locate_row(content) if "step:" in content else None
        if found is None:
            return out
        text, match = found
        start = match.start()
        row = unrepeated(text[start:])
        if self.wraps and MIN_WRAP_WIDTH - 1 <= len(line) <= MAX_WRAP_WIDTH:
            self._pending = _Pending([row], self.lineno, len(line))
        else:  # the step matched in ``text`` is the row's: a cut end cannot reach its digits
            body = match.end() - start
            out.append(parse_matched_row(row, int(match.group(1)), body, self.lineno))
        return out

    def feed_lines(self, lines: Iterable[str]) -> list[StepLine]:
        """:meth:`feed` each line, without a call for the lines that cannot matter (most)."""
        out: list[StepLine] = []
        for raw in lines:
            if (  # neither (part of) a step row nor of a pprinted validation dict
                self._pending is None
                and self._capture is None
                and "step:" not in raw
                and ("{" not in raw or "alidation metrics" not in raw)
            ):
                self.lineno += 1
                continue
            rows = self.feed(raw)
            if rows:
                out += rows
        return out

    def finish(self) -> list[StepLine]:
        """End of input: return the row still held for a possible wrap."""
        if self._capture is not None:
            self._close_dict()
        return self._flush_pending()

    # -- hard wraps -----------------------------------------------------------------------
    def _continues(self, pending: _Pending, line: str) -> str | None:
        """If ``line`` is the next terminal row of the held step row, the text joining them.

        Every row of a wrap but the last is exactly the terminal width, counting a space lost at
        the row's end; the text must continue the row's `` - ``-separated pairs; and the pair
        spanning the wrap must parse once joined.
        """
        size, last_len = len(line), pending.last_len
        if not size or size > last_len + 1:
            return None
        first, last = line[0], pending.parts[-1]
        if first == "(" and RAY_PREFIX_RE.match(line):
            return None
        # A terminal copy drops the trailing space at a wrap: put it back between " -" and a
        # key. (Characters before slices: in Python 3.11 an index costs far less.)
        end = last[-1]
        if (end == "-" and first != " " and last[-2:] == " -") or (
            first == "-" and end != " " and line[:2] == "- "
        ):
            joiner, width = " ", last_len + 1
        else:
            joiner, width = "", last_len
        if pending.width is None:
            if width < MIN_WRAP_WIDTH:
                return None
        elif width != pending.width:
            return None
        if size > width or not CONTINUATION_RE.match(line):
            return None
        # Once two rows established the width, the shape suffices, unless this looks like a row
        # of its own; the first wrap must also show a pair that only parses when joined.
        first_wrap = pending.width is None
        if (first_wrap or (first == "s" and line[:5] == "step:")) and not _straddle_ok(
            last if SEP in last else pending.last, joiner, line
        ):
            return None
        pending.width = width
        return joiner

    def _flush_pending(self) -> list[StepLine]:
        pending, self._pending = self._pending, None
        if pending is None:
            return []
        parsed = parse_row(unrepeated("".join(pending.parts)), pending.line)
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


def read_console(
    lines: Iterable[str], source: str = "run.log", *, wraps: bool = True
) -> RunMetrics:
    """A console log as :class:`RunMetrics`; rows for the same step merge, later values win."""
    run = RunMetrics()
    parser = ConsoleParser(wraps=wraps)

    def put(rows: list[StepLine]) -> None:
        for row in rows:
            if row.names:
                run.put_row(row.step, row.names, row.packed, f"{source}:{row.line}", row.originals)

    stream = iter(lines)
    with gc_paused():
        for batch in iter(lambda: list(islice(stream, BATCH)), []):
            put(parser.feed_lines(batch))
        put(parser.finish())
    for kind, values in parser.validation.items():
        run.validation.setdefault(kind, {}).update(values)
    return run
