"""What the workbook ends is provably its own: a process is signalled only when it carries the
tag of the run or cluster being ended (and is still the process found then), never for the PID a
file names or for what its command line says, and never while the run's owner still drives it.

Unrelated processes -- bystanders -- run beside the workbook's own: one whose PID a run.json or a
state file names, one whose command line names the temp dirs (and ``/``, ``/tmp``), one carrying a
tag of its own, as another job would. ``workbook report``, ``workbook cluster down`` and a suite's
clearing of leftovers leave every one of them running; an orphaned run's own processes, and a
real local Ray cluster started for it by ``workbook cluster up``, are ended whole.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import HeavyLock, workbook_cli
from workbook.batch.orphans import clear_orphans
from workbook.cli import main
from workbook.command.builder import ray_temp_dir
from workbook.core.layout import CLUSTER_FILE, RunDir
from workbook.launch import processes
from workbook.launch.cluster import lifecycle, probe
from workbook.launch.cluster.state import ClusterState, load_state, temp_dir_for

SLEEP = "import sys, time; time.sleep(600)"
# a run's process that starts a child in a session of its own (as Ray's daemons do), then waits
TREE = ("import subprocess, sys, time\n"
        "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
        " start_new_session=True)\n"
        "open(sys.argv[1], 'w').write(str(kid.pid))\n"
        "time.sleep(600)\n")


def sleeper(*words: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """A process that sleeps, its command line ending in ``words``."""
    return subprocess.Popen([sys.executable, "-c", SLEEP, *words], env=env,
                            start_new_session=True)


@dataclass
class Bystanders:
    """Processes that are not the workbook's: none may be signalled."""

    reused_pid: subprocess.Popen[bytes]  # its PID is what a run.json or state file names
    names_temp_dir: subprocess.Popen[bytes]  # its command line names the temp dirs, / and /tmp
    other_tag: subprocess.Popen[bytes]  # another job's: a tag of its own
    tag: str  # that tag

    def running(self) -> dict[str, bool]:
        return {name: getattr(self, name).poll() is None
                for name in ("reused_pid", "names_temp_dir", "other_tag")}


@contextmanager
def bystanders(*named: str) -> Iterator[Bystanders]:
    tag = processes.new_tag()
    found = Bystanders(sleeper(), sleeper("/", "/tmp", *named),
                       sleeper(env=processes.tagged_env(tag)), tag)
    try:
        yield found
    finally:
        for proc in (found.reused_pid, found.names_temp_dir, found.other_tag):
            proc.kill()  # this test's own children, by their Popen
            proc.wait()


@dataclass
class OwnTree:
    """An orphaned run's own processes: a parent and a child in a session of its own."""

    parent: subprocess.Popen[bytes]
    child: tuple[int, float]  # PID and start time

    def running(self) -> list[str]:
        return ([] if self.parent.poll() is not None else ["parent"]) + (
            ["child"] if processes.is_running(*self.child) else [])


@contextmanager
def own_tree(tag: str, folder: Path) -> Iterator[OwnTree]:
    mark = folder / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", TREE, str(mark)],
                              env=processes.tagged_env(tag), start_new_session=True)
    deadline = time.monotonic() + 30
    while not mark.exists() or not mark.read_text():
        assert time.monotonic() < deadline, "the run's child never started"
        time.sleep(0.05)
    pid = int(mark.read_text())
    tree = OwnTree(parent, (pid, psutil.Process(pid).create_time()))
    try:
        yield tree
    finally:
        parent.kill()
        parent.wait()
        try:
            child = psutil.Process(pid)
            if abs(child.create_time() - tree.child[1]) < 1.0:
                child.kill()  # still the test's own child (PID and start time)
        except psutil.Error:
            pass


def run_dir(root: Path, *, owner: str, tag: str, pid: int, status: str = "running",
            **extra: Any) -> RunDir:
    """A run directory as a launcher leaves it while the run goes; its owner alive (this
    process, which is not the ``workbook report`` process) or dead (this PID, another start)."""
    rd = RunDir.create(root, "safety")
    me, started = processes.identity()
    rd.update_run(run_id=rd.run_id, scenario="safety", status=status, runs_root=str(root),
                  started_at="2026-11-30T00:00:00+00:00", pid=pid, process_tag=tag,
                  owner_pid=me, owner_started=started if owner == "alive" else 1.0, **extra)
    return rd


def forged_state(folder: Path, **fields: Any) -> Path:
    """A cluster state file of the right shape that ``workbook cluster up`` did not write."""
    path = folder / CLUSTER_FILE
    state = ClusterState(temp_dir=str(temp_dir_for(path)), gcs_address="127.0.0.1:1",
                         dashboard_url="http://127.0.0.1:9", nodes=1, cpus_per_node=1,
                         devices_per_node=0, device_resource="GPU")
    path.write_text(json.dumps({**state.to_dict(), **fields}))
    return path


