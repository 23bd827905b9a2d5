"""The local launcher with real processes: streaming, exit codes, timeouts and stopping the tree."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from workbook.command.builder import ray_temp_dir
from workbook.command.plan import Plan
from workbook.core.layout import RunDir
from workbook.launch.local import LocalLauncher, child_env
from workbook.launch.outcome import request_stop


@pytest.fixture
def run_dir(tmp_path: Path) -> RunDir:
    return RunDir.create(tmp_path, "demo")


def py(code: str, **env: str) -> Plan:
    return Plan(argv=[sys.executable, "-u", "-c", code], env=dict(env))


def test_every_line_reaches_run_log_and_the_sink_in_order(run_dir: RunDir) -> None:
    seen: list[str] = []
    out = LocalLauncher().run(py("for i in range(500): print(f'line {i}')"), run_dir, on_line=seen.append)
    assert out.status == "succeeded" and out.exit_code == 0
    expected = [f"line {i}" for i in range(500)]
    assert seen == expected
    assert run_dir.file("log").read_text().splitlines() == expected


def test_plan_env_reaches_the_child_and_pythonpath_is_prepended(run_dir: RunDir) -> None:
    env = child_env(Plan([], {"PYTHONPATH": "/first", "WB_X": "1"}), {"PYTHONPATH": "/later"})
    assert env["PYTHONPATH"] == "/first:/later" and env["WB_X"] == "1"
    out = LocalLauncher().run(py("import os; print(os.environ['WB_X'])", WB_X="hello"), run_dir)
    assert run_dir.file("log").read_text().strip() == "hello" and out.ok


def test_a_crash_is_failed_with_its_exit_code_and_traceback_kept(run_dir: RunDir) -> None:
    out = LocalLauncher().run(py("print('before'); raise SystemExit(7)"), run_dir)
    assert (out.status, out.exit_code) == ("failed", 7)
    assert "before" in run_dir.file("log").read_text()


# A parent that starts a child in its own session (as Ray's daemons do), both named by a marker.
TREE = """
import subprocess, sys, time
marker = sys.argv[1]
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker], start_new_session=True)
print("started", flush=True)
time.sleep(600)
"""


def tree_plan(run_dir: RunDir) -> Plan:
    return Plan(argv=[sys.executable, "-u", "-c", TREE, ray_temp_dir(run_dir.run_id)], env={})


def survivors(marker: str) -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or ())]


def test_timeout_ends_the_whole_tree_including_other_sessions(run_dir: RunDir) -> None:
    out = LocalLauncher().run(tree_plan(run_dir), run_dir, timeout_s=3)
    assert out.status == "timeout" and "timed out" in out.message
    assert survivors(ray_temp_dir(run_dir.run_id)) == []
    assert "started" in run_dir.file("log").read_text()


def test_stop_request_ends_the_run_as_stopped(run_dir: RunDir) -> None:
    def stop_soon() -> None:
        while "started" not in (run_dir.file("log").read_text() if run_dir.file("log").exists() else ""):
            time.sleep(0.1)
        request_stop(run_dir.path)

    threading.Thread(target=stop_soon, daemon=True).start()
    t0 = time.monotonic()
    out = LocalLauncher().run(tree_plan(run_dir), run_dir, timeout_s=120)
    assert out.status == "stopped"
    assert time.monotonic() - t0 < 60
    assert survivors(ray_temp_dir(run_dir.run_id)) == []
    assert run_dir.read_json("run")["status"] == "running"  # the launcher records the start only


FLAKY_RAY = """
import os, sys
if not os.path.exists("attempted"):
    open("attempted", "w").close()
    print("Exception: The current node timed out during startup. This could happen because ...")
    sys.exit(1)
print("step:1 - actor/pg_loss:0.1")
"""


def test_a_run_whose_own_ray_never_came_up_is_started_again_once(run_dir: RunDir) -> None:
    out = LocalLauncher().run(py(FLAKY_RAY), run_dir)

    assert out.status == "succeeded" and out.exit_code == 0
    assert [a["ray_startup_timeout"] for a in out.details["attempts"]] == [True, False]
    log = run_dir.file("log").read_text()
    assert "starting the run again" in log and log.rstrip().endswith("step:1 - actor/pg_loss:0.1")


def test_a_start_up_timeout_after_a_step_or_twice_is_not_retried(run_dir: RunDir) -> None:
    always = "print('Exception: The current node timed out during startup.'); raise SystemExit(1)"
    out = LocalLauncher().run(py(always), run_dir)
    assert out.status == "failed" and len(out.details["attempts"]) == 2

    late = "print('step:1 - a:1'); print('The current node timed out during startup'); exit(1)"
    out = LocalLauncher().run(py(late), RunDir.create(run_dir.path.parent, "late"))
    assert out.status == "failed" and len(out.details["attempts"]) == 1
