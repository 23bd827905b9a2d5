"""Reading a real run's check rows, and setting timing assertions aside where timings cannot be
judged (shared by the e2e modules)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import CliRun


def baseline_rows(run: CliRun) -> dict[str, dict[str, Any]]:
    return {r["metric"]: r for r in run.json("checks.json")["rows"] if r["kind"] == "baseline"}


def timings_judged_here(row: dict[str, Any]) -> None:
    """Skip what is left of a test when this machine's timings were set aside: on another CPU,
    a host busy with other VMs or a busier machine than the baseline's, a timing cannot be
    judged (the row says why), so it can neither pass nor fail here."""
    if row["status"] == "not_comparable" and "replayed" not in row["message"]:
        pytest.skip(f"{row['metric']}: timings not comparable on this machine: {row['message']}")
