"""Lanes: one local Ray cluster per lane at a time, handed on to the next item of its shape."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from workbook.batch.lanes import Lanes


def scenario(kind: str) -> SimpleNamespace:
    """``ray2``/``ray3``: a Ray scenario asking for a local cluster of 2/3 nodes; ``local``: a
    one-node local run; ``remote``: a Ray scenario with an address of its own."""
    nodes = {"ray2": 2, "ray3": 3}.get(kind)
    return SimpleNamespace(launcher="ray" if kind != "local" else "local",
                           ray=SimpleNamespace(local_nodes=nodes), nodes=nodes or 1,
                           devices_per_node=1, profile="cpu")


@pytest.fixture()
def clusters(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    """Every ``up`` and ``down``, with its state file's name (nothing starts)."""
    from workbook.launch.cluster import lifecycle

    calls: list[tuple[str, str, Any]] = []

    def up(**shape: Any) -> SimpleNamespace:
        calls.append(("up", Path(shape.pop("state_file")).name, shape.get("nodes")))
        return SimpleNamespace(dashboard_url=f"http://127.0.0.1:{8000 + len(calls)}")

    def down(state_file: Path, *_: Any) -> dict[str, int]:
        calls.append(("down", Path(state_file).name, None))
        return {}

    monkeypatch.setattr(lifecycle, "up", up)
    monkeypatch.setattr(lifecycle, "down", down)
    return calls


SEQUENCES = [
    # the items' scenarios in order, one lane -> the cluster starts and stops
    (["ray2", "ray2", "ray2"], [("up", 2), ("down", None)]),
    (["ray2", "ray3"], [("up", 2), ("down", None), ("up", 3), ("down", None)]),
    (["ray2", "local", "ray2"], [("up", 2), ("down", None), ("up", 2), ("down", None)]),
    (["local", "remote", "local"], []),
]


@pytest.mark.parametrize("kinds, expected", SEQUENCES, ids=["-".join(s[0]) for s in SEQUENCES])
def test_consecutive_items_of_one_shape_share_one_cluster(
        tmp_path: Path, clusters: list[tuple[str, str, Any]], kinds: list[str],
        expected: list[tuple[str, Any]]) -> None:
    lanes = Lanes(tmp_path)
    with lanes.shared():
        assert os.environ["WORKBOOK_CLUSTER_STATE"] == str(tmp_path / "cluster.json")
        overrides = [lanes.overrides(0, scenario(k)) for k in kinds]

    assert overrides == [[]] * len(kinds)  # the runs find the cluster by its state file
    assert [(c[0], c[2]) for c in clusters] == expected
    assert {c[1] for c in clusters} <= {"cluster.json"}


def test_a_hosting_lane_runs_one_node_items_as_jobs_on_its_own_cluster(
        tmp_path: Path, clusters: list[tuple[str, str, Any]]) -> None:
    before = os.environ.get("WORKBOOK_CLUSTER_STATE")
    lanes = Lanes(tmp_path, 2, host=True)
    with lanes.shared():
        assert os.environ.get("WORKBOOK_CLUSTER_STATE") == before  # one variable, two lanes
        first = lanes.overrides(0, scenario("local"))
        second = lanes.overrides(1, scenario("local"))
        again = lanes.overrides(0, scenario("local"))

    assert first == again == ["launcher=ray", "ray.address=http://127.0.0.1:8001"]
    assert second == ["launcher=ray", "ray.address=http://127.0.0.1:8002"]
    assert [c[:2] for c in clusters] == [("up", "cluster-1.json"), ("up", "cluster-2.json"),
                                         ("down", "cluster-1.json"), ("down", "cluster-2.json")]


def test_with_several_lanes_a_ray_item_starts_its_own_cluster(
        tmp_path: Path, clusters: list[tuple[str, str, Any]]) -> None:
    with Lanes(tmp_path, 2, host=True).shared() as lanes:
        assert lanes.overrides(0, scenario("ray2")) == []
    assert clusters == []


def test_every_cluster_stops_even_when_the_batch_fails(
        tmp_path: Path, clusters: list[tuple[str, str, Any]]) -> None:
    with pytest.raises(RuntimeError), Lanes(tmp_path).shared() as lanes:
        lanes.overrides(0, scenario("ray2"))
        raise RuntimeError("boom")
    assert [c[0] for c in clusters] == ["up", "down"]
