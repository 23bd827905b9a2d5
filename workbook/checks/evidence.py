"""Everything a verdict rests on, read once from a run directory, a console log or a JSONL file.

The same :class:`Evidence` feeds ``workbook run``, ``workbook check``, ``workbook report`` and the
notebook, so the same files give the same verdict wherever they are judged. For a bare log the
run's own words stand in for what a run directory records: how many steps it was to train
(``Total training steps``, the progress bar), whether it ended in a fatal error, which steps
replayed a rollout dump.

Input that is not a run directory, a console log or a JSONL file is refused here (exit 2), by
the loader's :func:`~workbook.metrics.loading.input_kind`; whether a training step completed
is decided once, by :func:`~workbook.metrics.log_facts.trained`, for every command.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.core import project
from workbook.core.layout import RUN_FILES, is_run_dir
from workbook.core.serialization import load_yaml
from workbook.core.status import BARE
from workbook.errors import InputError
from workbook.metrics.loading import input_kind
from workbook.metrics.log_facts import positive_int, trained
from workbook.metrics.model import RunMetrics
from workbook.metrics.reading import diagnose, reading_of
from workbook.params.settings import settings_of
from workbook.provenance import hardware_key

PACKAGE_PARAMS = project.root() / "params"  # the checkout's own, whatever $WORKBOOK_PARAMS says
# run.json statuses that say nothing about how a process ended (an imported log has no process)
BARE_STATUSES = BARE


@dataclass
class Evidence:
    """What one run left behind, as the checks read it."""

    path: Path
    metrics: RunMetrics
    diagnosis: dict[str, Any]
    run: dict[str, Any] = field(default_factory=dict)  # run.json ({} for a bare log)
    scenario: dict[str, Any] = field(default_factory=dict)  # resolved params ({} if unknown)
    expected_steps: int | None = None
    expected_from: str = ""  # "the scenario" or "the log"

    @property
    def is_run_dir(self) -> bool:
        return self.path.is_dir()

    @property
    def bare(self) -> bool:
        """Only a log to go by: no launcher recorded how the process ended."""
        return self.run.get("exit_code") is None and self.run.get("status") in BARE_STATUSES

    @property
    def profile(self) -> str | None:
        return self.scenario.get("profile") or self.run.get("profile")

    @property
    def hardware(self) -> dict[str, Any] | None:
        """The hardware key of the machine the run ran on (None when not recorded)."""
        if not self.run.get("hardware"):
            return None
        return hardware_key({**self.run, "profile": self.profile})

    @property
    def settings(self) -> dict[str, Any] | None:
        return settings_of(self.scenario) if self.scenario else None

    @property
    def trained(self) -> bool:
        """Whether any training step completed: without one a run never passes."""
        return trained(self.metrics)

    @property
    def replayed_steps(self) -> list[int]:
        return list(self.diagnosis.get("replayed_steps") or [])

    @property
    def replays_unknown(self) -> bool:
        """The scenario replays a rollout dump, yet neither the log nor run.json says which
        steps did: generated steps cannot be told from replayed ones."""
        rollouts = self.scenario.get("rollouts")
        pinned = rollouts.get("replay") if isinstance(rollouts, Mapping) else None
        return bool(pinned) and not self.replayed_steps


def gather(path: Path, *, scenario: Mapping[str, Any] | None = None) -> Evidence:
    """Read a run directory, console log or JSONL file.

    ``scenario`` is the resolved scenario the run was meant to follow (``--scenario``); a run
    directory's own ``params.resolved.yaml`` is used when it is not given.

    Raises:
        MetricsError: the path is missing, is not a run directory, log or JSONL file (a folder
            with no run files, a FIFO, a device, binary data), or cannot be read (exit 2);
        InputError: run.json is unreadable.
    """
    path = Path(path)
    in_run_dir = input_kind(path) == "run directory"
    run = read_run(path) if in_run_dir else {}
    resolved = dict(scenario) if scenario is not None else (
        read_resolved_params(path) if in_run_dir else {})
    metrics = _metrics(path)
    wanted = positive_int(resolved.get("total_training_steps")) or positive_int(
        run.get("expected_steps"))
    found = diagnose(path, metrics=metrics, expected_steps=wanted).to_dict()
    found["replayed_steps"] = replayed_steps(found, run)
    stated = positive_int(found.get("expected_steps"))
    evidence = Evidence(path, metrics, found, run, resolved)
    if wanted:
        evidence.expected_steps, evidence.expected_from = wanted, "the scenario"
    elif stated:
        evidence.expected_steps, evidence.expected_from = stated, "the log"
    return evidence


def replayed_steps(found: Mapping[str, Any], run: Mapping[str, Any]) -> list[int]:
    """The steps that replayed a rollout dump: the ones the log announces now and the ones it
    announced when the run was closed (run.json's diagnosis), so a log that lost its lines
    afterwards does not turn replayed steps into generated ones."""
    recorded = (run.get("diagnosis") or {}).get("replayed_steps") if isinstance(
        run.get("diagnosis"), Mapping) else None
    steps = set(found.get("replayed_steps") or [])
    steps |= {s for s in recorded or [] if isinstance(s, int) and not isinstance(s, bool)}
    return sorted(steps)


def read_run(path: Path) -> dict[str, Any]:
    """run.json of a run directory ({} without one)."""
    run_json = Path(path) / RUN_FILES["run"]
    if not run_json.exists():
        return {}
    try:
        data = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{run_json}: unreadable: {exc}") from None
    return data if isinstance(data, dict) else {}


def read_resolved_params(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / RUN_FILES["params"]
    if not path.exists():
        return {}
    data = load_yaml(path)
    return data if isinstance(data, dict) else {}


def params_dir_for(resolved: Mapping[str, Any], run: Mapping[str, Any] | None = None) -> Path:
    """Folder a scenario's relative baseline path is read from.

    The folder of the scenario file the run recorded (``run.json``), the resolved params' own
    ``params_dir`` or ``source`` when recorded, else ``./params``, else the ``params/`` folder
    next to the installed package (a source checkout).
    """
    scenario_file = (run or {}).get("scenario_file")
    if scenario_file and Path(str(scenario_file)).parent.is_dir():
        return Path(str(scenario_file)).parent
    if resolved.get("params_dir"):
        return Path(str(resolved["params_dir"])).expanduser()
    if resolved.get("source"):
        return Path(str(resolved["source"])).expanduser().parent
    local = Path.cwd() / "params"
    return local if local.is_dir() else PACKAGE_PARAMS


def is_run_directory(path: Path) -> bool:
    path = Path(path)
    return path.is_dir() and (is_run_dir(path) or (path / RUN_FILES["metrics"]).exists())


def _metrics(path: Path) -> RunMetrics:
    """The one reading of the run's files (a run directory that never got as far as writing
    a log has no metrics, and failed)."""
    return reading_of(path).metrics
