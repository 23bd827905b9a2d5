"""A run directory as a report reads it: every file optional, every secret already redacted.

Reports must render for any run, including one that crashed before writing half its files, so
each reader here tolerates a missing or broken file and falls back to what is there. The
verdict comes from ``checks.json`` when the run was judged, else from ``run.json``, else from the
run's status. Everything a page shows passes through :mod:`workbook.core.redaction` here, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.core.layout import RUN_FILES, file_signature, read_json_object
from workbook.core.redaction import LineRedactor, form_of, redact_document, redact_mapping
from workbook.core.status import FAILED_STATUSES, VERDICTS, RunStatus, Shown, Verdict
from workbook.core.values import finite
from workbook.errors import MetricsError
from workbook.metrics import progress
from workbook.metrics.console import ANSI_RE
from workbook.metrics.model import RunMetrics


@dataclass
class RunView:
    """What a report shows of one run directory (redacted)."""

    path: Path
    run: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    metrics: RunMetrics = field(default_factory=RunMetrics)

    @property
    def run_id(self) -> str:
        return str(self.run.get("run_id") or self.path.name)

    @property
    def scenario(self) -> str:
        return str(self.run.get("scenario") or self.path.parent.name)

    @property
    def status(self) -> str:
        return str(self.run.get("status") or (Shown.UNKNOWN if not self.run else Shown.RUNNING))

    @property
    def verdict(self) -> tuple[str, str]:
        """``(passed|regressed|failed|stopped|running|unjudged, one-line reason)``."""
        for source in (self.checks.get("verdict"), self.run.get("verdict")):
            status, reason = _verdict_of(source, self.checks.get("reason", ""))
            if status in VERDICTS:
                return status, reason
        diagnosis = self.run.get("diagnosis") or {}
        if self.status == RunStatus.STOPPED:
            return Verdict.STOPPED.value, diagnosis.get("summary") or "stopped by the user"
        if self.status in FAILED_STATUSES:
            why = diagnosis.get("summary") or self.run.get("message") or f"run {self.status}"
            return Verdict.FAILED.value, f"run {self.status}: {why}" if self.status not in why else why
        if self.status == RunStatus.RUNNING:
            return Shown.RUNNING.value, "the run has not finished"
        return Shown.UNJUDGED.value, f"run {self.status}; no checks were evaluated"

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [r for r in self.checks.get("rows", []) if isinstance(r, dict)]

    @property
    def steps_reached(self) -> int | None:
        last = self.metrics.last_step
        if last is None:
            last = (self.run.get("diagnosis") or {}).get("last_step")
        return last

    @property
    def started(self) -> str:
        return str(self.run.get("started_at") or "")

    def text(self, key: str) -> str:
        """A text file of the run (redacted by its form: YAML inside its structure), '' when
        missing."""
        path = self.path / RUN_FILES[key]
        try:
            return redact_document(path.read_text(encoding="utf-8", errors="replace"), form_of(path))
        except OSError:
            return ""

    def command(self) -> dict[str, Any]:
        return redact_mapping(read_json_object(self.path / RUN_FILES["command_json"]))

    def log_tail(self, lines: int = 50) -> list[str]:
        """The last lines of ``run.log`` without colour codes (redacted), read from the end."""
        path = self.path / RUN_FILES["log"]
        try:
            with path.open("rb") as handle:
                handle.seek(0, 2)
                size = handle.tell()
                handle.seek(max(0, size - 256 * 1024))
                data = handle.read().decode("utf-8", errors="replace")
        except OSError:
            return []
        text = ANSI_RE.sub("", data).replace("\r\n", "\n")
        redactor = LineRedactor()  # over the whole window: a key block may start before the tail
        tail = [redactor.line(line.rsplit("\r", 1)[-1]) for line in text.split("\n")]
        while tail and not tail[-1].strip():
            tail.pop()
        return tail[-lines:]


def load_view(run_dir: Path | str, *, quick: bool = False) -> RunView:
    """Read a run directory; a missing or unreadable file is simply absent from the view.

    The last few views are kept while their files are unchanged: a report's sections each ask
    for the same run, and a 2,000-step run's metrics should be parsed once, not six times.
    ``quick`` reads only ``metrics.jsonl`` when there is one (the index's headline numbers do
    not need the console log, which can be hundreds of megabytes).
    """
    path = Path(run_dir).resolve()
    signature = (quick, *_signature(path))
    cached = _CACHE.get(path)
    if cached is not None and cached[0] == signature:
        return cached[1]
    view = RunView(
        path=path,
        run=redact_mapping(read_json_object(path / RUN_FILES["run"])),
        checks=redact_mapping(read_json_object(path / RUN_FILES["checks"])),
    )
    view.metrics = read_metrics(path, quick=quick)
    if len(_CACHE) >= 8:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[path] = (signature, view)
    return view


_CACHE: dict[Path, tuple[tuple[object, ...], RunView]] = {}


def _signature(path: Path) -> tuple[object, ...]:
    return tuple(file_signature(path / RUN_FILES[key])
                 for key in ("run", "checks", "metrics", "log"))


def read_metrics(path: Path, *, quick: bool = False) -> RunMetrics:
    """The run's metrics through the shared loader; none when the run logged none."""
    from workbook.metrics.loading import read_metrics_file
    from workbook.metrics.reading import reading_of

    jsonl = path / RUN_FILES["metrics"]
    if not jsonl.exists() and not (path / RUN_FILES["log"]).exists():
        return RunMetrics()
    try:
        if quick and jsonl.is_file() and jsonl.stat().st_size:
            return read_metrics_file(jsonl)
        return reading_of(path).metrics  # the one reading the checks used too
    except MetricsError:
        return RunMetrics()


def duration_text(seconds: Any) -> str:
    value = finite(seconds)
    return "unknown" if value is None else progress.duration_text(value)


def _verdict_of(source: Any, reason: str) -> tuple[str, str]:
    if isinstance(source, dict):
        return str(source.get("status", "")), str(source.get("reason", "") or reason)
    if isinstance(source, str):
        return source, reason
    return "", ""



