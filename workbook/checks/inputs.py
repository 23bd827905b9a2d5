"""What checks read from a run directory: metrics, run.json, the resolved ``checks:`` section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workbook.errors import InputError
from workbook.metrics.loading import load_metrics
from workbook.metrics.model import RunMetrics
from workbook.runs import RUN_FILES, is_run_dir
from workbook.serialization import load_yaml

PACKAGE_PARAMS = Path(__file__).resolve().parents[2] / "params"


def load_run_metrics(path: Path) -> RunMetrics:
    """Metrics of a run directory, console log or JSONL file.

    A run directory that never got as far as writing a log has no metrics (the verdict then
    says the run failed) rather than being unreadable input.
    """
    path = Path(path)
    if path.is_dir() and not any((path / RUN_FILES[k]).exists() for k in ("metrics", "log")):
        return RunMetrics()
    return load_metrics(path)


def read_run(path: Path) -> dict[str, Any]:
    """run.json of a run directory ({} for a log file or a directory without one)."""
    run_json = Path(path) / RUN_FILES["run"]
    if not Path(path).is_dir() or not run_json.exists():
        return {}
    try:
        return json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{run_json}: unreadable: {exc}") from None


def read_resolved_params(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / RUN_FILES["params"]
    if not path.exists():
        return {}
    data = load_yaml(path)
    return data if isinstance(data, dict) else {}


def params_dir_for(resolved: dict[str, Any]) -> Path:
    """Folder a scenario's relative baseline path is read from.

    The resolved params' own ``params_dir`` or ``source`` file when recorded, else ``./params``,
    else the ``params/`` folder next to the installed package (a source checkout).
    """
    if resolved.get("params_dir"):
        return Path(str(resolved["params_dir"])).expanduser()
    if resolved.get("source"):
        return Path(str(resolved["source"])).expanduser().parent
    local = Path.cwd() / "params"
    return local if local.is_dir() else PACKAGE_PARAMS


def is_run_directory(path: Path) -> bool:
    path = Path(path)
    return path.is_dir() and (is_run_dir(path) or (path / RUN_FILES["metrics"]).exists())
