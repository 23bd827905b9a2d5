"""The local cluster and KubeRay split into modules by concern: what each part still does.

``up`` is driven here with a fake ``ray`` (no process is started): each ``ray start`` either
fails or succeeds as a row of the table says, so the retries with fresh ports are observable.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from workbook.errors import LaunchError
from workbook.launch.cluster import lifecycle
from workbook.launch.cluster.state import load_state, temp_dir_for

# ---------------------------------------------------------------- retry_start


@pytest.mark.parametrize(
    ("failures", "starts", "recoveries", "raises"),
    [
        (0, 1, 0, False),
        (1, 2, 1, False),
        (2, 3, 2, False),
        (3, 3, 2, True),
        (5, 3, 2, True),
    ],
    ids=["first-try", "second-try", "last-try", "all-three-fail", "never-starts"],
)
def test_a_start_is_tried_three_times_with_a_recovery_between_attempts(
    failures: int, starts: int, recoveries: int, raises: bool
) -> None:
    calls: list[str] = []

    def start() -> None:
        calls.append("start")
        if calls.count("start") <= failures:
            raise LaunchError(f"attempt {calls.count('start')} failed")

    def recover() -> None:
        calls.append("recover")

    if raises:
        with pytest.raises(LaunchError, match=f"attempt {starts} failed"):
            lifecycle.retry_start(start, recover)
    else:
        lifecycle.retry_start(start, recover)
    assert calls.count("start") == starts and calls.count("recover") == recoveries
    assert calls[-1] == "start"  # a recovery is always followed by another attempt


@pytest.mark.parametrize(
    ("start_error", "recover_error"),
    [(OSError("disk"), None), (LaunchError("busy"), LaunchError("no free ports"))],
    ids=["start-raises-other-error", "recover-raises"],
)
def test_errors_other_than_a_failed_start_are_not_retried(
    start_error: Exception, recover_error: Exception | None
) -> None:
    starts: list[int] = []

    def start() -> None:
        starts.append(1)
        raise start_error

    def recover() -> None:
        if recover_error is not None:
            raise recover_error

    with pytest.raises(type(recover_error or start_error), match=str(recover_error or start_error)):
        lifecycle.retry_start(start, recover)
    assert len(starts) == 1


# ---------------------------------------------------------------- up with a fake ray


@dataclass
class FakeRay:
    """``ray start`` that fails the first ``head_failures`` / ``node_failures`` times."""

    temp_dir: Path
    head_failures: int = 0
    node_failures: int = 0
    started: list[dict[str, Any]] = field(default_factory=list)
    swept: list[str] = field(default_factory=list)
    slept: list[float] = field(default_factory=list)

    def start_command(self, *, ports: dict[str, int], head_address: str | None,
                      **common: Any) -> list[str]:
        return ["ray", "start", json.dumps({"ports": ports, "head": head_address})]

    def run(self, argv: list[str], env: dict[str, str], *, what: str) -> str:
        call = json.loads(argv[2])
        role = "head" if call["head"] is None else "node"
        failed = sum(1 for s in self.started if s["role"] == role and not s["ok"])
        ok = failed >= (self.head_failures if role == "head" else self.node_failures)
        self.started.append({"role": role, "ok": ok, **call})
        if not ok:
            raise LaunchError(f"could not {what}")
        if role == "head":
            record = self.temp_dir / "ray_current_cluster"  # what Ray writes for its head
            record.write_text(f"10.0.0.7:{call['ports']['port']}\n")
        return ""


@pytest.fixture
def fake_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeRay]:
    temp_dir = temp_dir_for(tmp_path / "cluster.json")
    fake = FakeRay(temp_dir)
    monkeypatch.setattr(lifecycle, "start_command", fake.start_command)
    monkeypatch.setattr(lifecycle, "_run", fake.run)
    monkeypatch.setattr(lifecycle, "_ensure_token", lambda env, python=None: None)
    monkeypatch.setattr(lifecycle, "_wait_for_nodes", lambda url, count, timeout_s: None)
    monkeypatch.setattr(lifecycle, "tagged", lambda tag: [])
    monkeypatch.setattr(lifecycle, "end_tagged",
                        lambda tag, grace_s=10.0: fake.swept.append(str(grace_s)) or
                        {"terminated": 0, "killed": 0})
    monkeypatch.setattr(lifecycle.time, "sleep", fake.slept.append)
    try:
        yield fake
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.parametrize(
    ("nodes", "head_failures", "node_failures", "sweeps", "pauses"),
    [
        (2, 0, 0, 0, 0),
        (1, 2, 0, 2, 0),
        (2, 0, 2, 0, 2),
        (3, 1, 1, 1, 1),
    ],
    ids=["no-failure", "head-twice", "node-twice", "head-and-node-once"],
)
def test_up_retries_each_start_with_fresh_ports_and_records_them(
    fake_ray: FakeRay, tmp_path: Path, nodes: int, head_failures: int, node_failures: int,
    sweeps: int, pauses: int,
) -> None:
    fake_ray.head_failures, fake_ray.node_failures = head_failures, node_failures
    state_file = tmp_path / "cluster.json"

    state = lifecycle.up(nodes, cpus_per_node=2, devices_per_node=1, state_file=state_file)

    heads = [s for s in fake_ray.started if s["head"] is None]
    others = [s for s in fake_ray.started if s["head"] is not None]
    assert [s["ok"] for s in heads] == [False] * head_failures + [True]
    assert len([s for s in others if s["ok"]]) == nodes - 1
    every_port = [p for s in fake_ray.started for p in s["ports"].values()]
    assert len(every_port) == len(set(every_port))  # each attempt took fresh ports
    head = heads[-1]["ports"]
    assert state.ports[0] == head
    assert state.dashboard_url == f"http://127.0.0.1:{head['dashboard-port']}"
    assert state.gcs_address == f"10.0.0.7:{head['port']}"
    assert all(s["head"] == state.gcs_address for s in others)
    assert state.ports[1:] == [s["ports"] for s in others]
    assert len(fake_ray.swept) == sweeps and len(fake_ray.slept) == pauses
    assert load_state(state_file) == state


def test_up_that_cannot_start_the_head_forgets_the_cluster(
    fake_ray: FakeRay, tmp_path: Path
) -> None:
    fake_ray.head_failures = 3
    state_file = tmp_path / "cluster.json"
    with pytest.raises(LaunchError, match="could not start the Ray head"):
        lifecycle.up(2, state_file=state_file)
    assert len(fake_ray.started) == lifecycle.START_ATTEMPTS
    assert not state_file.exists()


# ---------------------------------------------------------------- layers


@pytest.mark.parametrize(
    ("module", "absent"),
    [
        ("workbook.launch.kuberay.manifest", ("workbook.launch.kuberay.kubectl", "subprocess")),
        ("workbook.launch.cluster.state", ("workbook.launch.cluster.lifecycle", "psutil")),
        ("workbook.launch.cluster.on_demand", ("workbook.launch.ray_job",)),
    ],
    ids=["manifest-without-kubectl", "state-without-processes", "policy-without-job-client"],
)
def test_a_part_loads_without_what_it_does_not_need(module: str, absent: tuple[str, ...]) -> None:
    code = (
        f"import sys, {module}\n"
        f"print([m for m in {list(absent)!r} if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout
