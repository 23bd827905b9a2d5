"""Shared, expensive things: the tiny assets, and REAL verl runs started once per session.

Each real run goes through the ``workbook`` CLI exactly as a user or CI would, into a
session temp runs root; tests across modules read the resulting run directories.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[1]
GSPO_TINY = REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
PPO_TINY_RAY = REPO / "params" / "ppo-tiny-2n1cpu-fsdp2-vllm-ray.yaml"
WORKBOOK = [sys.executable, "-m", "workbook"]
# Passes Hydra composition; verl then refuses it (deprecated key set beside its replacement)
# when it builds its actor config in the driver, before Ray starts.
BROKEN_OVERRIDE = "overrides+=actor_rollout_ref.actor.ppo_micro_batch_size=8"
IMPOSSIBLE_CHECK = 'checks.expressions+=max(data["timing_s/step"]) < 0.001'


@dataclass
class CliRun:
    """A finished ``workbook`` invocation."""

    args: list[str]
    exit_code: int
    output: str  # stdout then stderr
    run_dir: Path | None
    stdout: str = ""

    def json(self, name: str) -> dict:
        assert self.run_dir is not None
        return json.loads((self.run_dir / name).read_text())


@pytest.fixture(scope="session")
def session_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Assets and runs of this session live in its own temp dirs, never in the user's cache."""
    base = tmp_path_factory.mktemp("workbook")
    env = dict(os.environ)
    env.update(
        WORKBOOK_ASSETS=str(base / "assets"),
        WORKBOOK_RUNS=str(base / "runs"),
        WORKBOOK_CLUSTER_STATE=str(base / "cluster.json"),
        PYTHONUNBUFFERED="1",
    )
    saved = {k: os.environ.get(k) for k in ("WORKBOOK_ASSETS", "WORKBOOK_RUNS", "WORKBOOK_CLUSTER_STATE")}
    os.environ.update({k: env[k] for k in saved})
    yield env
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def cpu_assets(session_env: dict[str, str]):  # type: ignore[no-untyped-def]
    from workbook.assets import ensure_assets

    return ensure_assets(Path(session_env["WORKBOOK_ASSETS"]))


class HeavyLock:
    """One real verl run or Ray cluster at a time on this machine (2 cores, 24 GiB)."""

    def __enter__(self) -> "HeavyLock":
        self.handle = open("/tmp/wb-heavy.lock", "w")
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def run_dir_from(output: str) -> Path | None:
    """``workbook run`` prints the run directory as its last line."""
    lines = [line for line in output.strip().splitlines() if line.strip()]
    if lines and lines[-1].startswith("/") and len(lines[-1]) < 4096 and Path(lines[-1]).is_dir():
        return Path(lines[-1])
    for line in output.splitlines():
        if line.startswith("run directory: "):
            return Path(line.split(": ", 1)[1])
    return None


def workbook_cli(args: list[str], env: dict[str, str], timeout: float = 1500) -> CliRun:
    proc = subprocess.run([*WORKBOOK, *args], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)
    output = proc.stdout + proc.stderr
    return CliRun(args, proc.returncode, output, run_dir_from(proc.stdout), proc.stdout)


@pytest.fixture(scope="session")
def passed_run(session_env: dict[str, str], cpu_assets) -> CliRun:  # type: ignore[no-untyped-def]
    """The default scenario, unchanged: real verl on CPU, judged against its blessed baseline."""
    with HeavyLock():
        return workbook_cli(["run", str(GSPO_TINY)], session_env)


@pytest.fixture(scope="session")
def regressed_run(session_env: dict[str, str], cpu_assets) -> CliRun:  # type: ignore[no-untyped-def]
    """The default scenario with a check no real run can meet."""
    with HeavyLock():
        return workbook_cli(["run", str(GSPO_TINY), "-s", IMPOSSIBLE_CHECK], session_env)


@pytest.fixture(scope="session")
def failed_run(session_env: dict[str, str], cpu_assets) -> CliRun:  # type: ignore[no-untyped-def]
    """The default scenario with a broken override: verl starts, then refuses its config."""
    with HeavyLock():
        return workbook_cli(["run", str(GSPO_TINY), "-s", BROKEN_OVERRIDE], session_env)


@pytest.fixture(scope="session")
def stopped_run(session_env: dict[str, str], cpu_assets) -> CliRun:  # type: ignore[no-untyped-def]
    """The default scenario interrupted (SIGINT, as Ctrl-C) once Ray and verl's workers are up."""
    with HeavyLock():
        proc = subprocess.Popen([*WORKBOOK, "run", str(GSPO_TINY)], env=session_env, cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + 600
        for line in proc.stdout:
            lines.append(line)
            # Stop mid-way: Ray is up and verl's FSDP workers have started.
            if "(WorkerDict pid=" in line or time.monotonic() > deadline:
                proc.send_signal(signal.SIGINT)
                break
        rest, _ = proc.communicate(timeout=300)
        output = "".join(lines) + rest
        return CliRun(["run", "<interrupted>"], proc.returncode, output, run_dir_from(output))


@dataclass
class ClusterRun:
    """`workbook cluster up --nodes 2`, a run on it, then `workbook cluster down`."""

    up: CliRun
    run: CliRun
    down: CliRun
    temp_dir: str
    leftovers: list[str]


@pytest.fixture(scope="session")
def ppo_ray_run(session_env: dict[str, str], cpu_assets) -> ClusterRun:  # type: ignore[no-untyped-def]
    """The tiny PPO scenario through the Ray launcher on a real local 2-node cluster."""
    import psutil

    with HeavyLock():
        up = workbook_cli(["cluster", "up", "--nodes", "2"], session_env, timeout=900)
        state = json.loads(Path(session_env["WORKBOOK_CLUSTER_STATE"]).read_text()) if up.exit_code == 0 else {}
        try:
            run = workbook_cli(["run", str(PPO_TINY_RAY)], session_env)
        finally:
            down = workbook_cli(["cluster", "down"], session_env, timeout=300)
        temp_dir = state.get("temp_dir", "<no cluster>")
        leftovers = [" ".join(p.info["cmdline"] or ())[:200] for p in psutil.process_iter(["cmdline"])
                     if temp_dir in " ".join(p.info["cmdline"] or ())]
        return ClusterRun(up, run, down, temp_dir, leftovers)
