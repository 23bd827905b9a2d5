"""The published site of real runs, opened in a real browser: real verdicts, valid files, no secrets.

``workbook publish`` runs on the session's runs root after the smoke suite and the faulty variants
(runs the other e2e tests already made; none is added here). The published index must show each
run's own verdict (a redaction that breaks ``run.json`` makes every run "unjudged"), every
published JSON file must parse, and neither a planted secret nor a link may reach the site.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.chromium import ARTIFACTS, chromium
from tests.conftest import SECRETS, SuiteRun, workbook_cli
from tests.report.glance import (
    WIDTHS,
    first_screen_problems,
    overflow,
    plots_before_checks,
    screenshot_dir,
)
from tests.report.glance import top as glance_top

pytestmark = [pytest.mark.verl, pytest.mark.browser]
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


@pytest.fixture(scope="module")
def sites(smoke: SuiteRun, variants: SuiteRun, session_env: dict[str, str],
          tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, dict[str, str]]]:
    """Each suite's runs tree published, with the verdict the suite recorded per run id (the truth).

    The smoke suite ran into the session's runs root; the variants (which carry the planted
    secrets) into a folder of their own, published the same way.
    """
    published = []
    for suite, tree in ((smoke, session_env["WORKBOOK_RUNS"]), (variants, str(variants.directory))):
        dest = tmp_path_factory.mktemp("published") / "site"
        done = workbook_cli(["publish", tree, str(dest)], session_env, timeout=600)
        assert done.exit_code == 0, done.output[-3000:]
        truth = {Path(r["run_dir"]).name: r["status"] for r in suite.records.values()
                 if r.get("run_dir") and r.get("status") not in (None, "pending", "running")}
        published.append((dest, truth))
    verdicts = {v for _, truth in published for v in truth.values()}
    assert verdicts >= {"passed", "regressed", "failed"}, published
    return published


@pytest.mark.parametrize("which", [0, 1], ids=["smoke", "variants"])
def test_every_published_json_file_parses_and_nothing_is_a_link(sites, which) -> None:
    dest, _ = sites[which]
    files = [p for p in dest.rglob("*") if p.is_file() or p.is_symlink()]
    assert not [p for p in files if p.is_symlink()]
    structured = [p for p in files if p.suffix == ".json"]
    assert len(structured) >= 4
    for path in structured:
        json.loads(path.read_text())  # raises on a redaction that broke the structure
    for path in dest.rglob("metrics.jsonl"):
        for line in path.read_text().splitlines():
            if line.strip():
                json.loads(line)


def test_no_planted_secret_reaches_the_published_site(sites) -> None:
    leaks = [(str(p), s) for dest, _ in sites for p in dest.rglob("*") if p.is_file()
             for s in SECRETS if s.encode() in p.read_bytes()]
    assert leaks == []


@pytest.mark.parametrize("which", [0, 1], ids=["smoke", "variants"])
def test_the_published_index_shows_each_runs_real_verdict_in_a_browser(sites, which) -> None:
    dest, truth = sites[which]
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((dest / "index.html").as_uri(), wait_until="load")
        rows = page.locator("#runs tbody tr")
        shown = {}
        for i in range(rows.count()):
            row = rows.nth(i)
            shown[row.get_attribute("data-run")] = (
                row.locator(".badge").inner_text().strip(),
                row.locator("td").first.inner_text().strip(),
            )
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"published-index-{which}.png"), full_page=True)
        for run_id, verdict in truth.items():
            assert run_id in shown, (run_id, sorted(shown))
            badge, date = shown[run_id]
            assert badge == verdict, (run_id, badge, verdict)
            assert DATE.match(date), (run_id, date)  # a date, not the run id
        linked = [(r, v) for r, v in sorted(truth.items())
                  if page.locator(f'tr[data-run="{r}"] a').count()]
        assert linked, "no run of the published index links its report"
        run_id, verdict = linked[0]  # its report opens from the published index, verdict intact
        page.locator(f'tr[data-run="{run_id}"] a').first.click()
        page.wait_for_load_state("load")
        assert verdict.upper() in page.locator("#verdict-banner").inner_text()
        assert errors == []


@pytest.mark.parametrize("width", WIDTHS)
def test_real_reports_and_the_index_read_at_a_glance_on_desktop_and_phone(
        sites, width, tmp_path: Path) -> None:
    """Issue 28 on real runs: a passed, a regressed and a failed report (the smoke suite and
    its fault variants) and each published index fit the width, show the verdict and the failing
    checks in the first screen and the curves above the checks table."""
    w, h = WIDTHS[width]
    shots = screenshot_dir(tmp_path)
    wanted = {"passed", "regressed", "failed"}
    with chromium() as browser:
        page = browser.new_page(viewport={"width": w, "height": h})
        for which, (dest, truth) in enumerate(sites):
            page.goto((dest / "index.html").as_uri(), wait_until="load")
            page.screenshot(path=str(shots / f"real-index-{which}-{w}.png"), full_page=True)
            assert overflow(page)[0] <= overflow(page)[1], f"index {which}"
            assert glance_top(page, "#nightly") < glance_top(page, "#runs")
            for report in sorted(dest.rglob("report.html")):
                verdict = truth.get(report.parent.name)
                if verdict not in wanted:
                    continue
                page.goto(report.as_uri(), wait_until="load")
                page.screenshot(path=str(shots / f"real-report-{verdict}-{w}.png"))
                assert overflow(page)[0] <= overflow(page)[1], report
                # a phone shows the verdict and the first failing checks, the rest before the curves
                fit = None if width == "desktop" else 3
                assert first_screen_problems(page, verdict, fit) == [], report
                if page.locator('[data-section="plots"]').count():
                    assert plots_before_checks(page), report
                wanted.discard(verdict)
        assert wanted == set(), f"no published report of a {wanted} run"
        page.close()
