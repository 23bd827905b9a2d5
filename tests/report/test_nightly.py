"""The index answers a nightly maintainer's questions from the ledger and files alone: which
scenarios are red and since when, what changed since the last green night, which nights
improved, and whether the baseline is stale, with a candidate ready or the command to propose
one."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.history.nights import (
    NEW_TORCH,
    SCENARIO,
    blessed,
    night,
    resolved,
    scaled_night,
    scenario_in,
)
from workbook.cli import main
from workbook.history.ledger import record
from workbook.report import index
from workbook.report.publish import publish

TUNED = "actor_rollout_ref.actor.use_torch_compile"


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    return scenario_in(tmp_path)


def row_of(root: Path) -> str:
    """The nightly table's row of the tiny scenario on CPU, from a freshly written index."""
    page = index.write_index(root).read_text(encoding="utf-8")
    table = re.search(r'<table id="nightly">(.*?)</table>', page, re.DOTALL)
    assert table, "no nightly table in the index"
    row = re.search(rf'<tr data-history="{SCENARIO}" data-hardware="cpu"[^>]*>(.*?)</tr>',
                    table.group(1), re.DOTALL)
    assert row, "no row for the scenario"
    return row.group(0)


def faster(root: Path, scenario: Path, day: int, baseline: Path) -> Path:
    """An improved night of the scenario judged against ``baseline`` (its own numbers)."""
    return scaled_night(root, scenario, day, "improved", factor=0.5 + day / 1000,
                        baseline=baseline)


def closed(*runs: Path) -> list[Path]:
    """Each night recorded in the ledger as closing does, in order, with a report to link."""
    for run in runs:
        (run / "report.html").write_text("<html></html>", encoding="utf-8")
        record(run, run.parents[1])
    return list(runs)


def proposed(root: Path, scenario: Path) -> tuple[Path, Path]:
    """The blessed baseline and a proposal made from three improved nights against it."""
    baseline = blessed(root, scenario)
    closed(*(faster(root, scenario, day, baseline) for day in (10, 11, 12)))
    assert main(["baseline", "propose", str(scenario), "--runs-root", str(root),
                 "--last", "3"]) == 0
    (made,) = (root / "proposals" / f"{SCENARIO}.cpu").iterdir()
    return baseline, made


def test_a_red_scenario_shows_since_when_and_what_changed_since_the_last_green_night(
        tmp_path: Path) -> None:
    compiled = {"overrides": [f"{TUNED}=True"]}
    eager = {"overrides": [f"{TUNED}=False"]}
    _, green, first_red, _ = closed(
        night(tmp_path, 3, settings=compiled), night(tmp_path, 4, settings=compiled),
        night(tmp_path, 5, "regressed", settings=eager, versions=NEW_TORCH),
        night(tmp_path, 6, "failed", settings=eager, versions=NEW_TORCH))

    row = row_of(tmp_path)

    assert 'data-verdict="failed"' in row
    assert (f'data-red-since="{first_red.name}"><a href="{SCENARIO}/{first_red.name}/report.html">'
            "2026-11-05 02:00 UTC</a>") in row
    assert '<li data-change="package">torch: 2.13.0+cpu -&gt; 2.14.0+cpu</li>' in row
    assert f'<li data-change="tuning">{TUNED}: True -&gt; False</li>' in row
    assert f'data-last-green="{green.name}"><a href="{SCENARIO}/{green.name}/report.html">' in row
    assert "verl aaaaaaa, workbook 1111111" in row


def test_a_green_scenario_has_no_since_when(tmp_path: Path) -> None:
    closed(night(tmp_path, 3, "regressed"), night(tmp_path, 4))

    row = row_of(tmp_path)

    assert "data-red-since" not in row and "data-changes" not in row


def test_improved_nights_make_the_baseline_stale_and_offer_the_propose_command(
        tmp_path: Path, scenario: Path) -> None:
    root = tmp_path / "runs"
    baseline = blessed(root, scenario)
    improved = closed(*(faster(root, scenario, day, baseline) for day in (10, 11, 12)))

    row = row_of(root)

    assert 'data-improved="3">3: ' in row
    for run in improved:
        assert f'<span data-improved-night="{run.name}"><a href="{SCENARIO}/{run.name}/' in row
    assert 'data-baseline-state="stale"' in row
    assert "3 nights improved since it was blessed" in row
    assert f"<code>workbook baseline propose {SCENARIO}</code>" in row
    assert "data-candidate" not in row


def test_a_proposal_made_against_the_current_baseline_is_a_candidate_ready_until_it_is_copied(
        tmp_path: Path, scenario: Path) -> None:
    root = tmp_path / "runs"
    baseline, made = proposed(root, scenario)

    row = row_of(root)

    review = f"proposals/{SCENARIO}.cpu/{made.name}/review.html"
    assert f'<span data-candidate>candidate ready: <a href="{review}">review</a>' in row
    assert "data-propose" not in row

    shutil.copyfile(made / baseline.name, baseline)  # the candidate, reviewed, is the baseline now
    row = row_of(root)

    assert "data-candidate" not in row and 'data-baseline-state="current"' in row


def test_the_published_index_says_candidate_ready_too(tmp_path: Path, scenario: Path) -> None:
    root = tmp_path / "runs"
    baseline, made = proposed(root, scenario)

    page = publish(root, tmp_path / "site").read_text(encoding="utf-8")

    review = f"proposals/{SCENARIO}.cpu/{made.name}/review.html"
    assert f'candidate ready: <a href="{review}">review</a>' in page
    assert (tmp_path / "site" / review).is_file()
    assert not (tmp_path / "site" / "proposals" / f"{SCENARIO}.cpu" / made.name
                / baseline.name).exists()


def test_a_candidate_against_an_earlier_content_of_the_baseline_is_not_ready(
        tmp_path: Path, scenario: Path) -> None:
    root = tmp_path / "runs"
    baseline, _ = proposed(root, scenario)
    blessed(tmp_path / "elsewhere", scenario, created="2026-11-20T00:00:00Z")  # blessed anew
    closed(faster(root, scenario, 21, baseline))

    row = row_of(root)

    assert 'data-baseline-state="stale"' in row and "1 night improved since" in row
    assert "data-candidate" not in row and "data-propose" in row


def test_green_nights_in_an_environment_the_baseline_never_saw_make_it_stale(
        tmp_path: Path, scenario: Path) -> None:
    root = tmp_path / "runs"
    baseline = blessed(root, scenario)
    closed(*(scaled_night(root, scenario, day, factor=1.0 + day / 1000, versions=NEW_TORCH,
                          baseline=baseline) for day in (10, 11, 12)))

    row = row_of(root)

    assert 'data-baseline-state="stale"' in row
    assert "the environment moved: torch: 2.13.0+cpu -&gt; 2.14.0+cpu" in row
    assert 'data-improved="0"' in row


def test_too_few_green_nights_to_propose_says_why(tmp_path: Path, scenario: Path) -> None:
    root = tmp_path / "runs"
    baseline = tmp_path / "b.cpu.json"
    baseline.write_text('{"metrics": {"timing_s/step": {"value": 9.0}}}', encoding="utf-8")
    settings = resolved(scenario)
    closed(night(root, 10, "improved", baseline=baseline, settings=settings),
           night(root, 11, "regressed", baseline=baseline, settings=settings))

    row = row_of(root)

    assert 'data-baseline-state="stale"' in row and "data-propose" not in row
    assert "1 green run with these settings (at least 3 needed" in row
