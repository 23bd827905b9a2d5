"""Fixtures of the report tests; helpers live in report_fixtures / report_assertions (importable)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # report_assertions, report_fixtures

from report_fixtures import write_run


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """``make_run(kind)``: a hand-made run directory (passed|regressed|failed|ppo)."""

    def make(kind: str, **kwargs: Any) -> Path:
        return write_run(tmp_path / "runs", kind, **kwargs)

    return make
