"""The Ray Jobs launcher against a real 2-node local Ray cluster (marker ``ray``).

The jobs are short Python commands, not verl (the verl PPO end-to-end test lives elsewhere).
"""

from __future__ import annotations

import json
import re
import shlex
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from workbook.command.plan import Plan
from workbook.core.layout import RunDir
from workbook.errors import LaunchError
from workbook.launch import ray_client
from workbook.launch.cluster.state import ClusterState
from workbook.launch.job_log import LineLog
from workbook.launch.outcome import request_stop
from workbook.launch.ray_job import RayJobLauncher, check_resources, job_runtime_env


def numbered_lines_plan(
    count: int, delay_s: float = 0.0, extra: str = "", env: dict[str, str] | None = None
) -> Plan:
    code = (
        "import time\n"
        f"{extra}\n"
        f"for i in range(1, {count + 1}):\n"
        "    print(f'line {i}', flush=True)\n"
        f"    time.sleep({delay_s})\n"
    )
    return Plan(argv=[sys.executable, "-c", code], env=dict(env or {}))


def launcher(state: ClusterState, **kwargs: object) -> RayJobLauncher:
    return RayJobLauncher(
        state.dashboard_url,
        nodes=2,
        devices_per_node=1,
        device_resource="GPU",
        poll_s=0.5,
        **kwargs,  # type: ignore[arg-type]
    )


def log_lines(run_dir: RunDir) -> list[str]:
    return run_dir.file("log").read_text(encoding="utf-8").splitlines()


def numbered(run_dir: RunDir) -> list[str]:
    """The job's own numbered lines (the log also holds Ray's job-supervisor lines)."""
    return [line for line in log_lines(run_dir) if re.fullmatch(r"line \d+", line)]


def assert_log_is_the_job_log(state: ClusterState, run_dir: RunDir) -> None:
    """run.log is exactly the job's full log: nothing lost, nothing twice."""
    client = ray_client.JobsClient.connect(state.dashboard_url, ray_client.auth_token())
    assert run_dir.file("log").read_text(encoding="utf-8") == client.logs(run_dir.run_id)


def expected(count: int) -> list[str]:
    return [f"line {i}" for i in range(1, count + 1)]


# ------------------------------------------------------------------ pure parts


def test_line_log_skips_replayed_lines_and_reconciles_the_rest(tmp_path: Path) -> None:
    seen: list[str] = []
    with open(tmp_path / "run.log", "w", encoding="utf-8") as handle:
        log = LineLog(handle, seen.append)
        log.connect()
        log.feed("a\nb")  # "b" is half a line: held back
        log.connect()  # the stream dropped; the new one starts from the first byte
        log.feed("a\nb\nc\n")
        appended = log.reconcile("a\nb\nc\nd\ne")
    assert (tmp_path / "run.log").read_text() == "a\nb\nc\nd\ne\n"
    assert seen == ["a", "b", "c", "d", "e"]
    assert appended == 2


def test_job_env_keeps_plan_env_drops_secrets_and_lets_verl_override() -> None:
    env = job_runtime_env({"A": "1", "RAY_AUTH_TOKEN": "secret", "RAY_ADDRESS": "x"},
                          py_modules=["/m"])
    assert env["env_vars"] == {"A": "1", "RAY_OVERRIDE_JOB_RUNTIME_ENV": "1"}
    assert env["py_modules"] == ["/m"]


def test_resource_check_names_what_is_missing() -> None:
    nodes = [
        ray_client.NodeInfo("a", "10.0.0.1", True, True, {"NPU": 4.0, "CPU": 8.0}),
        ray_client.NodeInfo("b", "10.0.0.2", True, False, {"NPU": 2.0, "CPU": 8.0}),
        ray_client.NodeInfo("c", "10.0.0.3", False, False, {"NPU": 4.0}),
    ]
    check_resources(nodes, url="u", want_nodes=1, devices_per_node=4, device="NPU")
    with pytest.raises(LaunchError, match=r"needs 2 node\(s\) with >= 4 NPU each, and has 1 such"):
        check_resources(nodes, url="u", want_nodes=2, devices_per_node=4, device="NPU")


