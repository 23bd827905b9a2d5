"""Suite entries in these tests are other machines' scenarios unless a test says otherwise: their
made-up accelerator paths (``/m``, ``$HOME/.cache/models/...``) are validated as a runner's."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def paths_are_the_runners(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBOOK_WHERE", "runner")