# ---------------------------------------------------------------- an orphaned run, ended


def end_by_report(rd: RunDir) -> str:
    done = workbook_cli(["report", str(rd.path)], dict(os.environ), timeout=300)
    assert done.exit_code == 3, done.output[-2000:]  # failed: its owner died
    return "; ".join(rd.read_json("run").get("finish_errors") or [])


def end_by_clearing_leftovers(rd: RunDir) -> str:
    (entry,) = clear_orphans(rd.path.parents[1], kind="suite")
    assert entry["run_dir"] == str(rd.path)
    return str(entry.get("error", ""))


ENDERS: list[tuple[str, Callable[[RunDir], str]]] = [
    ("workbook-report", end_by_report),
    ("suite-leftovers", end_by_clearing_leftovers),
]


@pytest.mark.parametrize("end", [e for _, e in ENDERS], ids=[n for n, _ in ENDERS])
def test_an_orphaned_runs_own_processes_are_ended_and_no_one_elses(
    tmp_path: Path, end: Callable[[RunDir], str]
) -> None:
    tag = processes.new_tag()
    root = tmp_path / "runs"
    with bystanders() as others, own_tree(tag, tmp_path) as own:
        rd = run_dir(root, owner="dead", tag=tag, pid=others.reused_pid.pid)
        rd.update_run(local_cluster={"state_file": str(rd.path / CLUSTER_FILE)})
        # the state file in the run directory names / as its temp dir, and another job's tag
        forged_state(rd.path, temp_dir="/", tag=others.tag, pids=[others.reused_pid.pid])
        with bystanders(str(rd.path), ray_temp_dir(rd.run_id)) as named:
            assert own.running() == ["parent", "child"]

            error = end(rd)

            assert own.running() == []
            assert others.running() == named.running() == {
                "reused_pid": True, "names_temp_dir": True, "other_tag": True}
    info = rd.read_json("run")
    assert info["status"] == "failed"
    assert "refusing to stop the cluster" in error and "temp_dir '/'" in error
    assert (rd.path / CLUSTER_FILE).exists()  # refused: not even forgotten


# ---------------------------------------------------------------- a run its owner drives


@pytest.mark.parametrize("status", ["prepared", "running"])
def test_report_renders_a_run_its_owner_still_drives_as_it_stands(
    tmp_path: Path, status: str
) -> None:
    tag = processes.new_tag()
    with own_tree(tag, tmp_path) as own:
        rd = run_dir(tmp_path / "runs", owner="alive", tag=tag, pid=own.parent.pid,
                     status=status)
        before = rd.read_json("run")

        done = workbook_cli(["report", str(rd.path)], dict(os.environ), timeout=300)

        assert done.exit_code == 3, done.output[-2000:]  # not judged yet: it has not passed
        assert rd.file("report").is_file()
        assert own.running() == ["parent", "child"]  # its training goes on
        after = rd.read_json("run")
        assert after["status"] == status and "finished_at" not in after
        assert {k: after[k] for k in before} == before  # nothing it recorded was rewritten


# ---------------------------------------------------------------- cluster down, refused


def fifo(folder: Path) -> Path:
    path = folder / "state.fifo"
    os.mkfifo(path)
    return path


def not_json_object(folder: Path) -> Path:
    path = folder / "state.json"
    path.write_text("[1]")
    return path


def state_with(**fields: Any) -> Callable[[Path, str], Path]:
    return lambda folder, tag: forged_state(folder, **{"tag": tag, **fields})


REFUSED: list[tuple[str, Callable[[Path, str], Path], str]] = [
    # what stands where the state file should be, and the words of the refusal
    ("temp-dir-root", state_with(temp_dir="/"), "its temp_dir '/' is not the one the workbook"),
    ("temp-dir-empty", state_with(temp_dir=""), "its temp_dir '' is not the one the workbook"),
    ("temp-dir-tmp", state_with(temp_dir="/tmp"), "its temp_dir '/tmp' is not the one"),
    ("another-files-temp-dir", state_with(temp_dir=str(temp_dir_for(Path("/x/cluster.json")))),
     "is not the one the workbook makes for it"),
    ("no-tag", state_with(tag=""), "records no process tag of the workbook's"),
    ("tag-not-the-workbooks", state_with(tag="x"), "records no process tag of the workbook's"),
    ("temp-dir-not-a-string", state_with(temp_dir=["/"]), "is not the one the workbook"),
    ("fifo", lambda folder, tag: fifo(folder), "is not a regular file"),
    ("not-a-state-file", lambda folder, tag: not_json_object(folder), "not a cluster state file"),
]


