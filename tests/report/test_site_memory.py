"""The published site is the nightly's memory: nights on fresh runners remember the ones before.

Each night runs its cron slots on EMPTY runs roots seeded only from the site as the night before
left it (a checkout of the Pages branch at the slot's start), each slot publishes its runs root
into an artifact folder and the artifact is published into the site (the recipe's store job).
The runs are the history tests' hand-made nights (real verl 0.9.1 file-logger metrics, run.json
with a CPU run's provenance), closed as closing does: report rendered, ledger recorded.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.history.nights import NEW_TORCH, SCENARIO, VERSIONS, night
from workbook.cli import main
from workbook.core.layout import PRUNED_FILE, RUN_FILES, SEEDED_FILE, SUITE_FILE, SUITES_DIR
from workbook.history.ledger import LEDGER_DIR, read_all, read_file, record
from workbook.report import index as index_module
from workbook.report.publish import merged_suite, publish, publish_site
from workbook.report.render import render_report
from workbook.report.seed import seed

OTHER = "grpo-tiny-1n1cpu-fsdp2-vllm"  # the second slot's job
SUITE = "nightly"
# (day, the 17:00 job's verdict, its package versions); the 18:00 job passes every night
NIGHTS = [(1, "passed", VERSIONS), (2, "suspect", NEW_TORCH), (3, "regressed", NEW_TORCH)]


def job(root: Path, day: int, hour: int, scenario: str, verdict: str,
        versions: dict[str, str]) -> Path:
    """One cron slot's job of a suite night, closed in its runs root as closing does: judged
    (hand-made), report rendered, ledger recorded; its entry in the night's ``suite.json``."""
    night_dir = root / SUITES_DIR / SUITE / f"2026-11-{day:02d}"
    key = f"{hour - 16:02d}-{scenario}"
    run = night(root, day, verdict, versions=versions, hour=hour, folder=night_dir / key)
    if scenario != SCENARIO:
        data = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**data, "scenario": scenario}))
    render_report(run)  # closing's order: the report, then the ledger
    record(run, root)
    kept = night_dir / SUITE_FILE
    held = json.loads(kept.read_text()) if kept.is_file() else {"suite": SUITE, "entries": []}
    held["entries"] = [e for e in held["entries"] if e["key"] != key] + [
        {"key": key, "scenario": scenario, "status": verdict, "run_dir": str(run),
         "report": str(run / "report.html"), "reason": verdict}]
    kept.write_text(json.dumps(held))
    return run


def slot(runner: Path, memory: Path | None, day: int, hour: int, scenario: str, verdict: str,
         versions: dict[str, str]) -> tuple[Path, Path]:
    """A slot on a fresh runner: an empty runs root seeded from ``memory`` (the site as the
    slot found it), its job run, its runs root published to an artifact. (run, artifact)"""
    root = runner / f"{day}-{hour}" / "runs"
    assert not root.exists()
    if memory is not None:
        seed(memory, root)
    run = job(root, day, hour, scenario, verdict, versions)
    artifact = runner / f"{day}-{hour}" / "out" / "site"
    publish(root, artifact)
    return run, artifact


