"""What an alignment leaves: its record, its page (from notebooks/align.ipynb's report cells),
its JUnit suite and its line in the runs index."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml, SystemOut

from tests.align.runs import changed, records, write_run
from workbook.align.junit import alignment_suite
from workbook.checks.junit import write_junit
from workbook.core.layout import ALIGNMENT_FILE, ALIGNMENT_PAGE, ALIGNMENTS_DIR
from workbook.report import alignment
from workbook.report.index import write_index
from workbook.report.render import CALLS
from workbook.run.life import close

LOSS = "actor/pg_loss"
# Assembled at run time: no secret-looking literal in the source.
SECRETS = {"token": "hf" + "_" + "PlantedAlign" + "x7Q2" * 5, "password": "planted" + "Pass" + "42z",
           "url": "plantedUrlPw" + "0042", "key": "plantedApiKey" + "9931"}
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "align.ipynb"


def aligned_pair(root: Path) -> tuple[Path, Path]:
    """Run A and run B (pg_loss doubled), secrets planted in both, run B on another torch,
    A made deterministic and B not."""
    planted = {"env": {"HF_TOKEN": SECRETS["token"], "DB_PASSWORD": SECRETS["password"]},
               "overrides": [f"trainer.api_key={SECRETS['key']}", "data.shuffle=False"]}
    image = {"image": {"ref": f"https://bob:{SECRETS['url']}@registry.invalid/verl:1"}}
    a = write_run(root, "A", records(), deterministic=True, params=planted, run=image)
    b = write_run(root, "B", changed(records(), LOSS, lambda step, v: 2 * v), params=planted,
                  run={**image, "versions": {"verl": "0.9.1", "torch": "2.14.0+cpu"}})
    return a, b


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> alignment.Record:
    """One alignment rendered and indexed (the tests below only read it)."""
    root = tmp_path_factory.mktemp("aligned") / "runs"
    record = alignment.prepare(*aligned_pair(root))
    close(record, announce=False)
    return record


def test_the_record_goes_under_the_runs_root_and_the_page_beside_it(
        record: alignment.Record) -> None:
    root = record.folder.parents[1]
    assert record.folder.parent.name == ALIGNMENTS_DIR
    assert Path(record.alignment.a.path).parents[1] == root  # the runs' own root
    data = json.loads((record.folder / ALIGNMENT_FILE).read_text())
    assert data["verdict"]["status"] == "not aligned" and data["verdict"]["exit_code"] == 1
    loss = next(m for m in data["metrics"] if m["metric"] == LOSS)
    assert (loss["threshold_pct"], loss["mae_pct"], loss["first_step_beyond"]) == (2.0, 100.0, 1)
    assert [s["step"] for s in loss["steps"]] == [1, 2, 3, 4]
    assert loss["paired_test"]["above"] == 4
    assert data["run_b"]["facts"]["versions"]["torch"] == "2.14.0+cpu"
    assert (record.folder / ALIGNMENT_PAGE).is_file()


def test_the_page_shows_the_verdict_the_table_the_curves_and_the_runs(
        record: alignment.Record) -> None:
    page = record.page.read_text()

    banner = re.search(r'<section[^>]*id="verdict-banner"[^>]*data-verdict="([^"]+)"', page) or \
        re.search(r'<section[^>]*data-verdict="([^"]+)"[^>]*id="verdict-banner"', page)
    assert banner and banner.group(1) == "not aligned"
    assert page.index('id="verdict-banner"') < page.index('data-section="alignment-metrics"')
    loss = re.search(rf'<tr[^>]*data-metric="{LOSS}"[^>]*>(.*?)</tr>', page, re.DOTALL)
    assert loss and 'data-status="beyond"' in loss.group(0)
    assert re.search(r'data-col="mae">100 %<', loss.group(1))
    assert re.search(r'data-col="first-beyond">1<', loss.group(1))
    assert set(re.findall(r'data-panel="align:([^"]+)"', page)) >= {LOSS, "critic/rewards/mean"}
    warnings = [html.unescape(w) for w in re.findall(r"data-warning[^>]*>(.*?)</p>", page)]
    assert any("run B was not made with deterministic: true" in w for w in warnings)
    assert not any("run A was not made" in w for w in warnings)
    differing = re.findall(r'<tr data-differs="?"? data-fact="([^"]+)"', page)
    assert "versions/torch" in differing and "versions/verl" not in differing
    assert 'href="../../gspo-tiny-1n1cpu-fsdp2-vllm/A/report.html"' in page


def test_the_page_is_self_contained_and_carries_no_planted_secret(
        record: alignment.Record, tmp_path: Path) -> None:
    root = record.folder.parents[1]
    junit = write_junit([alignment_suite(record.alignment)], tmp_path / "junit.xml")

    page = record.page.read_text()
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert all(src.startswith("data:image/png;base64,")
               for src in re.findall(r'<img[^>]*src="([^"]+)"', page))
    for path in (record.page, record.folder / ALIGNMENT_FILE, junit, root / "index.html"):
        text = path.read_text()
        assert not [k for k, v in SECRETS.items() if v in text], path


def test_the_junit_suite_reads_back_with_a_failure_per_metric_beyond(
        record: alignment.Record, tmp_path: Path) -> None:
    path = write_junit([alignment_suite(record.alignment, page=str(record.page))],
                       tmp_path / "junit.xml")

    (suite,) = list(JUnitXml.fromfile(str(path)))
    cases = {case.name: case for case in suite}
    assert suite.name == "alignment A vs B"
    assert set(cases) >= {"steps reached", LOSS, "critic/rewards/mean", "actor/grad_norm"}
    (failure,) = [r for r in cases[LOSS].result if isinstance(r, Failure)]
    assert failure.message == "actor/pg_loss 100 % > 2 %, beyond it from step 1"
    assert not cases["critic/rewards/mean"].result and not cases["steps reached"].result
    assert suite.failures == 1
    out = suite.child(SystemOut)
    assert out is not None and "run B was not made with deterministic: true" in out.text
    assert {p.name: p.value for p in suite.properties()}["verdict"] == "not aligned"


def test_the_index_lists_alignments_with_their_verdict(record: alignment.Record) -> None:
    page = write_index(record.folder.parents[1]).read_text()

    label = f"{ALIGNMENTS_DIR}/{record.folder.name}"
    item = re.search(rf'<li data-alignment="{label}">(.*?)</li>', page)
    assert item and "not aligned" in item.group(1) and "A vs B" in item.group(1)
    assert f'href="{label}/{ALIGNMENT_PAGE}"' in item.group(1)


@pytest.mark.parametrize("tag", ["report", "banner"])
def test_every_report_cell_of_the_notebook_is_a_section_the_page_renders(tag: str) -> None:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    calls = ["".join(c["source"]).strip() for c in cells
             if tag in c["metadata"].get("tags", [])]
    assert calls and all(re.sub(r"\(\w+\)$", "", call) in CALLS for call in calls)


def test_the_notebook_run_by_papermill_leaves_the_page_workbook_align_leaves(
        record: alignment.Record, tmp_path: Path) -> None:
    """JupyterLab's path (the notebook's own cells, in a kernel) and the command's (the report
    cells rendered from the record) give the same sections."""
    from workbook.run.notebook import execute

    out = tmp_path / "from-notebook"
    execute(NOTEBOOK, tmp_path, {"run_a": record.alignment.a.path,
                                 "run_b": record.alignment.b.path, "out": str(out)}, stream=False)

    def metrics_table(page: Path) -> str:
        found = re.search(r'<section data-section="alignment-metrics">.*?</section>',
                          page.read_text(), re.DOTALL)
        assert found
        return found.group(0)

    assert metrics_table(out / ALIGNMENT_PAGE) == metrics_table(record.page)
    assert json.loads((out / ALIGNMENT_FILE).read_text())["verdict"] == json.loads(
        (record.folder / ALIGNMENT_FILE).read_text())["verdict"]