def test_unreachable_address_fails_within_ten_seconds() -> None:
    with socket.socket() as closed, socket.socket() as silent:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: connection refused
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts connections into the backlog, never answers: a hung server
        for sock in (closed, silent):
            address = f"http://127.0.0.1:{sock.getsockname()[1]}"
            began = time.monotonic()
            with pytest.raises(LaunchError, match="cannot reach the Ray job server") as err:
                RayJobLauncher(address, nodes=1, devices_per_node=1).preflight()
            assert time.monotonic() - began < 10.0
            assert err.value.exit_code == 3


def test_missing_address_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("WORKBOOK_CLUSTER_STATE", str(tmp_path / "no-cluster.json"))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    with pytest.raises(LaunchError, match="workbook cluster up"):
        RayJobLauncher(None, nodes=1, devices_per_node=1).preflight()


# ------------------------------------------------------------------ real cluster


@pytest.mark.ray
def test_preflight_reports_two_local_nodes_with_a_gpu_each(
    ray_cluster: ClusterState,
) -> None:
    result = launcher(ray_cluster).preflight()
    assert result["address"] == ray_cluster.dashboard_url
    assert len(result["nodes"]) == 2
    assert all(n["resources"]["GPU"] == 1.0 for n in result["nodes"])
    assert result["local"] is True


