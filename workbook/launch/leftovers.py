"""What a run leaves running when whatever drove it died, and ending it -- only what the
workbook itself started, found by its own records.

Every run records in ``run.json`` the process that drives it (``owner_pid`` and its start time:
the ``workbook`` process, or the notebook kernel), from its preparation on, and the tag every
process it starts carries (``process_tag``, see :mod:`workbook.launch.processes`), or the Ray
job it submitted. A run still marked ``prepared``/``running`` whose owner is gone was orphaned:
a killed CI job, a dead kernel, a closed laptop. :func:`end_run` ends such a run's processes (or
stops its Ray job); :func:`orphaned_runs` finds them under a runs root, so a suite can clear them
before starting the next scenario. A run whose owner lives is its owner's: nothing here ends it.
Nothing else on the machine is touched: no ``ray stop``, no process matched by number or name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workbook.core.layout import CLUSTER_FILE, RUN_FILES, RunDir
from workbook.core.status import ACTIVE
from workbook.errors import WorkbookError
from workbook.launch import processes
from workbook.launch.ray_client import TERMINAL_STATUSES


def owner_record() -> dict[str, Any]:
    """``owner_pid`` and ``owner_started``: who drives a run (this process), for run.json."""
    pid, started = processes.identity()
    return {"owner_pid": pid, "owner_started": started}


def owner_alive(info: dict[str, Any]) -> bool:
    """Whether the process that drove a run is still the same process (PIDs get reused)."""
    try:
        pid, started = int(info.get("owner_pid") or 0), float(info.get("owner_started") or 0)
    except (TypeError, ValueError):  # a hand-edited run.json: no owner to be found
        return False
    return pid > 0 and processes.is_running(pid, started)


def owned_elsewhere(info: dict[str, Any]) -> bool:
    """Whether another live process drives the run: then it is that owner's to end, not ours."""
    return owner_alive(info) and int(info["owner_pid"]) != processes.identity()[0]


def end_run(info: dict[str, Any], run_dir: Path) -> int:
    """End what a run started: its Ray job, and every process carrying its tag (its local
    launch, and the local cluster it started, whose state file in the run directory is then
    forgotten). Returns how many processes needed SIGKILL.

    A state file in the run directory that the run did not write is refused (InputError), after
    the run's own processes are ended.
    """
    job = info.get("ray_job") or {}
    if job.get("job_id") and job.get("address") and job.get("status") not in TERMINAL_STATUSES:
        _stop_job(str(job["address"]), str(job["job_id"]))
    tag = str(info.get(processes.TAG_KEY) or "")
    killed = processes.end_tagged(tag, grace_s=5.0)["killed"] if processes.is_tag(tag) else 0
    state_file = Path(run_dir) / CLUSTER_FILE
    if info.get("local_cluster") and state_file.exists():
        from workbook.launch.cluster.lifecycle import down

        killed += down(state_file, grace_s=5.0, tag=tag)["killed"]
    return killed


def orphaned_runs(runs_root: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Run directories under ``runs_root`` marked active whose driving process is gone."""
    for run_json in Path(runs_root).rglob(RUN_FILES["run"]):
        try:
            info = RunDir(run_json.parent).read_json("run")
        except WorkbookError:
            continue
        if info.get("status") in ACTIVE and not owner_alive(info):
            yield run_json.parent, info


def _stop_job(address: str, job_id: str) -> None:
    from workbook.errors import LaunchError
    from workbook.launch import ray_client

    try:
        ray_client.JobsClient.connect(address, ray_client.auth_token(), 5.0).stop(job_id)
    except LaunchError:
        pass  # the cluster is gone, and the job with it
