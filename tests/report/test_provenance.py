"""Reproducibility facts: what run.json carries, probed without importing the heavy packages."""

from __future__ import annotations

import subprocess
import sys

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
