"""What the engine tests share: a scenario file that validates without accelerators."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.edges import NPU_SCENARIO


@pytest.fixture(autouse=True)
def paths_are_the_runners(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scenario's made-up accelerator paths are validated as another machine's."""
    monkeypatch.setenv("WORKBOOK_WHERE", "runner")


@pytest.fixture()
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "params" / "npu.yaml"
    path.parent.mkdir()
    path.write_text(NPU_SCENARIO)
    return path
