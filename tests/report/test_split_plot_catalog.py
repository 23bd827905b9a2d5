"""The verl panel catalogue is data apart from the drawing: loadable without matplotlib."""

from __future__ import annotations

import subprocess
import sys

import pytest

from workbook.plots.catalog import LIVE_PANELS, PANELS, unit_of


def test_the_catalogue_loads_without_matplotlib() -> None:
    code = "import sys, workbook.plots.catalog; print('matplotlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("metric", "unit"),
    [
        ("actor/pg_loss", "loss"),
        ("actor/pg_clipfrac_lower", "fraction of tokens"),
        ("critic/vf_clipfrac", "fraction of tokens"),  # a panel's second axis
        ("timing_s/gen", "time (s)"),
        ("timing_s/update_actor", "time (s)"),  # in no panel: known by its prefix
        ("perf/total_num_tokens", "value"),
    ],
    ids=["panel-axis", "second-metric", "second-axis", "timing-panel", "timing-prefix", "unknown"],
)
def test_a_metric_is_drawn_with_its_panels_unit(metric: str, unit: str) -> None:
    assert unit_of(metric) == unit


def test_panel_keys_are_unique_and_every_axis_names_metrics() -> None:
    keys = [spec.key for spec in PANELS]
    assert len(keys) == len(set(keys))
    assert all(ax.metrics and ax.ylabel for spec in PANELS for ax in spec.axes)
    assert all(metrics and unit for metrics, unit in LIVE_PANELS)
