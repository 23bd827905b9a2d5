"""The local multi-node Ray cluster: ports, auth token, status, idempotent up, down by its tag."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import psutil
import pytest

from workbook.cli import cluster as cluster_cli
from workbook.launch import processes, ray_client, ray_nodes
from workbook.launch.cluster import lifecycle, probe
from workbook.launch.cluster.state import ClusterState, temp_dir_for

RAY_DEFAULT_PORTS = {6379, 8265, 10001, 52365, 8076, 8077, 62365}


def test_every_port_is_free_distinct_and_off_rays_defaults() -> None:
    taken: set[int] = set()
    head = ray_nodes.node_ports(True, taken)
    other = ray_nodes.node_ports(False, taken)
    singles = [
        v for ports in (head, other) for k, v in ports.items() if not k.endswith("worker-port")
    ]
    assert len(singles) == len(set(singles))
    assert not RAY_DEFAULT_PORTS & set(singles)
    assert {
        "port",
        "dashboard-port",
        "ray-client-server-port",
        "dashboard-agent-listen-port",
    } <= set(head)
    ranges = [range(p["min-worker-port"], p["max-worker-port"] + 1) for p in (head, other)]
    assert not set(ranges[0]) & set(ranges[1])
    assert all(r.start >= 20000 and not set(r) & set(singles) for r in ranges)


def test_start_command_declares_logical_devices_and_an_own_temp_dir(tmp_path: Path) -> None:
    temp = temp_dir_for(tmp_path / "state.json")
    ports = ray_nodes.node_ports(True, set())
    gpu = ray_nodes.start_command(
        ports=ports, temp_dir=temp, cpus=4, devices=1, device_resource="GPU", head_address=None
    )
    npu = ray_nodes.start_command(
        ports=ports, temp_dir=temp, cpus=4, devices=4, device_resource="NPU", head_address="h:1"
    )
    assert "--head" in gpu and "--num-gpus=1" in gpu and f"--temp-dir={temp}" in gpu
    assert f"--port={ports['port']}" in gpu and f"--dashboard-port={ports['dashboard-port']}" in gpu
    assert "--address=h:1" in npu and "--head" not in npu
    assert '--resources={"NPU": 4}' in npu and "--num-gpus=0" in npu
    # AF_UNIX socket paths under the temp dir must stay below 108 bytes
    assert len(str(temp)) <= 20 and temp == temp_dir_for(tmp_path / "state.json")
    assert temp != temp_dir_for(tmp_path / "other.json")


def test_auth_token_is_found_where_ray_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ray_client.auth_token({}) is None
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("from-home\n")
    (tmp_path / "tok").write_text("from-path")
    assert ray_client.auth_token({}) == "from-home"
    assert ray_client.auth_token({"RAY_AUTH_TOKEN_PATH": str(tmp_path / "tok")}) == "from-path"
    assert (
        ray_client.auth_token(
            {"RAY_AUTH_TOKEN": "from-env", "RAY_AUTH_TOKEN_PATH": str(tmp_path / "tok")}
        )
        == "from-env"
    )


def test_status_without_a_cluster_says_it_is_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _parse(["cluster", "--state", str(tmp_path / "none.json"), "status"])
    assert args.handler(args) == 3
    assert "local Ray cluster: down" in capsys.readouterr().out


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cluster_cli.register(parser.add_subparsers())
    return parser.parse_args(argv)


@pytest.mark.ray
def test_status_shows_two_alive_nodes_and_their_resources(
    ray_cluster: ClusterState, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state_file = tmp_path / "copy.json"
    state_file.write_text(json.dumps(ray_cluster.to_dict()))
    result = probe.status(state_file)
    assert result.reachable and len(result.alive_nodes) == 2
    assert sum(n.is_head for n in result.alive_nodes) == 1
    assert all(n.resources["GPU"] == 1.0 and n.resources["CPU"] == 4.0 for n in result.alive_nodes)
    args = _parse(["cluster", "--state", str(state_file), "status"])
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert "nodes alive: 2/2" in out and out.count("GPU 1") == 2
    assert f"export RAY_ADDRESS={ray_cluster.dashboard_url}" in out


@pytest.mark.ray
def test_up_twice_reuses_the_cluster_and_down_leaves_no_ray_process(tmp_path: Path) -> None:
    state_file = tmp_path / "one.json"
    first = lifecycle.up(
        1, cpus_per_node=2, devices_per_node=4, device_resource="NPU", state_file=state_file
    )
    try:
        again = lifecycle.up(
            1, cpus_per_node=2, devices_per_node=4, device_resource="NPU", state_file=state_file
        )
        assert again.dashboard_url == first.dashboard_url and again.pids == first.pids
        assert again.tag == first.tag and processes.is_tag(first.tag)
        (node,) = probe.status(state_file).alive_nodes
        assert node.resources["NPU"] == 4.0 and "GPU" not in node.resources
        procs = processes.tagged(first.tag)
        assert len(procs) >= 4  # gcs, raylet, dashboard, log monitor ... all carry its tag
        assert set(first.pids) <= {p.pid for p in procs} | {
            p for p in first.pids if not psutil.pid_exists(p)
        }
        named = {p.pid for p in psutil.process_iter(["cmdline"])
                 if first.temp_dir in " ".join(p.info["cmdline"] or ())}
        assert named <= {p.pid for p in procs}  # every process naming its temp dir is tagged
    finally:
        counts = lifecycle.down(state_file)
        shutil.rmtree(first.temp_dir, ignore_errors=True)
    assert counts["terminated"] + counts["killed"] >= 4
    assert processes.tagged(first.tag) == []
    survivors = []
    for pid in first.pids:
        try:
            if first.temp_dir in " ".join(psutil.Process(pid).cmdline()):
                survivors.append(pid)
        except psutil.NoSuchProcess:
            continue
    assert survivors == []
    assert not state_file.exists()
    assert probe.status(state_file).state is None
