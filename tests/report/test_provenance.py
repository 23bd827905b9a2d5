"""Reproducibility facts: what run.json carries, probed without importing the heavy packages."""

from __future__ import annotations

import subprocess
import sys

import pytest

from workbook import provenance


def test_collect_reports_host_hardware_versions_os_python():
    facts = provenance.collect()
    assert {"host", "hardware", "versions", "os", "python"} <= set(facts)
    assert facts["versions"]["verl-workbook"]
    assert facts["python"].endswith(".".join(map(str, sys.version_info[:3])))
    assert facts["hardware"]["cpus"] >= 1


def test_collect_does_not_import_torch_or_vllm():
    code = "import sys; from workbook import provenance; provenance.collect(); "
    code += "print(sorted(m for m in ('torch', 'vllm', 'ray') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_describe_prefers_accelerators_over_the_cpu():
    cpu = {"hardware": {"cpu": "AMD EPYC", "cpus": 2, "memory_gb": 23.5}}
    assert provenance.describe(cpu) == "AMD EPYC, 2 cores, 23.5 GB RAM"
    gpus = {"hardware": {"cpu": "x", "gpus": ["NVIDIA H100", "NVIDIA H100"]}}
    assert provenance.describe(gpus) == "2 x NVIDIA H100"
    npu = {"hardware": {}, "npu_smi": "+---+", "cann_version": "8.3.RC1"}
    assert provenance.describe(npu) == "Ascend NPU (CANN 8.3.RC1)"


def test_git_commit_outside_a_checkout_is_none(tmp_path):
    assert provenance.git_commit(tmp_path) is None


# --- the image a run ran in ------------------------------------------------------------------------

DIGEST = "sha256:" + "ab" * 32
CONTAINER = "cd" * 32


def _files(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize("env, files, expected", [
    ({"WORKBOOK_IMAGE": f"quay.io/ascend/verl@{DIGEST}"}, {},
     {"ref": f"quay.io/ascend/verl@{DIGEST}", "digest": DIGEST, "source": "WORKBOOK_IMAGE"}),
    ({"WORKBOOK_IMAGE": "verl:cpu"}, {"proc/self/cgroup": f"0::/docker/{CONTAINER}\n"},
     {"ref": "verl:cpu", "digest": None, "source": "WORKBOOK_IMAGE"}),
    ({}, {"run/.containerenv": f'engine="podman-5.0"\nimage="docker.io/verl:cpu"\nimageid="{"e" * 64}"\n'},
     {"ref": "docker.io/verl:cpu", "digest": None, "id": "e" * 64, "container": None,
      "source": "/run/.containerenv"}),
    ({}, {"proc/self/cgroup": f"12:memory:/docker/{CONTAINER}\n"},
     {"ref": None, "digest": None, "container": CONTAINER,
      "source": "container hints (/.dockerenv, /proc/self/cgroup)"}),
    ({}, {"proc/self/cgroup": f"0::/kubepods.slice/cri-containerd-{CONTAINER}.scope\n"},
     {"ref": None, "digest": None, "container": CONTAINER,
      "source": "container hints (/.dockerenv, /proc/self/cgroup)"}),
    ({}, {"proc/self/cgroup": "0::/\n", "proc/self/mountinfo":
          f"612 590 0:52 /var/lib/docker/containers/{CONTAINER}/hostname /etc/hostname rw - ext4\n"},
     {"ref": None, "digest": None, "container": CONTAINER,
      "source": "container hints (/.dockerenv, /proc/self/cgroup)"}),
    ({}, {".dockerenv": ""}, {"ref": None, "digest": None, "container": None,
                             "source": "container hints (/.dockerenv, /proc/self/cgroup)"}),
    ({}, {"proc/self/cgroup": "0::/user.slice\n", "proc/self/mountinfo":
          f"700 30 0:60 / /var/lib/docker/containers/{CONTAINER}/mounts/shm rw - tmpfs\n"}, None),
    ({"WORKBOOK_IMAGE": "  "}, {}, None),
], ids=["named-with-digest", "named-wins-over-hints", "podman", "docker-cgroup-v1",
        "kubernetes-containerd", "cgroup-v2-mountinfo", "dockerenv-only",
        "a-host-running-containers", "nothing"])
def test_the_image_is_recorded_as_far_as_anything_says(tmp_path, env, files, expected):
    _files(tmp_path, files)

    assert provenance.image(env, root=tmp_path) == expected


def test_collect_records_the_image_named_by_the_environment(monkeypatch):
    monkeypatch.setenv("WORKBOOK_IMAGE", f"registry/verl@{DIGEST}")

    assert provenance.collect()["image"]["digest"] == DIGEST
