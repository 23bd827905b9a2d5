"""The commit on every node: a Ray job of a verl checkout imports that checkout on each node.

The Ray launcher ships the checkout's ``verl`` package in the job's runtime env and, before the
run, asks every node which verl it imports. The cluster test (marker ``ray``) runs a copy of the
installed verl with a marker version on the real 2-node local cluster: the worker node must
import the copy, and run.json must say so.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.edges import NPU_SCENARIO
from workbook import interpreter
from workbook.command.plan import Plan
from workbook.core.layout import RunDir
from workbook.errors import ParamsError
from workbook.launch.cluster.state import ClusterState
from workbook.launch.ray_job import RayJobLauncher, without_checkout
from workbook.launch.verl_probe import answer_in, tree_digest
from workbook.scenario import load_scenario


@pytest.mark.parametrize("pythonpath, kept", [
    ("/src/verl:/plugins", "/plugins"),
    ("/src/verl/", None),  # the same folder spelled with a slash
    ("/plugins:/src/verl:/more", "/plugins:/more"),
    ("/src/verl-fork:/plugins", "/src/verl-fork:/plugins"),  # another folder, not a prefix
])
def test_the_shipped_checkout_leaves_the_jobs_pythonpath(pythonpath: str, kept: str | None) -> None:
    env = without_checkout({"PYTHONPATH": pythonpath, "A": "1"}, "/src/verl")
    assert env.get("PYTHONPATH") == kept and env["A"] == "1"


def test_the_probes_answer_is_its_marked_line_and_nothing_else() -> None:
    log = "ray: starting\nworkbook-verl-probe: {\"nodes\": []}\nbye\n"
    assert answer_in(log) == {"nodes": []}
    assert answer_in("workbook-verl-probe: {not json\n") is None
    assert answer_in("no answer here\n") is None


def test_the_digest_changes_with_a_source_file_and_ignores_caches(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    first = tree_digest(str(tmp_path / "pkg"))
    (tmp_path / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert tree_digest(str(tmp_path / "pkg")) == first
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    assert tree_digest(str(tmp_path / "pkg")) != first


@pytest.mark.ray
def test_a_checkout_copy_is_imported_on_the_worker_node_and_run_json_says_so(
        ray_cluster: ClusterState, run_dir: RunDir, tmp_path: Path) -> None:
    installed = interpreter.ask(sys.executable).verl_dir
    assert installed, "verl is not installed: there is nothing to copy"
    checkout = tmp_path / "verl-checkout"  # a copied tree, as verl's multinode job makes
    shutil.copytree(installed, checkout / "verl", ignore=shutil.ignore_patterns("__pycache__"))
    marker = f"0.0.0+workbook.marker.{run_dir.run_id[-6:]}"
    (checkout / "verl" / "version" / "version").write_text(marker + "\n")
    code = "from importlib.util import find_spec; print('job imports', find_spec('verl').origin)"
    # the plan as build_plan makes it for verl.path: the checkout first on PYTHONPATH
    plan = Plan(argv=[sys.executable, "-c", code], env={"PYTHONPATH": str(checkout)})
    job = RayJobLauncher(ray_cluster.dashboard_url, nodes=2, devices_per_node=1,
                         device_resource="GPU", poll_s=0.5, verl_checkout=str(checkout))

    outcome = job.run(plan, run_dir, timeout_s=300)

    assert outcome.status == "succeeded", outcome.message
    imported = json.loads(run_dir.file("run").read_text())["verl_imported"]
    assert imported["checkout"] == str(checkout) and imported["shipped_as"] == "py_modules"
    assert imported["digest"] == tree_digest(str(checkout / "verl")) != tree_digest(installed)
    nodes = imported["nodes"]
    assert len(nodes) == 2 and [n["head"] for n in nodes].count(False) == 1, nodes
    for node in [*nodes, imported["driver"]]:
        assert node["version"] == marker, node
        assert node["matches"] is True
        # Ray's unpacked copy of the shipped package: neither the image's verl nor the path
        assert not node["file"].startswith((installed, str(checkout))), node["file"]
    assert imported["all_match"] is True
    job_line = next(line for line in run_dir.file("log").read_text().splitlines()
                    if line.startswith("job imports "))
    assert "runtime_resources" in job_line and "py_modules" in job_line, job_line


KUBERAY = NPU_SCENARIO + """\
launcher: kuberay
nodes: 2
kuberay:
  image: verl:npu
  pod:
    volumes: [{name: cache, persistentVolumeClaim: {claimName: verl-cache}}]
    volumeMounts: [{name: cache, mountPath: /root/.cache/}]
"""


@pytest.mark.parametrize("path, refused", [
    ("/root/.cache/verl", False),  # on the cache volume every pod mounts
    ("/root/.cache", False),
    ("/root/.cachex/verl", True),  # beside it, not on it
    ("/workspace/verl", True),
])
def test_a_kuberay_checkout_must_be_on_a_volume_every_pod_mounts(
        tmp_path: Path, path: str, refused: bool) -> None:
    scenario = tmp_path / "rayjob.yaml"
    scenario.write_text(KUBERAY + f"verl: {{path: {path}}}\n")
    if not refused:
        assert load_scenario(scenario, check_files=False).verl.path == path
        return
    with pytest.raises(ParamsError) as err:
        load_scenario(scenario, check_files=False)
    assert err.value.problems == [("verl.path", f"{path} is on no volume every pod mounts "
                                   "(kuberay.pod.volumeMounts): the workers could not import "
                                   "the checkout; put it on the shared cache volume")]
