"""What a run leaves running when whatever drove it died, and ending it -- only what the
workbook itself started, found by its own records.

Every launch records in ``run.json`` the process that drives it (``owner_pid`` and its start
time: the ``workbook`` process, or the notebook kernel) and what it started (the verl process
group ``pid``, the run's own Ray temp dir, or a Ray job id and address). A run still marked
``running`` whose owner is gone was orphaned: a killed CI job, a dead kernel, a closed laptop.
:func:`end_run` ends such a run's processes (or stops its Ray job); :func:`orphaned_runs`
finds them under a runs root, so a suite can clear them before starting the next scenario.
Nothing else on the machine is touched: no ``ray stop``, no process matched by name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workbook.command.builder import ray_temp_dir
from workbook.core.layout import RUN_FILES
from workbook.core.status import ACTIVE
from workbook.launch import processes
from workbook.launch.ray_client import TERMINAL_STATUSES


def owner_record() -> dict[str, Any]:
    """``owner_pid`` and ``owner_started``: who drives a run (this process), for run.json."""
    pid, started = processes.identity()
    return {"owner_pid": pid, "owner_started": started}


def owner_alive(info: dict[str, Any]) -> bool:
    """Whether the process that drove a run is still the same process (PIDs get reused)."""
    pid = info.get("owner_pid")
    if not pid:
        return False
    return processes.is_running(int(pid), float(info.get("owner_started") or 0))


def end_run(info: dict[str, Any], run_id: str) -> int:
    """End what a run started: its process tree and Ray temp dir, or its Ray job.

    Returns how many processes needed SIGKILL.
    """
    job = info.get("ray_job") or {}
    if job.get("job_id") and job.get("address") and job.get("status") not in TERMINAL_STATUSES:
        _stop_job(str(job["address"]), str(job["job_id"]))
    cluster = info.get("local_cluster") or {}
    if cluster.get("state_file"):
        from workbook.launch.cluster.lifecycle import down

        down(Path(cluster["state_file"]))
    pid = info.get("pid")
    marker = ray_temp_dir(run_id)
    if pid and processes.is_running(int(pid)):
        return processes.end_tree(int(pid), markers=[marker])
    return len(processes.end_processes(processes.marked(marker), grace_s=5.0))


def orphaned_runs(runs_root: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Run directories under ``runs_root`` marked active whose driving process is gone."""
    for run_json in Path(runs_root).rglob(RUN_FILES["run"]):
        try:
            info = json.loads(run_json.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(info, dict) and info.get("status") in ACTIVE and not owner_alive(info):
            yield run_json.parent, info


def _stop_job(address: str, job_id: str) -> None:
    from workbook.errors import LaunchError
    from workbook.launch import ray_client

    try:
        ray_client.JobsClient.connect(address, ray_client.auth_token(), 5.0).stop(job_id)
    except LaunchError:
        pass  # the cluster is gone, and the job with it
