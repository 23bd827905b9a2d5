"""Log lines that name a failure, classified by what they say.

A failed verl run leaves its cause somewhere in Ray's noise: a worker's traceback, a Ray wrapper
around it (``RayTaskError(OutOfMemoryError)``), Hydra's short config message, an Ascend error code
(:mod:`~workbook.metrics.failures` says what each looks like). :class:`SignalScanner` follows
tracebacks per Ray worker prefix, so an exception line is told from a frame, a chained cause from
a new traceback, and config code from library code; which signal is the root cause is decided in
:mod:`~workbook.metrics.diagnosis`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbook.metrics.console import clean, ray_prefix, strip_prefix
from workbook.metrics.failures import (
    CAUSES,
    CONFIG_FRAME_RE,
    EXCEPTION_RE,
    IMPORT_RE,
    KEYWORDS,
    PATTERNS,
    TASK_RE,
    WRAPPER_RE,
    category_of,
)

MAX_LINE = 400
MAX_SIGNALS = 5000


@dataclass
class Signal:
    """One log line that names a failure."""

    line: int
    category: str
    text: str
    content: str
    step_before: int | None
    specific: bool
    task: str | None = None
    cause: str | None = None  # an infrastructure failure's cause (a key of failures.CAUSES)

    @property
    def kind(self) -> str:
        """What it ranks as (failures.RANKS): its infrastructure cause, else its category."""
        return self.cause or self.category


@dataclass
class SignalScanner:
    """Streaming: :meth:`feed` each physical line that is not a metrics row."""

    signals: list[Signal] = field(default_factory=list)
    _trace: dict[str, int] = field(default_factory=dict)  # prefix -> 0 none, 1 in, 2 after
    _config_frames: set[str] = field(default_factory=set)  # tracebacks through config code
    _chained: set[str] = field(default_factory=set)  # between "The above exception..." and its
    _task: dict[str, str] = field(default_factory=dict)
    _wrapped: set[str] = field(default_factory=set)  # types seen inside RayTaskError(...)

    def feed(self, lineno: int, raw: str, step_before: int | None) -> None:
        if not self._trace and not any(word in raw for word in KEYWORDS):
            return
        line = clean(raw)
        prefix = ray_prefix(line)
        content = strip_prefix(line)
        task = TASK_RE.search(content)
        if task and "RayTaskError" in content:
            self._task[prefix] = task.group(1)
        wrapped_root = self._wrapped_root(content)
        exception = self._track_traceback(prefix, content) or wrapped_root
        kind = self._classify(content, exception, prefix in self._config_frames)
        if kind is not None and len(self.signals) < MAX_SIGNALS:
            self.signals.append(Signal(
                lineno, category_of(kind), line.strip()[:MAX_LINE], content.strip()[:MAX_LINE],
                step_before, not WRAPPER_RE.match(content), self._task.get(prefix),
                kind if kind in CAUSES else None))

    def _wrapped_root(self, content: str) -> bool:
        """The ``AssertionError: ...`` line a ``RayTaskError(AssertionError)`` wraps is the root
        cause, even where Ray prints it without a ``Traceback`` header of its own."""
        match = EXCEPTION_RE.match(content)
        if match is None:
            return False
        if match.group("inner") and WRAPPER_RE.match(content):
            self._wrapped.add(match.group("inner").rsplit(".", 1)[-1])
            return False
        return match.group("type").rsplit(".", 1)[-1] in self._wrapped

    def _track_traceback(self, prefix: str, content: str) -> bool:
        """Follow Python (and Ray's chained) tracebacks; True for an exception line."""
        state = self._trace.get(prefix, 0)
        if content.startswith("Traceback (most recent call last)"):
            if prefix not in self._chained:  # a chained traceback keeps the context
                self._config_frames.discard(prefix)
            self._chained.discard(prefix)
            self._trace[prefix] = 1
            return False
        if content.startswith(("The above exception", "During handling of the above")):
            self._chained.add(prefix)
            return False
        if state == 0:
            return bool(EXCEPTION_RE.match(content)) and "." in content.split(":", 1)[0]
        if content[:1] in (" ", "\t") or not content:
            if state == 2 and not content.lstrip().startswith('File "'):
                self._trace.pop(prefix, None)
                return False
            if CONFIG_FRAME_RE.search(content):
                self._config_frames.add(prefix)
            self._trace[prefix] = 1
            return False
        if EXCEPTION_RE.match(content):
            self._trace[prefix] = 2  # Ray prints further frames under its wrapper line
            return True
        self._trace.pop(prefix, None)
        return False

    @staticmethod
    def _classify(content: str, exception: bool, in_config_code: bool) -> str | None:
        """The kind of failure a line names (a category, or an infrastructure cause)."""
        for kind, pattern in PATTERNS:
            if pattern.search(content):
                return kind
        if exception:
            if IMPORT_RE.search(content):
                return "import_error"
            return "config_error" if in_config_code else "python_exception"
        return None
