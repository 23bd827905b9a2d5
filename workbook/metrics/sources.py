"""Where a run's metrics are: verl's file logger, the console log and TensorBoard event files.

verl writes the same numbers to every logger in ``trainer.logger``, and any of them can come back
short: an Ascend nightly finished 15 of 15 steps and saved an empty console log, a file logger
cut by a full disk, a console that never printed its step lines. Missing data is not a failed
run, so every source a run left is read:

    jsonl        ``metrics.jsonl`` (``$VERL_FILE_LOGGER_PATH``); where a run directory has none,
                 the file the command's ``VERL_FILE_LOGGER_PATH`` named, when it is on this machine
    console      ``run.log``
    tensorboard  event files under ``$TENSORBOARD_DIR`` (the command's; relative to the run
                 directory, where the launcher starts verl) or ``tensorboard_log/``, where verl
                 writes ``tensorboard_log/<project>/<experiment>`` by default

The run's metrics are their union, the more precise value winning where two hold the same step
and metric (the file logger's full precision, then the console's ``repr``, then TensorBoard's
float32); the most complete source names them (:func:`combine`, recorded as
:class:`~workbook.metrics.model.MetricsSource`). Reading the files is the callers'
(:mod:`~workbook.metrics.reading` reads the console log once, feeding the diagnoser on the way).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workbook.core.clock import utc_time
from workbook.core.layout import RUN_FILES, file_signature, read_json_object
from workbook.metrics.model import MetricsSource, RunMetrics

JSONL, TENSORBOARD, CONSOLE = "jsonl", "tensorboard", "console"
CHOICE_ORDER = (JSONL, TENSORBOARD, CONSOLE)  # which names a run's metrics when steps tie
FILL_ORDER = (JSONL, CONSOLE, TENSORBOARD)  # whose value wins where two hold one: precision
TENSORBOARD_LOG = "tensorboard_log"  # verl's default folder, relative to where it ran
EVENTS_GLOB = "events.out.tfevents.*"
MAX_EVENT_FILES = 256  # a run writes one per start; more is someone else's folder


@dataclass(frozen=True)
class RunFiles:
    """The files one run's metrics are read from (None: that source is absent)."""

    jsonl: Path | None = None
    log: Path | None = None
    events: tuple[Path, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def signature(self) -> tuple[object, ...]:
        """Changes when any of the files does (a run still writing, a file added)."""
        files = (self.jsonl, self.log, *self.events)
        return tuple((str(p), file_signature(p)) if p is not None else None for p in files)


def single_file(path: Path, jsonl: bool) -> RunFiles:
    """A file given on its own: a file-logger JSONL file, else a console log."""
    return RunFiles(jsonl=path) if jsonl else RunFiles(log=path)


def run_files(folder: Path) -> RunFiles:
    """The metrics files of a run directory.

    ``metrics.jsonl`` and ``run.log`` count when they exist, whatever they are (a FIFO is then
    refused by the reader, never skipped as if absent); a file the command named elsewhere and
    event files count only as regular files.
    """
    folder = Path(folder).resolve()
    jsonl, log = folder / RUN_FILES["metrics"], folder / RUN_FILES["log"]
    env = _command_env(folder)
    found_jsonl: Path | None = jsonl if jsonl.exists() else None
    named = env.get("VERL_FILE_LOGGER_PATH")
    if found_jsonl is None and named:
        other = _resolved(folder, named)
        found_jsonl = other if other.is_file() and not _own_file_elsewhere(folder, other) else None
    named_tb = env.get("TENSORBOARD_DIR")
    events, notes = event_files(folder, named_tb, _started(folder) if named_tb else None)
    return RunFiles(found_jsonl, log if log.exists() else None, events, notes)


def event_files(folder: Path, tensorboard_dir: str | None = None,
                since: float | None = None) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """A run directory's TensorBoard event files, oldest first (by name: verl's writer names
    them by creation time), and a note when there were too many to be one run's.

    ``tensorboard_log/`` inside the run directory is the run's own and is searched whole; a
    ``$TENSORBOARD_DIR`` outside it may be shared by many runs, so only the files directly in
    it (where verl's writer puts them) written since the run started (``since``) count.
    """
    found: list[Path] = []
    own = Path(folder) / TENSORBOARD_LOG
    if own.is_dir():
        found += own.rglob(EVENTS_GLOB)
    if tensorboard_dir:
        named = _resolved(folder, tensorboard_dir)
        inside = named == Path(folder).resolve() or Path(folder).resolve() in named.parents
        if named.is_dir():
            candidates = named.rglob(EVENTS_GLOB) if inside else named.glob(EVENTS_GLOB)
            found += (p for p in candidates if inside or since is None or _mtime(p) >= since)
    files = sorted({p for p in found if p.is_file()}, key=lambda p: (p.name, str(p)))
    notes: tuple[str, ...] = ()
    if len(files) > MAX_EVENT_FILES:
        notes = (f"{len(files)} TensorBoard event files: only the newest {MAX_EVENT_FILES} read",)
        files = files[-MAX_EVENT_FILES:]
    return tuple(files), notes


def combine(parts: Mapping[str, RunMetrics], notes: Sequence[str] = ()) -> RunMetrics:
    """One run's metrics from each source's (``jsonl``, ``console``, ``tensorboard``): their
    union, each step and metric from the most precise source holding it, with
    ``origin`` naming the source that held the most steps and the steps each held."""
    steps = {key: len(parts[key]) for key in CHOICE_ORDER if key in parts}  # before merging:
    present = [key for key in FILL_ORDER if key in parts]  # the first part is filled in place
    merged = parts[present[0]] if present else RunMetrics()
    for key in present[1:]:
        merged.fill_from(parts[key])
    held = [key for key in CHOICE_ORDER if steps.get(key)]
    chosen = max(held, key=lambda key: steps[key]) if held else ""  # max keeps the first tie
    merged.origin = MetricsSource(chosen, steps, len(merged), tuple(notes))
    return merged


def _command_env(folder: Path) -> dict[str, str]:
    """The environment the run's command was given (``command.json``; {} without one, or
    when it is not a regular file: a FIFO is never opened)."""
    env = read_json_object(Path(folder) / RUN_FILES["command_json"]).get("env")
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


def _started(folder: Path) -> float | None:
    """When the run started (run.json's ``started_at``) as a POSIX time, None if unknown."""
    started = utc_time(str(read_json_object(Path(folder) / RUN_FILES["run"]).get("started_at") or ""))
    return started.timestamp() if started else None


def _own_file_elsewhere(folder: Path, other: Path) -> bool:
    """The file logger path points into this run's own directory at the place it ran (a run
    directory copied, moved or published keeps its command): that file is another copy's,
    never this run's evidence."""
    run_id = str(read_json_object(Path(folder) / RUN_FILES["run"]).get("run_id") or "")
    return other.parent != Path(folder) and other.parent.name in {Path(folder).name, run_id}


def _resolved(folder: Path, named: str) -> Path:
    """A path the command named: relative ones are the run directory's (verl's working
    directory when the launcher started it)."""
    path = Path(named).expanduser()
    return (path if path.is_absolute() else Path(folder) / path).resolve()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
