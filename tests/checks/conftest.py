"""Fixtures for the checks tests; the data builders live in ``handmade.py``."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from tests.checks.handmade import write_run


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """Write ``<tmp>/runs/<scenario>/<run_id>/`` with metrics.jsonl, run.log, run.json, params."""
    return partial(write_run, tmp_path)
