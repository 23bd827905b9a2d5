"""A bisect's page names the first bad commit, shows each step's evidence with a relative link to
its report, and stays self-contained and redacted; the runs index lists it."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from workbook.bisect.page import bisect_view, write_bisect_page
from workbook.report.index import write_index

GOOD, BAD = "a" * 40, "f" * 40
SHAS = ["1" * 40, "2" * 40, "3" * 40, BAD]
STATES = ["good", "bad", "not needed", "bad"]
TOKEN = "hf" + "_" + "PlantedBisectTokenAbCdEfGhIjKlMn"  # assembled: no secret in the source


def step_run(directory: Path, key: str, verdict: str, failing: str | None = None) -> Path:
    run = directory / "steps" / key / "20261202T030000Z-abc123"
    run.mkdir(parents=True)
    rows = [{"name": "timing_s/step vs baseline", "status": "pass"}]
    if failing:
        rows.append({"name": failing, "status": "fail", "message": "0.21 > 0.12"})
    (run / "checks.json").write_text(json.dumps({"verdict": {"status": verdict}, "rows": rows}))
    (run / "run.json").write_text(json.dumps({"verdict": {"status": verdict}}))
    (run / "report.html").write_text("<html></html>")
    return run


def state(directory: Path, **result: Any) -> dict[str, Any]:
    steps = [("2-" + SHAS[1][:7], SHAS[1], "regressed", "bad", "actor/pg_loss vs baseline"),
             ("1-" + SHAS[0][:7], SHAS[0], "passed", "good", None)]
    records = []
    for number, (key, sha, verdict, outcome, failing) in enumerate(reversed(steps), 1):
        run = step_run(directory, key, verdict, failing)
        records.append({"key": key, "step": number, "sha": sha, "subject": f"change {number}",
                        "outcome": outcome, "why": "as the bad night", "status": verdict,
                        "run_dir": str(run), "started": "2026-12-02T03:00:00+00:00",
                        "ended": "2026-12-02T03:10:00+00:00"})
    return {
        "format": 1, "scenario": "gspo-tiny", "params": "/p/gspo-tiny.yaml",
        "sets": [f"env.HF_TOKEN={TOKEN}"], "repo": "/src/verl", "good": GOOD, "bad": BAD,
        "bad_run": None,
        "bad_night": {"status": "regressed", "category": None, "source": "ledger",
                      "run_dir": None, "reason": "1 failed of 12 checks"},
        "candidates": [{"sha": s, "subject": f"change {i + 1}", "state": st}
                       for i, (s, st) in enumerate(zip(SHAS, STATES, strict=True))],
        "result": {"status": "found", "message": f"the first bad commit is {SHAS[1][:12]}",
                   "first_bad": {"sha": SHAS[1], "subject": "change 2 <scale the loss>",
                                 "author": "Ada Tester", "date": "2026-11-30T12:00:00+00:00",
                                 "stat": "1 file changed, 3 insertions(+), 1 deletion(-)",
                                 "files": [{"path": "verl/trainer/ppo/core_algos.py",
                                            "added": 3, "deleted": 1}]},
                   "one_of": [], **result},
        "steps": records,
    }


def test_the_page_names_the_first_bad_commit_with_its_evidence(tmp_path: Path) -> None:
    directory = tmp_path / "runs" / "bisects" / "gspo-tiny" / "aaaaaaa-fffffff"

    page = write_bisect_page(directory / "bisect.html", state(directory), directory).read_text()

    first = re.search(r'<section data-section="first-bad" data-first-bad="(\w+)">(.*?)</section>',
                      page, re.DOTALL)
    assert first and first.group(1) == SHAS[1]
    facts = dict(re.findall(r'<dd data-fact="(\w+)">(.*?)</dd>', first.group(2)))
    assert html.unescape(facts["subject"]) == "change 2 <scale the loss>"
    assert facts["author"] == "Ada Tester"
    assert 'data-file="verl/trainer/ppo/core_algos.py"' in first.group(2)
    steps = re.findall(r'<tr data-step="(\d)" data-sha="(\w+)" data-outcome="(\w+)">(.*?)</tr>',
                       page)
    assert [(n, s, o) for n, s, o, _ in steps] == [("1", SHAS[0], "good"), ("2", SHAS[1], "bad")]
    assert "actor/pg_loss vs baseline: 0.21 &gt; 0.12" in steps[1][3]
    links = re.findall(r'<a href="([^"]+)">report</a>', page)
    assert links == [f"steps/1-{SHAS[0][:7]}/20261202T030000Z-abc123/report.html",
                     f"steps/2-{SHAS[1][:7]}/20261202T030000Z-abc123/report.html"]
    assert all((directory / link).is_file() for link in links)
    assert re.search(rf'data-candidate="{SHAS[1]}" data-state="bad" data-first-bad>', page)


def test_the_page_is_self_contained_and_redacted(tmp_path: Path) -> None:
    directory = tmp_path / "b"

    page = write_bisect_page(directory / "bisect.html", state(directory), directory).read_text()

    assert not re.search(r'(src|href)="https?:', page)
    assert "<script" not in page
    assert TOKEN not in page and TOKEN[-10:] not in page


def test_an_ambiguous_bisect_lists_the_commits_it_may_be(tmp_path: Path) -> None:
    directory = tmp_path / "b"
    data = state(directory, status="ambiguous", message="only skipped commits are left",
                 first_bad=None, one_of=[SHAS[2], BAD])

    view = bisect_view(data, directory)

    assert view.culprit is None
    assert [c.sha for c in view.one_of] == [SHAS[2], BAD]


def test_the_runs_index_lists_each_bisect_with_how_it_ended(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    directory = runs / "bisects" / "gspo-tiny" / "aaaaaaa-fffffff"
    data = state(directory)
    (directory / "bisect.json").write_text(json.dumps(data))
    write_bisect_page(directory / "bisect.html", data, directory)

    index = write_index(runs).read_text()

    item = re.search(r'<li data-bisect="([^"]+)"><span class="badge b-(\w+)">(\w+)</span> '
                     r'<a href="([^"]+)">.*?</a>: (.*?)</li>', index)
    assert item is not None
    assert item.group(1) == "bisects/gspo-tiny/aaaaaaa-fffffff"
    assert (item.group(2), item.group(3)) == ("regressed", "found")
    assert item.group(4) == "bisects/gspo-tiny/aaaaaaa-fffffff/bisect.html"
    assert item.group(5) == f"the first bad commit is {SHAS[1][:12]}"