@pytest.mark.ray
def test_without_an_address_the_local_cluster_is_used(
    ray_cluster: ClusterState, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    state_file = tmp_path / "cluster.json"
    state_file.write_text(json.dumps(ray_cluster.to_dict()))
    monkeypatch.setenv("WORKBOOK_CLUSTER_STATE", str(state_file))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    job = RayJobLauncher(None, nodes=2, devices_per_node=1, device_resource="GPU")
    assert job.preflight()["address"] == ray_cluster.dashboard_url


@pytest.mark.ray
@pytest.mark.parametrize(
    ("nodes", "devices", "device", "needle"),
    [
        (3, 1, "GPU", r"needs 3 node\(s\) with >= 1 GPU each, and has 2"),
        (2, 2, "GPU", r"needs 2 node\(s\) with >= 2 GPU each, and has 0"),
        (2, 1, "NPU", r"needs 2 node\(s\) with >= 1 NPU each, and has 0"),
    ],
)
def test_cluster_without_enough_devices_is_refused_before_submitting(
    ray_cluster: ClusterState,
    run_dir: RunDir,
    nodes: int,
    devices: int,
    device: str,
    needle: str,
) -> None:
    job = RayJobLauncher(
        ray_cluster.dashboard_url, nodes=nodes, devices_per_node=devices, device_resource=device
    )
    with pytest.raises(LaunchError, match=needle) as err:
        job.run(numbered_lines_plan(1), run_dir)
    assert err.value.exit_code == 3
    assert not run_dir.file("log").exists()


@pytest.mark.ray
def test_cluster_already_running_a_verl_trainer_is_refused_naming_its_job(
    ray_cluster: ClusterState, run_dir: RunDir
) -> None:
    """Stands in for a running verl job: it holds TransferQueue's cluster-wide controller name."""
    holder = (
        "import time, ray\n"
        "ray.init()\n"
        "@ray.remote(num_cpus=0)\n"
        "class Controller:\n"
        "    def ping(self): return 1\n"
        "c = Controller.options(name='TransferQueueController', namespace='transfer_queue')"
        ".remote()\n"
        "ray.get(c.ping.remote())\n"
        "time.sleep(300)\n"
    )
    client = ray_client.JobsClient.connect(ray_cluster.dashboard_url, ray_client.auth_token())
    job_id = client.submit(entrypoint=shlex.join([sys.executable, "-c", holder]),
                           submission_id=f"{run_dir.run_id}-holder", runtime_env={})
    try:
        deadline = time.monotonic() + 90
        while not client.live_actors("TransferQueueController"):
            assert time.monotonic() < deadline, client.logs(job_id)[-2000:]
            time.sleep(1)
        with pytest.raises(LaunchError, match=r"already runs a verl trainer") as err:
            launcher(ray_cluster).run(numbered_lines_plan(1), run_dir)
        assert err.value.exit_code == 3
        assert not run_dir.file("log").exists()
    finally:
        client.stop(job_id)
    deadline = time.monotonic() + 60
    while client.live_actors("TransferQueueController"):  # gone with its job: the cluster is free
        assert time.monotonic() < deadline
        time.sleep(1)
    assert launcher(ray_cluster).preflight()["nodes"]


@pytest.mark.ray
def test_job_streams_every_line_into_run_log_and_collects_the_file_logger(
    ray_cluster: ClusterState, run_dir: RunDir, tmp_path: Path
) -> None:
    jsonl = tmp_path / "elsewhere" / "metrics.jsonl"
    write = f"import os, json, pathlib\np = pathlib.Path({str(jsonl)!r}); p.parent.mkdir()\np.write_text(json.dumps({{'step': 1, 'data': {{'x': 1}}}}) + '\\n')"
    plan = numbered_lines_plan(
        50, 0.02, extra=write, env={"VERL_FILE_LOGGER_PATH": str(jsonl), "WB_MARK": "on"}
    )
    seen: list[str] = []
    job = launcher(ray_cluster)
    assert not job.ran_here()  # not before its cluster's nodes are seen to be this machine's
    outcome = job.run(plan, run_dir, on_line=seen.append, timeout_s=120)
    assert job.ran_here()  # so this machine's conditions are the run's
    assert outcome.status == "succeeded", outcome.message
    assert outcome.exit_code == 0
    assert numbered(run_dir) == expected(50)
    assert seen == log_lines(run_dir)
    assert_log_is_the_job_log(ray_cluster, run_dir)
    record = json.loads(run_dir.file("run").read_text())["ray_job"]
    assert record["job_id"] == run_dir.run_id
    assert record["status"] == "SUCCEEDED" and record["driver_exit_code"] == 0
    assert record["file_logger"]["collected"] is True
    assert json.loads(run_dir.file("metrics").read_text())["data"] == {"x": 1}


@pytest.mark.ray
def test_failed_job_is_failed_with_the_driver_exit_code(
    ray_cluster: ClusterState, run_dir: RunDir
) -> None:
    plan = Plan(
        argv=[sys.executable, "-c", "import sys; print('about to fail'); sys.exit(7)"], env={}
    )
    outcome = launcher(ray_cluster).run(plan, run_dir, timeout_s=120)
    assert (outcome.status, outcome.exit_code) == ("failed", 7)
    assert "about to fail" in log_lines(run_dir)
    assert json.loads(run_dir.file("run").read_text())["ray_job"]["status"] == "FAILED"


@pytest.mark.ray
def test_stop_request_ends_the_job_stopped(
    ray_cluster: ClusterState, run_dir: RunDir
) -> None:
    plan = numbered_lines_plan(600, 0.5)

    def stop_after_two(line: str) -> None:
        if line == "line 2":
            request_stop(run_dir.path, "test")

    outcome = launcher(ray_cluster).run(plan, run_dir, on_line=stop_after_two, timeout_s=120)
    assert outcome.status == "stopped", outcome.message
    record = json.loads(run_dir.file("run").read_text())["ray_job"]
    assert record["status"] == "STOPPED" and record["stop_reason"] == "stop requested"
    lines = numbered(run_dir)
    assert lines[:2] == expected(2) and len(lines) < 600


@pytest.mark.ray
def test_timeout_stops_the_job_and_says_timeout(
    ray_cluster: ClusterState, run_dir: RunDir
) -> None:
    outcome = launcher(ray_cluster).run(numbered_lines_plan(600, 0.5), run_dir, timeout_s=8)
    assert outcome.status == "timeout", outcome.message
    assert json.loads(run_dir.file("run").read_text())["ray_job"]["status"] == "STOPPED"


class DroppingClient(ray_client.JobsClient):
    """The real client whose first two log streams break after two chunks (a dropped socket)."""

    drops_left = 2

    async def tail(self, job_id: str) -> AsyncIterator[str]:
        count = 0
        async for chunk in super().tail(job_id):
            yield chunk
            count += 1
            if count == 2 and DroppingClient.drops_left > 0:
                DroppingClient.drops_left -= 1
                raise ConnectionResetError("forced disconnect")


@pytest.mark.ray
def test_log_stream_survives_forced_disconnects_without_lost_or_duplicated_lines(
    ray_cluster: ClusterState, run_dir: RunDir
) -> None:
    def factory(url: str, token: str | None) -> ray_client.JobsClient:
        real = ray_client.JobsClient.connect(url, token)
        return DroppingClient(real.url, real.token, real._sdk)

    outcome = launcher(ray_cluster, client_factory=factory).run(
        numbered_lines_plan(120, 0.05), run_dir, timeout_s=120
    )
    assert outcome.status == "succeeded", outcome.message
    assert numbered(run_dir) == expected(120)
    assert_log_is_the_job_log(ray_cluster, run_dir)
    record = outcome.details["ray_job"]
    assert record["stream_reconnects"] >= 2
    assert any("forced disconnect" in d for d in record["stream_drops"])


@pytest.mark.ray
def test_driver_ray_init_with_the_jobs_env_keys_does_not_clash(
    ray_cluster: ClusterState, run_dir: RunDir
) -> None:
    # verl's main_ppo calls ray.init(runtime_env={"env_vars": {"VERL_FULL_DETERMINISM": ...}})
    # whatever the job's env holds; Ray refuses that merge unless the job allows overrides.
    code = (
        "import ray\n"
        "ray.init(runtime_env={'env_vars': {'VERL_FULL_DETERMINISM': '0'}})\n"
        "print('merged', ray.get(ray.remote(lambda: __import__('os').environ['WB_KEEP']).remote()))\n"
        "ray.shutdown()\n"
    )
    plan = Plan(
        argv=[sys.executable, "-c", code], env={"VERL_FULL_DETERMINISM": "0", "WB_KEEP": "kept"}
    )
    outcome = launcher(ray_cluster).run(plan, run_dir, timeout_s=180)
    assert outcome.status == "succeeded", run_dir.file("log").read_text()[-2000:]
    assert "merged kept" in log_lines(run_dir)


@pytest.mark.ray
def test_cpu_plugin_is_shipped_to_nodes_of_a_remote_cluster(
    ray_cluster: ClusterState, run_dir: RunDir, tmp_path: Path
) -> None:
    # A remote cluster has no workbook installed: the launcher ships the package and the
    # vllm version answer as py_modules. Forced here on the local cluster.
    from workbook.profiles.cpu import EXTERNAL_MODULES
    from workbook.profiles.cpu.pythonpath import prepare_plugin_path

    plugin = prepare_plugin_path(tmp_path / "plugin")
    code = (
        "import importlib.metadata, workbook\n"
        "print('workbook from', *workbook.__path__)\n"
        "print('vllm version', importlib.metadata.version('vllm'))\n"
    )
    env = {"VERL_USE_EXTERNAL_MODULES": ",".join(EXTERNAL_MODULES), "PYTHONPATH": str(plugin)}
    plan = Plan(argv=[sys.executable, "-c", code], env=env)
    outcome = launcher(ray_cluster, ship_workbook=True).run(plan, run_dir, timeout_s=180)
    log = run_dir.file("log").read_text(encoding="utf-8")
    assert outcome.status == "succeeded", log[-2000:]
    shipped = [line for line in log_lines(run_dir) if line.startswith("workbook from")]
    assert shipped and "runtime_resources" in shipped[0], shipped
    assert any(
        line.startswith("vllm version") and line.endswith("+cpu") for line in log_lines(run_dir)
    )
