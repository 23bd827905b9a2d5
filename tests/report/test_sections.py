"""Report sections: data first, one template for the HTML, and computed once per state of a run."""

from __future__ import annotations

import ast
import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import report_assertions as ra

from workbook.core.status import Verdict
from workbook.report import cache, facts, last_green, outcome, sections
from workbook.report.page import page
from workbook.report.render import render_report
from workbook.report.template import section_html

WORKBOOK = Path(__file__).resolve().parents[2] / "workbook"
BUILT = {"banner": outcome, "checks": outcome, "plots": outcome, "failure": outcome,
         "history": last_green, "parameters": facts, "reproducibility": facts, "preflight": facts}
# the report cells of notebooks/gspo.ipynb, the notebook a local run's report is rendered from
NOTEBOOK_CELLS = ("banner", "checks", "plots", "failure", "history", "parameters", "reproducibility")


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How many times each section was built from its run (rather than taken from the kept)."""
    cache.forget()
    counts: Counter[str] = Counter()
    for key, module in BUILT.items():
        original = getattr(module, f"_{key}")

        def counted(*args: object, _key: str = key, _build: Callable = original) -> object:
            counts[_key] += 1
            return _build(*args)

        monkeypatch.setattr(module, f"_{key}", counted)
    yield counts
    cache.forget()


def test_the_report_reuses_the_sections_the_notebook_cells_computed(make_run, builds):
    run = make_run("regressed")
    cell_run = SimpleNamespace(run_dir=SimpleNamespace(path=run))  # what the cells get: a Run
    shown = {key: getattr(sections, key)(cell_run) for key in NOTEBOOK_CELLS}

    render_report(run)

    assert builds == Counter({key: 1 for key in NOTEBOOK_CELLS})
    page_text = ra.report_html(run)
    assert ra.check_rows(page_text) == ra.check_rows(shown["checks"].html)
    assert ra.panels(page_text) == ra.panels(shown["checks"].html) | ra.panels(shown["plots"].html)
    ra.assert_report(run, verdict="regressed")

    checks = json.loads((run / "checks.json").read_text())
    checks["rows"][0]["message"] = "NEW-MESSAGE-MARKER"
    (run / "checks.json").write_text(json.dumps(checks))
    render_report(run)

    assert builds == Counter({key: 2 for key in NOTEBOOK_CELLS})
    assert "NEW-MESSAGE-MARKER" in ra.report_html(run)


def _update_run(**fields: object) -> Callable[[Path], None]:
    def change(run: Path) -> None:
        info = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**info, **fields}))  # other layout, too

    return change


def _append(name: str, text: str) -> Callable[[Path], None]:
    def change(run: Path) -> None:
        with open(run / name, "a", encoding="utf-8") as handle:
            handle.write(text)

    return change


@pytest.mark.parametrize(
    "change, computed_again",
    [
        pytest.param(_update_run(finished_at="2026-11-29T18:05:00Z"), False, id="finished_at"),
        pytest.param(_update_run(finish_errors=["render the report: boom"]), False,
                     id="finish_errors"),
        pytest.param(_update_run(closed={"report": {"inputs": "abc", "times": 1}}), False,
                     id="closed"),
        pytest.param(_update_run(), False, id="run.json rewritten unchanged"),
        pytest.param(_update_run(status="failed"), True, id="run status"),
        pytest.param(_update_run(verdict={"status": "failed", "reason": "re-judged"}), True,
                     id="run verdict"),
        pytest.param(_append("checks.json", "\n"), True, id="checks.json"),
        pytest.param(_append("metrics.jsonl", "\n"), True, id="metrics.jsonl"),
        pytest.param(_append("run.log", "step:5 - actor/pg_loss:0.01\n"), True, id="run.log"),
        pytest.param(_append("params.resolved.yaml", "# edited\n"), True, id="params"),
        pytest.param(_append("command.sh", "# edited\n"), True, id="command.sh"),
    ],
)
def test_a_kept_section_holds_until_a_file_it_reads_changes(make_run, builds, change,
                                                            computed_again):
    run = make_run("passed")
    sections.report_sections(run)
    change(run)
    sections.report_sections(run)
    times = 2 if computed_again else 1
    assert builds == Counter({key: times for key in NOTEBOOK_CELLS})


def test_sections_are_kept_per_run_and_per_argument(make_run, builds):
    first, second = make_run("failed"), make_run("failed", run_id="20261130T000000Z-second")
    for run in (first, second, first, str(second)):
        sections.failure(run)
    assert builds["failure"] == 2
    assert len(sections.failure(first, lines=3).data.tail) == 3
    assert builds["failure"] == 3


def test_only_the_most_recent_sections_are_kept(make_run, builds, monkeypatch):
    monkeypatch.setattr(cache, "LIMIT", 2)
    run = make_run("passed")
    for key in ("banner", "checks", "plots", "banner", "plots"):
        getattr(sections, key)(run)
    assert builds == Counter(banner=2, checks=1, plots=1)  # the banner was the oldest


def test_a_section_is_data_and_displays_its_html_in_a_notebook(make_run):
    run = make_run("passed")
    shown = sections.banner(run)
    facts = dict(shown.data.facts)
    assert shown.data.verdict == Verdict.PASSED.value
    assert facts["steps reached"] == "4 of 4" and facts["run status"] == "succeeded"
    assert shown._repr_html_() == shown.html and repr(shown) == "<report section banner>"
    assert ra.banner(f"<body>{shown.html}")["reason"] == "all 3 checks passed"
    assert [f.key for f in sections.plots(run).data.figures][:1] == ["policy_loss"]
    assert sections.failure(run).html == ""  # nothing to show for a run that did not fail


@pytest.mark.parametrize(
    "message",
    ['"api_key": "k3yPlanted"', "token: 'k3yPlanted'", "Authorization: Bearer k3yPlanted"],
)
def test_values_are_escaped_so_the_pages_last_redaction_still_finds_them(message):
    line = sections.CheckLine("a \"quoted\" <name>", "", "", "", "", "fail", message)
    block = section_html("checks", sections.Checks((line,)))
    assert 'data-check="a &quot;quoted&quot; &lt;name&gt;"' in block
    assert ra.check_rows(f"<body>{block}") == {'a "quoted" <name>': "fail"}
    assert "k3yPlanted" in block and "k3yPlanted" not in page("t", block)


def test_jinja2_is_imported_by_the_template_module_only():
    importers = set()
    for path in WORKBOOK.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] in ("jinja2", "markupsafe") for n in names):
                importers.add(path.relative_to(WORKBOOK).as_posix())
    assert importers == {"report/template.py"}
