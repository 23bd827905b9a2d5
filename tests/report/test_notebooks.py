"""Every committed notebook: no outputs, the parameters contract, one library call per cell."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from workbook.report import sections
from workbook.run.notebook import declared_parameters

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PARAMETERS = {
    "gspo.ipynb": {
        "scenario": '"params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml"',
        "clip_ratio_low": "None",
        "clip_ratio_high": "None",
        "steps": "None",
        "overrides": "[]",
        "run_root": '""',
        "run_dir": '""',
    },
    "ppo_multinode.ipynb": {
        "scenario": '"params/ppo-tiny-2n1cpu-fsdp2-vllm-ray.yaml"',
        "address": "None",
        "overrides": "[]",
        "run_root": '""',
        "run_dir": '""',
    },
    "compare.ipynb": {"runs": "[]", "sweep": '""', "out": '""'},
    "align.ipynb": {"run_a": '""', "run_b": '""', "thresholds": "{}", "metrics": "[]",
                    "min_throughput_ratio": "None", "out": '""'},
}
FOUND = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
RUN_NOTEBOOKS = [name for name in FOUND if "scenario" in PARAMETERS.get(name, {})]


def test_every_notebook_in_the_folder_has_a_parameters_contract() -> None:
    assert FOUND and set(FOUND) == set(PARAMETERS)


def _cells(name: str) -> list[dict]:
    return json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("name", FOUND)
def test_notebook_is_committed_without_outputs(name):
    for cell in _cells(name):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, cell["source"]


@pytest.mark.parametrize("name", FOUND)
def test_parameters_cell_declares_exactly_the_contract(name):
    tagged = [c for c in _cells(name) if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1
    assert declared_parameters(NOTEBOOKS / name) == PARAMETERS[name]


@pytest.mark.parametrize("name", FOUND)
def test_each_code_cell_makes_at_most_one_library_call(name):
    for cell in _cells(name):
        if cell["cell_type"] != "code" or "parameters" in cell["metadata"].get("tags", []):
            continue
        tree = ast.parse("".join(cell["source"]))
        statements = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
        calls = [s for s in statements if any(isinstance(n, ast.Call) for n in ast.walk(s))]
        assert len(calls) <= 1, cell["source"]


@pytest.mark.parametrize("name", RUN_NOTEBOOKS)
def test_report_cells_are_tagged_for_the_renderer(name):
    tags = [set(c["metadata"].get("tags", [])) for c in _cells(name)]
    assert sum("banner" in t for t in tags) == 1
    assert sum("live" in t for t in tags) == 1
    sources = {
        "".join(c["source"]) for c in _cells(name) if "report" in c["metadata"].get("tags", [])
    }
    assert {"sections.checks(run)", "sections.plots(run)", "sections.failure(run)"} <= sources


@pytest.mark.parametrize("name", RUN_NOTEBOOKS)
def test_report_cells_follow_the_report_order_curves_before_checks(name):
    called = [re.sub(r"^sections\.(\w+)\(run\)$", r"\1", "".join(c["source"]).strip())
              for c in _cells(name) if {"report", "banner"} & set(c["metadata"].get("tags", []))]
    ordered = [s for s in sections.ORDER if s in called]
    assert [s for s in called if s in sections.ORDER] == ordered
    assert called.index("plots") < called.index("checks")


@pytest.mark.parametrize("name", RUN_NOTEBOOKS)
def test_report_cells_are_the_section_registry_in_its_order(name):
    on_ray = "address" in PARAMETERS[name]  # ppo_multinode: a Ray cluster's run, with its pre-flight
    cells = [("".join(c["source"]).strip(), set(c["metadata"].get("tags", [])) & {"report", "banner"})
             for c in _cells(name)]
    assert [(source, tags) for source, tags in cells if tags] == [
        (c.source, {c.tag}) for c in sections.SECTIONS if on_ray or not c.ray_only]
