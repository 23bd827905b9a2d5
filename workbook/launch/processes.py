"""The workbook's own processes: told apart by a tag in their environment, never by a number or
a name alone, and ended only when they carry it.

Every process the workbook starts (verl's driver, a local Ray cluster's nodes, a data script) gets
``WORKBOOK_PROCESS_TAG=<random>`` in its environment, and the tag is recorded beside what started it
(run.json's ``process_tag``, a cluster state file's ``tag``). Whatever those start in turn inherits
it -- Ray's GCS, raylets and workers, vLLM's engines, a script's children -- in whatever session,
process group or name. So a process is the workbook's to signal when, read just before, its
environment carries the tag; psutil checks its start time again as it signals, so a PID reused in
between is never hit. A process whose environment cannot be read (another user's, or one that
wrote its title over it) is not ours. PIDs alone wrap (32768 here) and command lines say whatever
their caller chose, so neither is evidence.

Why a "tag" and not a "token": run.json is redacted as it is written, and a value under a name
ending in ``token`` is taken for a credential. The one module that imports psutil.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import psutil

from workbook.core.layout import RunDir

KILL_GRACE_S = 10.0
TAG_VARIABLE = "WORKBOOK_PROCESS_TAG"
TAG_KEY = "process_tag"  # run.json's record of the tag every process of the run carries
_TAG_FORM = re.compile(r"wb-[0-9a-f]{32}")


def new_tag() -> str:
    """A fresh tag for the processes of one run, cluster or script."""
    return f"wb-{secrets.token_hex(16)}"


def is_tag(value: object) -> bool:
    """Whether ``value`` is a tag the workbook made (an empty or hand-written one matches nothing)."""
    return isinstance(value, str) and _TAG_FORM.fullmatch(value) is not None


def process_tag(rd: RunDir) -> str:
    """The tag of a run's processes: as recorded at its preparation, else a new one recorded now
    (a run directory a launcher was handed directly)."""
    tag = rd.read_json("run").get(TAG_KEY)
    if is_tag(tag):
        return str(tag)
    tag = new_tag()
    rd.update_run(**{TAG_KEY: tag})
    return tag


def tagged_env(tag: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a process the workbook starts: ``base`` (ours) with its tag.

    ``SPT_NOENV`` keeps the tag readable in processes that set their title (Ray's agents and
    workers, vLLM's engines): without it setproctitle writes over the environment's memory,
    and ``/proc/PID/environ`` reads empty. A title is then no longer than the command line.
    """
    return {**(os.environ if base is None else base), TAG_VARIABLE: tag, "SPT_NOENV": "1"}


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


def tagged(tag: str) -> list[psutil.Process]:
    """Every live process whose environment carries ``tag``; never this process or its parents
    (which may carry a tag they were started with), nothing for a value that is not a tag."""
    if not is_tag(tag):
        return []
    me = psutil.Process(os.getpid())
    spared = {me.pid, *(p.pid for p in me.parents())}
    found = []
    for proc in psutil.process_iter():
        if proc.pid in spared:
            continue
        try:
            if proc.environ().get(TAG_VARIABLE) == tag:
                found.append(proc)
        except psutil.Error:  # gone, a zombie, another user's: not ours
            continue
    return found


def end_tagged(tag: str, grace_s: float = KILL_GRACE_S) -> dict[str, int]:
    """SIGTERM every process carrying ``tag``; SIGKILL, after ``grace_s``, those still alive and
    any started meanwhile (found again by the tag). Counts of ``terminated`` and ``killed``."""
    first = tagged(tag)
    _signal_all(first, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _alive(first):
        time.sleep(0.2)
    left = tagged(tag)  # read again: what is still alive, and what started while we waited
    _signal_all(left, signal.SIGKILL)
    psutil.wait_procs(left, timeout=5)
    seen = {p.pid for p in first} | {p.pid for p in left}
    return {"terminated": len(seen) - len(left), "killed": len(left)}


def run_tagged(argv: list[str], *, cwd: Path | None, env: dict[str, str], log: Path,
               timeout_s: float, grace_s: float = 5.0) -> int | None:
    """Run ``argv`` in a session of its own with a tag of its own, its output into ``log``; its
    exit code, or None when it did not end in ``timeout_s``. Whatever ends the wait (its end, the
    timeout, Ctrl-C), every process carrying its tag -- its children and theirs, in whatever
    session -- is ended before this returns: its own session keeps a terminal's Ctrl-C from
    reaching them, so nothing else would."""
    tag = new_tag()
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=tagged_env(tag, env), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None
    finally:
        end_tagged(tag, grace_s=grace_s)
        proc.wait()


def _signal_all(procs: Iterable[psutil.Process], sig: int) -> None:
    for proc in procs:
        try:
            proc.send_signal(sig)  # psutil refuses a PID reused since the process was found
        except psutil.Error:
            pass


def _alive(procs: Iterable[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.Error:
            continue
    return alive


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