@pytest.mark.parametrize(("make", "words"), [(m, w) for _, m, w in REFUSED],
                         ids=[n for n, _, _ in REFUSED])
def test_cluster_down_refuses_a_state_file_the_workbook_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path, str], Path],
    words: str,
) -> None:
    with bystanders(str(temp_dir_for(tmp_path / CLUSTER_FILE))) as others:
        # the tag it records is a live process's: a tag in a file of the wrong form is no proof
        state = make(tmp_path, others.tag)

        code = main(["cluster", "--state", str(state), "down"])

        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1, err
        assert words in err and str(state) in err
        assert others.running() == {"reused_pid": True, "names_temp_dir": True,
                                    "other_tag": True}
    assert state.exists()  # refused: not even forgotten


def test_cluster_status_of_a_fifo_is_bad_input_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    assert main(["cluster", "--state", str(fifo(tmp_path)), "status"]) == 2
    assert "is not a regular file" in capsys.readouterr().err
    assert time.monotonic() - started < 10


# ---------------------------------------------------------------- a real Ray cluster


@dataclass
class RealCluster:
    """A local Ray cluster ``workbook cluster up`` started for a run, in its run directory."""

    run: RunDir
    state_file: Path
    state: ClusterState

    def processes(self) -> list[tuple[int, float]]:
        """Its processes now, by PID and start time: those carrying its tag."""
        return sorted((p.pid, p.create_time()) for p in processes.tagged(self.state.tag))


@pytest.fixture(scope="module")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    """One cluster for the module (Ray's start costs ~20 s here), ended by the last test."""
    root = tmp_path_factory.mktemp("runs")
    rd = RunDir.create(root, "ray-safety")
    state_file = rd.path / CLUSTER_FILE
    env = dict(os.environ, WORKBOOK_RUNS=str(root))
    with HeavyLock():
        done = workbook_cli(["cluster", "--state", str(state_file), "up", "--nodes", "1",
                             "--cpus", "2"], env, timeout=600)
        state = load_state(state_file)
        try:
            assert done.exit_code == 0 and state is not None, done.output[-3000:]
            yield RealCluster(rd, state_file, state)
        finally:
            if state_file.exists():
                lifecycle.down(state_file)
            if state is not None:
                shutil.rmtree(state.temp_dir, ignore_errors=True)


@pytest.mark.ray
def test_cluster_down_refuses_a_copy_or_a_forgery_of_a_real_clusters_state(
    real_cluster: RealCluster, tmp_path: Path
) -> None:
    before = real_cluster.processes()
    assert len(before) >= 4  # GCS, raylet, dashboard, agents, log monitor: all carry the tag
    copy = tmp_path / "copy.json"
    shutil.copyfile(real_cluster.state_file, copy)
    forged = forged_state(tmp_path, temp_dir=real_cluster.state.temp_dir,
                          tag=real_cluster.state.tag)

    for state in (copy, forged):
        done = workbook_cli(["cluster", "--state", str(state), "down"], dict(os.environ),
                            timeout=120)
        assert done.exit_code == 2 and "refusing to stop the cluster" in done.output, done.output

    assert real_cluster.processes() == before
    assert probe.status(copy).reachable  # a copy still tells the cluster's status


@pytest.mark.ray
def test_report_on_an_orphaned_run_ends_its_real_cluster_and_nothing_else(
    real_cluster: RealCluster,
) -> None:
    state, rd = real_cluster.state, real_cluster.run
    own = real_cluster.processes()
    assert len(own) >= 4
    with bystanders(state.temp_dir, str(rd.path)) as others:
        me = processes.identity()[0]
        rd.update_run(run_id=rd.run_id, scenario="ray-safety", status="running",
                      runs_root=str(rd.path.parents[1]), started_at="2026-11-30T00:00:00+00:00",
                      launcher="ray", pid=others.reused_pid.pid, process_tag=state.tag,
                      owner_pid=me, owner_started=1.0,  # this PID, another start: its owner died
                      local_cluster={"state_file": str(real_cluster.state_file),
                                     "temp_dir": state.temp_dir})

        done = workbook_cli(["report", str(rd.path)], dict(os.environ), timeout=300)

        assert done.exit_code == 3, done.output[-2000:]
        assert [p for p in own if processes.is_running(*p)] == []
        assert others.running() == {"reused_pid": True, "names_temp_dir": True,
                                    "other_tag": True}
        left = [p.info["cmdline"] for p in psutil.process_iter(["cmdline"])
                if state.temp_dir in " ".join(p.info["cmdline"] or ())
                and p.pid != others.names_temp_dir.pid]
        assert left == []  # nothing of the cluster escaped: every process of it was tagged
    assert not real_cluster.state_file.exists()  # the run's own cluster is forgotten
    info = rd.read_json("run")
    assert info["status"] == "failed" and not info.get("finish_errors"), info
