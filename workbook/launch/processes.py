"""Ending a whole run: its process group, every descendant, and whatever Ray left behind.

verl starts Ray (GCS, raylet, dashboard, workers) and vLLM engine processes; some of them
start their own sessions, so killing the process group alone can leave orphans. We collect
the tree before signalling, then sweep for processes that name the run's own Ray temp dir.
The one module that imports psutil. A local Ray cluster is ended the same way: every process
that names its temp dir, plus their descendants (:func:`cluster_processes`).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable

import psutil

KILL_GRACE_S = 10.0


def identity() -> tuple[int, float]:
    """This process's PID and start time: together they name it even after PIDs are reused."""
    me = psutil.Process(os.getpid())
    return me.pid, me.create_time()


def is_running(pid: int, started: float | None = None) -> bool:
    """Whether ``pid`` runs (and, given ``started``, is still the process started then)."""
    try:
        proc = psutil.Process(int(pid))
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(proc.create_time() - float(started)) < 1.0
    except (psutil.Error, ValueError):
        return False


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def marked(marker: str) -> list[psutil.Process]:
    """Processes whose command line mentions ``marker`` (e.g. a run's Ray temp dir)."""
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.pid != me and marker in " ".join(proc.info["cmdline"] or ()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _signal_all(procs: Iterable[psutil.Process], sig: int) -> None:
    for proc in procs:
        try:
            proc.send_signal(sig)
        except psutil.Error:
            pass


def alive(procs: Iterable[psutil.Process]) -> list[psutil.Process]:
    return [p for p in procs if _running(p)]


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def end_processes(procs: list[psutil.Process], grace_s: float = 10.0) -> list[psutil.Process]:
    """SIGTERM each process, SIGKILL those alive after ``grace_s``; returns the ones killed."""
    _signal_all(procs, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and alive(procs):
        time.sleep(0.2)
    left = alive(procs)
    _signal_all(left, signal.SIGKILL)
    psutil.wait_procs(left, timeout=5)
    return left


def end_tree(pid: int, *, markers: Iterable[str] = (), grace_s: float = 10.0) -> int:
    """SIGTERM the group, tree and marked processes; SIGKILL what is left after ``grace_s``.

    Returns how many processes needed SIGKILL.
    """
    markers = [m for m in markers if m]
    targets = {p.pid: p for p in descendants(pid)}
    for m in markers:
        targets.update({p.pid: p for p in marked(m)})
    try:
        targets[pid] = psutil.Process(pid)
    except psutil.Error:
        pass
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    _signal_all(targets.values(), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and alive(targets.values()):
        time.sleep(0.2)
    # New processes may have been spawned while we waited; sweep once more.
    for m in markers:
        targets.update({p.pid: p for p in marked(m)})
    left = alive(targets.values())
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _signal_all(left, signal.SIGKILL)
    psutil.wait_procs(left, timeout=5)
    return len(left)



def cluster_processes(temp_dir: str) -> list[psutil.Process]:
    """Every live process of the cluster rooted at ``temp_dir`` (never another cluster's).

    A process belongs when its command line names the temp dir (GCS, raylets, dashboard,
    log monitors) or when it descends from such a process (agents and workers, which rename
    themselves ``ray::...``). The temp dir is unique to the state file, so this never matches
    another cluster. Collected before any signal, so orphans cannot escape.
    """
    marker = str(temp_dir).rstrip("/")
    found = {p.pid: p for p in marked(marker)}
    for proc in list(found.values()):
        found.update({child.pid: child for child in descendants(proc.pid)})
    return sorted(found.values(), key=lambda p: p.pid)


def cpu_snapshot() -> tuple[dict[tuple[int, float], tuple[int, float]], float, float]:
    """Every process's CPU seconds so far (user + system, keyed by PID and start time, with
    its parent PID), and the machine's busy and stolen CPU seconds since boot."""
    found: dict[tuple[int, float], tuple[int, float]] = {}
    for proc in psutil.process_iter(["pid", "ppid", "create_time", "cpu_times"]):
        info = proc.info
        times = info.get("cpu_times")
        if times is None or info.get("create_time") is None:
            continue
        found[(info["pid"], info["create_time"])] = (info["ppid"] or 0, times.user + times.system)
    total = psutil.cpu_times()
    steal = float(getattr(total, "steal", 0.0))
    idle = total.idle + float(getattr(total, "iowait", 0.0))
    busy = sum(total) - idle - steal - float(getattr(total, "guest", 0.0)) - float(
        getattr(total, "guest_nice", 0.0))  # guest time is counted in user time already
    return found, busy, steal


def cpu_count() -> int:
    return psutil.cpu_count() or 1


def load_average() -> float:
    return float(psutil.getloadavg()[0])


def stop_processes(procs: list[psutil.Process], grace_s: float = KILL_GRACE_S) -> dict[str, int]:
    """SIGTERM each process, SIGKILL those alive after ``grace_s``; counts of each."""
    left = end_processes(procs, grace_s)
    return {"terminated": len(procs) - len(left), "killed": len(left)}