@pytest.fixture
def charts(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The labels (nights) of the last trend chart the index drew per scenario."""
    drawn: dict[str, list[str]] = {}
    real = index_module.trend_chart

    def trend_chart(title: str, labels: list[str], *args: Any, **kwargs: Any) -> bytes:
        drawn[title.split(":")[0]] = list(labels)
        return real(title, labels, *args, **kwargs)

    monkeypatch.setattr(index_module, "trend_chart", trend_chart)
    return drawn


@pytest.fixture(scope="module")
def three_nights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three nights of two slots; each night's slots seed from the site the night before left
    (both start before either publishes), then publish in slot order. Read only: a test that
    publishes again works on its own copy (:func:`copied`)."""
    tmp_path = tmp_path_factory.mktemp("nights")
    site = tmp_path / "site"
    runs: dict[tuple[int, int], Path] = {}
    for day, verdict, versions in NIGHTS:
        memory = None
        if site.exists():
            memory = tmp_path / f"checkout-{day}"  # the Pages branch as the night began
            shutil.copytree(site, memory)
        done = [slot(tmp_path / "runner", memory, day, 17, SCENARIO, verdict, versions),
                slot(tmp_path / "runner", memory, day, 18, OTHER, "passed", versions)]
        for (run, artifact), hour in zip(done, (17, 18), strict=True):
            publish(artifact, site)
            runs[(day, hour)] = run
    return {"site": site, "runs": runs, "tmp": tmp_path}


def copied(nights: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of the three nights' site to publish into."""
    return Path(shutil.copytree(nights["site"], tmp_path / "site"))


def _between(page: str, pattern: str) -> str:
    found = re.search(pattern, page, re.DOTALL)
    assert found, f"no {pattern!r} in the page"
    return found.group(1)


def test_the_third_nights_report_names_the_last_green_night_and_what_changed(
        three_nights: dict[str, Any]) -> None:
    site, runs = three_nights["site"], three_nights["runs"]
    green, red = runs[(1, 17)], runs[(3, 17)]
    published = site / red.relative_to(red.parents[4]) / RUN_FILES["report"]

    block = _between(published.read_text(), r'<section data-section="last-green">(.*?)</section>')

    assert f'data-last-green="{green.name}"' in block and "2026-11-01 17:00 UTC" in block
    assert re.findall(r'<tr data-change="(\w+)"><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>',
                      block) == [("package", "torch", "2.13.0+cpu", "2.14.0+cpu")]


def test_the_sites_index_names_the_last_green_night_and_what_changed(
        three_nights: dict[str, Any]) -> None:
    site, runs = three_nights["site"], three_nights["runs"]
    green, red = runs[(1, 17)], runs[(3, 17)]
    page = (site / "index.html").read_text()

    row = _between(page, rf'(<tr data-history="{SCENARIO}" data-hardware="cpu".*?</tr>)')

    assert 'data-verdict="regressed"' in row and f'data-red-since="{red.name}"' in row
    assert '<li data-change="package">torch: 2.13.0+cpu -&gt; 2.14.0+cpu</li>' in row
    href = f"{SUITES_DIR}/{SUITE}/2026-11-01/01-{SCENARIO}/{green.name}/report.html"
    assert f'data-last-green="{green.name}"><a href="{href}">' in row
    assert (site / href).is_file()


def test_the_index_trends_hold_every_night(three_nights: dict[str, Any],
                                           charts: dict[str, list[str]], tmp_path: Path) -> None:
    site, runs = copied(three_nights, tmp_path), three_nights["runs"]
    publish(three_nights["tmp"] / "runner" / "3-18" / "out" / "site", site)  # the index anew

    page = (site / "index.html").read_text()

    days = ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert charts == {SCENARIO: days, OTHER: days}
    assert sorted(re.findall(r'<tr data-scenario="[^"]+" data-verdict="[^"]+" data-run="([^"]+)"',
                             page)) == sorted(r.name for r in runs.values())
    marks = _between(page, rf'<figure data-trend="{SCENARIO}">(.*?)</figure>')
    assert f'<li data-change="{runs[(2, 17)].name}">2026-11-02' in marks and "torch" in marks


def test_a_slot_published_after_another_keeps_the_others_jobs(
        three_nights: dict[str, Any]) -> None:
    site, runs = three_nights["site"], three_nights["runs"]
    first = runs[(3, 17)]
    night_dir = site / SUITES_DIR / SUITE / "2026-11-03"

    record = json.loads((night_dir / SUITE_FILE).read_text())

    assert [e["key"] for e in record["entries"]] == [f"01-{SCENARIO}", f"02-{OTHER}"]
    assert (night_dir / f"01-{SCENARIO}" / first.name / RUN_FILES["report"]).is_file()
    page = (site / "index.html").read_text()
    suite = _between(page, r'<section data-suite="nightly" data-night="2026-11-03">(.*?)</section>')
    assert f'data-entry="01-{SCENARIO}"' in suite and f'data-entry="02-{OTHER}"' in suite
    ledgers = read_all(site, store=False)
    assert {key: len(entries) for key, entries in ledgers.items()} == {
        (SCENARIO, "cpu"): 3, (OTHER, "cpu"): 3}


def test_a_seeded_runs_root_judges_against_every_night_and_publishes_only_its_own(
        three_nights: dict[str, Any], tmp_path: Path) -> None:
    site, runs = three_nights["site"], three_nights["runs"]
    root = tmp_path / "night4"

    done = seed(site, root)

    assert sorted(Path(r).name for r in done.runs) == sorted(r.name for r in runs.values())
    assert done.entries == 6 and read_all(root, store=False) == read_all(site, store=False)
    taken = root / runs[(1, 17)].relative_to(runs[(1, 17)].parents[4])
    assert sorted(p.name for p in taken.iterdir()) == sorted(
        RUN_FILES[k] for k in ("run", "checks", "params", "command_json", "metrics"))
    assert json.loads((root / SEEDED_FILE).read_text())["runs"] == sorted(done.runs)
    assert seed(site, root).runs == [] and seed(site, root).entries == 0  # again: nothing new
    fourth = job(root, 4, 17, SCENARIO, "passed", NEW_TORCH)
    artifact = publish_site(root, tmp_path / "artifact4")
    assert {p.parent.name for p in artifact.copied if p.name == "run.json"} == {fourth.name}


def test_retention_keeps_the_ledger_and_an_index_line_of_every_night(
        three_nights: dict[str, Any], charts: dict[str, list[str]], tmp_path: Path) -> None:
    site, runs = copied(three_nights, tmp_path), three_nights["runs"]
    old = site / runs[(1, 17)].relative_to(runs[(1, 17)].parents[4])
    kept = site / runs[(3, 17)].relative_to(runs[(3, 17)].parents[4])

    assert main(["publish", str(three_nights["tmp"] / "runner" / "3-18" / "out" / "site"),
                 str(site), "--keep-nights", "1"]) == 0

    assert not (old / RUN_FILES["report"]).exists() and not (old / RUN_FILES["log"]).exists()
    assert json.loads((old / PRUNED_FILE).read_text())["removed"] == ["report.html", "run.log"]
    assert (kept / RUN_FILES["report"]).is_file() and not (kept / PRUNED_FILE).exists()
    page = (site / "index.html").read_text()
    line = _between(page, rf'(<tr data-scenario="{SCENARIO}" data-verdict="passed" '
                          rf'data-run="{old.name}">.*?</tr>)')
    assert "data-pruned" in line
    assert charts[SCENARIO] == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert sum(len(e) for e in read_all(site, store=False).values()) == 6


def test_a_pruned_copy_never_overwrites_the_pages_a_site_kept(tmp_path: Path) -> None:
    root, full, pruned = tmp_path / "runs", tmp_path / "full", tmp_path / "pruned"
    run = job(root, 1, 17, SCENARIO, "passed", VERSIONS)
    job(root, 2, 17, SCENARIO, "passed", VERSIONS)
    publish(root, full)
    publish(root, pruned, keep_nights=1)

    publish(pruned, full)

    rel = run.relative_to(root)
    assert (full / rel / RUN_FILES["report"]).is_file() and not (full / rel / PRUNED_FILE).exists()
    assert (pruned / rel / PRUNED_FILE).is_file()


def test_publishing_in_either_order_or_twice_leaves_the_same_site(tmp_path: Path) -> None:
    artifacts = []
    for hour, scenario in ((17, SCENARIO), (18, OTHER)):
        _, artifact = slot(tmp_path / "runner", None, 1, hour, scenario, "passed", VERSIONS)
        artifacts.append(artifact)
    one, other = tmp_path / "one", tmp_path / "other"
    for artifact in artifacts:
        publish(artifact, one)
    for artifact in reversed(artifacts):
        publish(artifact, other)
    ledger = sorted((one / LEDGER_DIR).glob("*.jsonl"))
    before = {p.name: p.read_bytes() for p in ledger}

    publish(artifacts[0], one)

    assert {p.name: p.read_bytes() for p in ledger} == before  # again: not a line added
    assert _files(one) == _files(other)
    for path in ledger:
        assert read_file(path) == read_file(other / LEDGER_DIR / path.name)
    suite = f"{SUITES_DIR}/{SUITE}/2026-11-01/{SUITE_FILE}"
    assert (json.loads((one / suite).read_text())["entries"]
            == json.loads((other / suite).read_text())["entries"])


def _files(site: Path) -> set[str]:
    return {p.relative_to(site).as_posix() for p in site.rglob("*")
            if p.is_file() and not p.relative_to(site).parts[0].startswith(".")}


@pytest.mark.parametrize(
    ("theirs", "ours", "keys"),
    [
        pytest.param({"entries": [{"key": "01-a", "status": "passed"}]},
                     {"entries": [{"key": "02-b", "status": "failed"}]}, ["01-a", "02-b"],
                     id="another-slots-entry-stays"),
        pytest.param({"entries": [{"key": "02-b", "status": "running"}]},
                     {"entries": [{"key": "02-b", "status": "failed"}]}, ["02-b"],
                     id="ours-replaces-the-same-key"),
        pytest.param({"entries": "not a list"}, {"entries": [{"key": "01-a"}]}, ["01-a"],
                     id="a-broken-record-loses-nothing-of-ours"),
        pytest.param({"entries": [{"no": "key"}, {"key": "03-c"}]}, {}, ["03-c"],
                     id="an-entry-without-a-key-is-dropped"),
    ],
)
def test_a_suite_nights_record_merges_by_key(theirs: dict[str, Any], ours: dict[str, Any],
                                             keys: list[str]) -> None:
    merged = merged_suite(theirs, ours)

    assert [e["key"] for e in merged["entries"]] == keys
    assert [e["key"] for e in merged_suite(ours, theirs)["entries"]] == keys  # either order
    for entry in ours.get("entries", []):
        assert entry in merged["entries"]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        pytest.param(["seed", "--from", "{tmp}/missing", "{tmp}/runs"], "not a folder",
                     id="missing-site"),
        pytest.param(["seed", "--from", "{tmp}/site", "{tmp}/site/runs"], "inside",
                     id="runs-root-inside-the-site"),
        pytest.param(["publish", "{tmp}/runs", "{tmp}/out", "--keep-nights", "0"],
                     "at least 1", id="no-night-kept"),
    ],
)
def test_bad_seed_or_retention_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            argv: list[str], said: str) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "runs").mkdir()

    try:
        code = main([a.format(tmp=tmp_path) for a in argv])
    except SystemExit as exc:  # argparse's way of refusing an option
        code = exc.code

    assert code == 2 and said in capsys.readouterr().err


def test_a_site_published_before_it_kept_a_ledger_is_seeded_with_every_night(
        tmp_path: Path) -> None:
    root = tmp_path / "runs"
    first = job(root, 1, 17, SCENARIO, "passed", VERSIONS)
    job(root, 2, 17, SCENARIO, "regressed", NEW_TORCH)
    site = tmp_path / "site"
    publish(root, site)
    shutil.rmtree(site / LEDGER_DIR)  # as publish wrote sites before it kept the ledger

    done = seed(site, tmp_path / "fresh")

    nights = read_all(tmp_path / "fresh", store=False)[(SCENARIO, "cpu")]
    assert done.entries == 2 and [e.run_id for e in nights][0] == first.name
    assert [e.versions["torch"] for e in nights] == ["2.13.0+cpu", "2.14.0+cpu"]
