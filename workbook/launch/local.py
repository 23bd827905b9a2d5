"""Run the command as a local process group, streaming every line to run.log and a sink.

The child gets its own session so a terminal's Ctrl-C reaches the workbook first, and the run's
process tag (:mod:`workbook.launch.processes`), which Ray, vLLM and every worker inherit; the
workbook then ends every process carrying it and records why. A timeout, a stop request
(``stop.request`` in the run dir) and KeyboardInterrupt (the notebook's stop button) all end the
run the same way, and run.log keeps everything printed until then.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

from workbook.command.plan import Plan
from workbook.core.layout import RunDir, now_iso
from workbook.core.status import RunStatus
from workbook.launch import processes
from workbook.launch.launcher import Launcher
from workbook.launch.leftovers import owner_record
from workbook.launch.outcome import LineSink, Outcome, stop_requested
from workbook.params import Scenario


def child_env(plan: Plan, base: dict[str, str] | None = None) -> dict[str, str]:
    """The process environment: ours plus the plan's; PYTHONPATH entries are prepended."""
    env = dict(os.environ if base is None else base)
    for key, value in plan.env.items():
        if key == "PYTHONPATH" and env.get(key):
            env[key] = f"{value}{os.pathsep}{env[key]}"
        else:
            env[key] = value
    return env


class _Pump(threading.Thread):
    """Copies the child's output, line by line, to run.log and the sink."""

    def __init__(self, stream: IO[bytes], log_path: Path, on_line: LineSink | None) -> None:
        super().__init__(daemon=True)
        self.stream, self.log_path, self.on_line = stream, log_path, on_line
        self.lines = 0

    def run(self) -> None:
        with open(self.log_path, "ab", buffering=0) as log:
            for raw in iter(self.stream.readline, b""):
                log.write(raw)
                self.lines += 1
                if self.on_line is not None:
                    try:
                        self.on_line(raw.decode("utf-8", errors="replace").rstrip("\n"))
                    except Exception:  # noqa: BLE001 - a broken sink must not stop logging
                        self.on_line = None


RAY_STARTUP_TIMEOUT = "The current node timed out during startup"


class _StartupWatch:
    """Passes lines on, noting Ray's start-up timeout and whether any step was logged."""

    def __init__(self, sink: LineSink | None) -> None:
        self.sink, self.startup_timeout, self.steps = sink, False, False

    def line(self, text: str) -> None:
        if RAY_STARTUP_TIMEOUT in text:
            self.startup_timeout = True
        elif "step:" in text:
            self.steps = True
        if self.sink is not None:
            self.sink(text)


class LocalLauncher(Launcher):
    """Runs a plan on this machine."""

    poll_s = 0.2
    startup_retries = 1

    @classmethod
    def for_scenario(cls, s: Scenario, run_id: str = "", address: str | None = None
                     ) -> LocalLauncher:
        return cls()

    def run(self, plan: Plan, run_dir: RunDir, *, on_line: LineSink | None = None,
            timeout_s: float | None = None) -> Outcome:
        """Run the plan; a run whose own Ray never came up is started again, once.

        Ray waits a fixed 30 s for its raylet to register when ``ray.init`` starts a local
        instance; a busy machine can miss that before verl does anything. Such an attempt (the
        start-up timeout in its output, no step logged) is infrastructure, not the run: it is
        recorded in ``run.json`` and the plan starts again; every other failure stands.
        """
        started, t0 = now_iso(), time.monotonic()
        attempts: list[dict[str, object]] = []
        while True:
            watch = _StartupWatch(on_line)
            outcome = self._attempt(plan, run_dir, watch, timeout_s, t0)
            attempts.append({"status": outcome.status, "exit_code": outcome.exit_code,
                             "ray_startup_timeout": watch.startup_timeout})
            retry = (outcome.status == RunStatus.FAILED and watch.startup_timeout and not watch.steps
                     and len(attempts) <= self.startup_retries)
            if not retry:
                break
            run_dir.update_run(launch_attempts=attempts)
            with open(run_dir.file("log"), "a", encoding="utf-8") as log:
                log.write(f"workbook: Ray did not start ({RAY_STARTUP_TIMEOUT}); starting the "
                          "run again\n")
        outcome.started_at = started
        outcome.wall_time_s = round(time.monotonic() - t0, 2)
        outcome.details["attempts"] = attempts
        return outcome

    def _attempt(self, plan: Plan, run_dir: RunDir, watch: _StartupWatch,
                 timeout_s: float | None, t0: float) -> Outcome:
        started = now_iso()
        log_path = run_dir.file("log")
        tag = processes.process_tag(run_dir)
        proc = subprocess.Popen(
            plan.argv,
            env=processes.tagged_env(tag, child_env(plan)),
            cwd=run_dir.path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        run_dir.update_run(status=RunStatus.RUNNING.value, pid=proc.pid, started_at=started, launcher="local",
                           **owner_record())
        assert proc.stdout is not None
        pump = _Pump(proc.stdout, log_path, watch.line)
        pump.start()
        status, message = "", ""
        try:
            while proc.poll() is None:
                if timeout_s is not None and time.monotonic() - t0 > timeout_s:
                    status, message = RunStatus.TIMEOUT.value, f"timed out after {timeout_s:.0f} s; the run was ended"
                    break
                if stop_requested(run_dir.path):
                    status, message = RunStatus.STOPPED.value, "stopped on request"
                    break
                time.sleep(self.poll_s)
        except KeyboardInterrupt:
            status, message = RunStatus.STOPPED.value, "interrupted (Ctrl-C / kernel interrupt)"
        finally:
            if proc.poll() is None or status:
                killed = processes.end_tagged(tag)["killed"]
                message += f" ({killed} process(es) needed SIGKILL)" if killed else ""
            else:  # a clean exit can still leave Ray's helpers behind
                processes.end_tagged(tag, grace_s=5)
            proc.wait()
            pump.join(timeout=10)
        code = proc.returncode
        if not status:
            status = (RunStatus.SUCCEEDED if code == 0 else RunStatus.FAILED).value
            message = "exited 0" if code == 0 else f"exited with code {code}"
        return Outcome(
            status=status,
            exit_code=code,
            started_at=started,
            ended_at=now_iso(),
            wall_time_s=round(time.monotonic() - t0, 2),
            message=message.strip(),
            details={"pid": proc.pid, "log_lines": pump.lines},
        )
