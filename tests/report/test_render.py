"""report.html from hand-made run directories: contents, order, self-containment, fallbacks."""

from __future__ import annotations

import html
import json
from pathlib import Path

import nbformat
import report_assertions as ra
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from workbook.report.render import render_report
from workbook.run.notebook import execute


def test_passed_run_report_shows_verdict_checks_and_panels(make_run):
    run = make_run("passed")
    render_report(run)
    facts = ra.assert_report(run, verdict="passed")
    assert facts["reason"] == "all 3 checks passed"
    assert facts["scenario"] == "gspo-tiny-1n1cpu-fsdp2-vllm"
    assert facts["steps reached"] == "4 of 4"
    assert facts["duration"] == "2 min 01 s"
    page = ra.report_html(run)
    assert ra.check_rows(page) == {
        "run completed": "pass",
        "actor/pg_loss finite": "pass",
        "timing_s/step vs baseline": "pass",
    }
    assert "critic" not in ra.panels(page)  # GSPO has no critic
    assert not any(p.startswith("regression:") for p in ra.panels(page))


def test_regressed_run_report_draws_the_failed_metric_against_its_band(make_run):
    run = make_run("regressed")
    render_report(run)
    ra.assert_report(run, verdict="regressed")
    page = ra.report_html(run)
    assert ra.check_rows(page)["actor/pg_clipfrac vs baseline"] == "fail"
    assert "regression:actor/pg_clipfrac" in ra.panels(page)
    assert "wb-row-fail" in page


def test_failed_run_report_shows_diagnosis_evidence_and_log_tail(make_run):
    run = make_run("failed")
    render_report(run)
    ra.assert_report(run, verdict="failed", has_metrics=False)
    page = ra.report_html(run)
    assert "config_error" in page
    assert "Key 'clip_ratio_hgh' is not in struct" in html.unescape(page)
    log = (run / "run.log").read_text().splitlines()
    assert ra.log_tail(page) == log[-50:]
    assert ra.panels(page) == set()


def test_ppo_report_has_critic_panel(make_run):
    run = make_run("ppo")
    render_report(run)
    page = ra.report_html(run)
    assert "critic" in ra.panels(page)
    assert ra.panel_metrics(page, "critic") == ["critic/vf_loss", "critic/vf_clipfrac"]


def test_report_size_stays_small(make_run):
    run = make_run("regressed")
    size = render_report(run).stat().st_size
    assert size < 2_000_000


def _report_notebook(path: Path) -> Path:
    """A notebook shaped like notebooks/gspo.ipynb, minus the verl launch."""

    def tagged(cell, tag):
        cell.metadata["tags"] = [tag]
        return cell

    nb = new_notebook(
        cells=[
            new_markdown_cell("# Report test"),
            tagged(new_code_cell('run_dir = ""\nsecret_setting = "x"'), "parameters"),
            new_code_cell("from workbook.report import sections"),
            tagged(new_code_cell('print("LIVE-FRAME-MARKER")'), "live"),
            tagged(new_markdown_cell("NOTEBOOK-ONLY-NARRATIVE"), "notebook-only"),
            tagged(new_code_cell("sections.checks(run_dir)"), "report"),
            tagged(new_code_cell("sections.plots(run_dir)"), "report"),
            tagged(new_code_cell("sections.banner(run_dir)"), "banner"),
            tagged(new_code_cell("sections.failure(run_dir)"), "report"),
        ]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(path))
    return path


def test_report_is_the_runs_template_with_its_outputs_for_this_run(make_run, tmp_path):
    run = make_run("regressed")
    template = _report_notebook(tmp_path / "template.ipynb")
    info = json.loads((run / "run.json").read_text())
    info.update(notebook=str(template), notebook_parameters={"secret_setting": "PARAM-VALUE-MARKER"})
    (run / "run.json").write_text(json.dumps(info))

    render_report(run)

    page = ra.report_html(run)
    ra.assert_report(run, verdict="regressed")
    for absent in (
        "LIVE-FRAME-MARKER",
        "PARAM-VALUE-MARKER",
        "NOTEBOOK-ONLY-NARRATIVE",
        "papermill",
        "sections.banner",
        "from workbook.report import",
    ):
        assert absent not in page, absent
    assert "Built from the run directory" not in page and "# Report test" not in page
    assert "Report test" in page  # the template's title cell
    assert "regression:actor/pg_clipfrac" in ra.panels(page)
    executed = json.loads((run / "notebook.ipynb").read_text())  # written: the run had none
    assert any("injected-parameters" in c["metadata"].get("tags", []) for c in executed["cells"])


def test_papermill_executes_a_notebook_into_the_run_directory_redacted(make_run, tmp_path):
    run = make_run("regressed")
    template = _report_notebook(tmp_path / "template.ipynb")

    execute(template, run, {"run_dir": str(run), "secret_setting": "hf_abcdefghijklmnop"},
            stream=False)

    executed = (run / "notebook.ipynb").read_text()
    assert "LIVE-FRAME-MARKER" in executed and "hf_abcdefghijklmnop" not in executed


def test_a_broken_run_notebook_does_not_matter_and_a_missing_template_falls_back(make_run):
    run = make_run("failed")
    (run / "notebook.ipynb").write_text('{"cells": [', encoding="utf-8")
    render_report(run)
    assert "Built from the run directory" not in ra.report_html(run)

    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "notebook": "/nowhere/gone.ipynb"}))
    render_report(run)
    page = ra.report_html(run)
    ra.assert_report(run, verdict="failed", has_metrics=False)
    assert "Built from the run directory" in page


def test_run_directory_with_only_a_log_still_gets_a_report(tmp_path):
    run = tmp_path / "runs" / "x" / "20261129T000000Z-abcdef"
    run.mkdir(parents=True)
    (run / "run.log").write_text("Traceback (most recent call last):\nKeyError: 'boom'\n")
    render_report(run)
    facts = ra.banner(ra.report_html(run))
    assert facts["verdict"] == "unjudged"


def test_preflight_section_shows_nodes_and_resources_from_the_ray_launcher(make_run):
    from workbook.report import sections

    run = make_run("ppo", scenario="ppo-tiny-2n1cpu-fsdp2-vllm-ray")
    assert "No pre-flight result" in sections.preflight(run).html
    info = json.loads((run / "run.json").read_text())
    node = {
        "node_id": "abc123def4567890",
        "ip": "10.0.0.5",
        "alive": True,
        "is_head": True,
        "resources": {"CPU": 1.0, "GPU": 1.0, "memory": 2 * 1024**3, "node:10.0.0.5": 1.0},
    }
    info["ray_job"] = {
        "preflight": {
            "address": "http://127.0.0.1:8265",
            "nodes": [node, dict(node, ip="10.0.0.6", is_head=False)],
            "required": {"nodes": 2, "devices_per_node": 1, "device_resource": "GPU"},
        }
    }
    (run / "run.json").write_text(json.dumps(info))
    html = sections.preflight(run).html
    assert html.count("<tr data-node>") == 2
    assert "10.0.0.5 (head)" in html and "CPU 1, GPU 1, memory 2.0 GB" in html
    assert "2 nodes x 1 GPU per node" in html and "node:10" not in html
