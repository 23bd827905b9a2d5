"""``publish`` copies only what it made, never through a link; index links open their file.

Links in the runs tree (files and folders, planted before the walk or swapped in after it), a
destination that holds or is held by the runs root, five publishes racing for one destination,
names with ``#``, ``?``, ``%`` or spaces, and the verdicts the published index shows.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from report_fixtures import write_run

from workbook.checks.rows import STATUSES
from workbook.cli import main
from workbook.core import redaction
from workbook.core.layout import RUN_FILES, SITE_LOCK
from workbook.errors import InputError
from workbook.history.ledger import LEDGER_DIR
from workbook.report import publish as publishing
from workbook.report.index import write_index
from workbook.report.publish import PUBLISHED_FILES, publish, publish_site
from workbook.report.render import render_report

HOST = "HOST-FILE-CONTENT-must-never-be-published"
SCENARIO = "gspo-tiny-1n1cpu-fsdp2-vllm"


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Fail instead of hanging (a FIFO opened for reading blocks until a writer comes)."""

    def _raise(*_: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _entries(site: Path) -> dict[str, Path]:
    """Every file, folder and link of the site (links not followed), by relative path."""
    found: dict[str, Path] = {}
    for top, dirs, files, _fd in os.fwalk(site, follow_symlinks=False):
        for name in dirs + files:
            path = Path(top) / name
            found[path.relative_to(site).as_posix()] = path
    return found


def _published_bytes(site: Path) -> bytes:
    return b"".join(p.read_bytes() for p in _entries(site).values()
                    if not p.is_symlink() and p.is_file())


def _host(tmp_path: Path) -> Path:
    """A folder outside the runs root holding files no site may show."""
    host = tmp_path / "host"
    (host / "folder").mkdir(parents=True, exist_ok=True)
    (host / "passwd").write_text(f"root:x:0:0:{HOST}:/root:/bin/sh\n")
    (host / "report.html").write_text(f"<html>{HOST}</html>")
    run = host / "run-elsewhere"
    run.mkdir(exist_ok=True)
    (run / "run.json").write_text(json.dumps({"status": "succeeded", "note": HOST}))
    (run / "run.log").write_text(f"{HOST}\n")
    return host


def _link_file(name: str, to: str) -> Callable[[Path, Path, Path], str]:
    def plant(root: Path, run: Path, host: Path) -> str:
        (run / name).unlink(missing_ok=True)
        (run / name).symlink_to(host / to)
        return f"{run.relative_to(root).as_posix()}/{name}"

    return plant


def _linked_run(root: Path, run: Path, host: Path) -> str:
    (root / SCENARIO / "20261201T000000Z-linked").symlink_to(host / "run-elsewhere")
    return f"{SCENARIO}/20261201T000000Z-linked"


def _linked_scenario(root: Path, run: Path, host: Path) -> str:
    (host / "scenario" / "20261201T000000Z-abcdef").mkdir(parents=True)
    shutil.copytree(host / "run-elsewhere", host / "scenario" / "20261201T000000Z-abcdef",
                    dirs_exist_ok=True)
    (root / "linked-scenario").symlink_to(host / "scenario")
    return "linked-scenario"


def _linked_suite_table(root: Path, run: Path, host: Path) -> str:
    night = root / "suites" / "nightly" / "2026-12-01"
    write_run(night, "passed", scenario="01-gspo")
    (night / "suite.json").symlink_to(host / "passwd")
    return "suites/nightly/2026-12-01/suite.json"


def _fifo_log(root: Path, run: Path, host: Path) -> str:
    (run / "run.log").unlink()
    os.mkfifo(run / "run.log")
    return f"{run.relative_to(root).as_posix()}/run.log"


def _broken_link(root: Path, run: Path, host: Path) -> str:
    (run / "command.sh").unlink()
    (run / "command.sh").symlink_to(host / "no-such-file")
    return f"{run.relative_to(root).as_posix()}/command.sh"


REFUSED = [
    pytest.param(_link_file("run.log", "passwd"), "symbolic link", id="run.log-links-to-etc-passwd"),
    pytest.param(_link_file("report.html", "report.html"), "symbolic link", id="report-is-a-link"),
    pytest.param(_link_file("metrics.jsonl", "passwd"), "symbolic link", id="metrics-is-a-link"),
    pytest.param(_link_file("checks.json", "folder"), "symbolic link", id="checks-links-to-folder"),
    pytest.param(_broken_link, "symbolic link", id="broken-link"),
    pytest.param(_linked_run, "symbolic link", id="run-dir-links-out-of-the-root"),
    pytest.param(_linked_scenario, "symbolic link", id="scenario-dir-links-out"),
    pytest.param(_linked_suite_table, "symbolic link", id="suite-json-is-a-link"),
    pytest.param(_fifo_log, "not a regular file", id="run.log-is-a-fifo"),
]


@pytest.mark.parametrize(("plant", "why"), REFUSED)
def test_what_the_runs_tree_links_to_is_skipped_and_said_never_copied(tmp_path, plant, why):
    root = tmp_path / "runs"
    run = write_run(root, "passed")
    render_report(run)
    named = plant(root, run, _host(tmp_path))
    with _deadline(60):
        done = publish_site(root, tmp_path / "site")
    site = tmp_path / "site"
    assert [line for line in done.skipped if line.startswith(f"{root / named}: ")], done.skipped
    assert any(why in line for line in done.skipped)
    entries = _entries(site)
    assert named not in entries
    assert not [p for p in entries.values() if p.is_symlink()]
    assert HOST.encode() not in _published_bytes(site)
    # the rest of the run is still published
    assert json.loads((site / run.relative_to(root) / "run.json").read_text())["run_id"] == run.name


def test_a_link_swapped_in_after_the_walk_is_not_followed(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    run = write_run(root, "passed")
    host = _host(tmp_path)
    copy = publishing._copy_redacted

    def swap_then_copy(source: Path, target: Path, **kwargs: object) -> Path:
        if source.name == "run.log":
            source.unlink()
            source.symlink_to(host / "passwd")
        return copy(source, target, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(publishing, "_copy_redacted", swap_then_copy)
    done = publish_site(root, tmp_path / "site")
    assert any("run.log: a symbolic link" in line for line in done.skipped), done.skipped
    assert HOST.encode() not in _published_bytes(tmp_path / "site")
    assert not (tmp_path / "site" / run.relative_to(root) / "run.log").exists()


def test_a_link_swapped_in_once_the_file_is_open_changes_nothing_copied(tmp_path, monkeypatch):
    """Publish redacts the descriptor it opened without following a link: a link swapped in
    afterwards (while the copy runs) is never read, and the file opened is what is published."""
    root = tmp_path / "runs"
    run = write_run(root, "passed")
    host = _host(tmp_path)
    original = (run / "run.log").read_bytes()
    real = redaction.redact_opened

    def swapped_under_it(fd: int, target: Path, form: str, *, name: str = "") -> Path:
        source = Path(name)
        if source.name == "run.log":
            source.unlink()
            source.symlink_to(host / "passwd")
        return real(fd, target, form, name=name)

    monkeypatch.setattr(redaction, "redact_opened", swapped_under_it)
    publish_site(root, tmp_path / "site")
    published_run = tmp_path / "site" / run.relative_to(root)
    assert HOST.encode() not in _published_bytes(tmp_path / "site")
    assert (published_run / "run.log").read_bytes() == original  # nothing secret in it to redact
    assert not [p for p in published_run.iterdir() if p.name.startswith(".run.log")]


def _link(tmp_path: Path, name: str, to: Path) -> Path:
    (tmp_path / name).symlink_to(to)
    return tmp_path / name


DESTINATIONS = [
    pytest.param(lambda t, r: r, "inside the runs root", id="the-runs-root-itself"),
    pytest.param(lambda t, r: r / "site", "inside the runs root", id="inside"),
    pytest.param(lambda t, r: r / "new" / "deeper" / "site", "inside the runs root",
                 id="inside-not-made-yet"),
    pytest.param(lambda t, r: t / "elsewhere" / ".." / "runs" / "site", "inside the runs root",
                 id="dot-dot-into-the-root"),
    pytest.param(lambda t, r: _link(t, "to-root", r) / "site", "inside the runs root",
                 id="through-a-link-into-the-root"),
    pytest.param(lambda t, r: _link(t, "to-root", r), "inside the runs root",
                 id="a-link-to-the-root"),
    pytest.param(lambda t, r: t, "contains the runs root", id="contains-the-root"),
    pytest.param(lambda t, r: _link(t, "up", t), "contains the runs root",
                 id="a-link-to-a-folder-containing-the-root"),
    pytest.param(lambda t, r: r.parent.parent, "contains the runs root", id="an-ancestor"),
]


@pytest.mark.parametrize(("where", "said"), DESTINATIONS)
def test_a_destination_holding_or_held_by_the_runs_root_is_refused(tmp_path, capsys, where, said):
    root = tmp_path / "runs"
    write_run(root, "passed")
    before = sorted(_entries(root))
    dest = where(tmp_path, root)
    with pytest.raises(InputError, match=said) as refused:
        publish(root, dest)
    assert str(dest) in refused.value.message
    assert main(["publish", str(root), str(dest)]) == 2
    assert said in capsys.readouterr().err
    assert sorted(_entries(root)) == before  # nothing written anywhere in the runs tree


@pytest.mark.parametrize(
    ("root_exists", "make_dest", "said"),
    [
        pytest.param(True, lambda p: p.write_text("x"), "not a folder", id="destination-is-a-file"),
        pytest.param(False, lambda p: None, "not a directory", id="runs-root-missing"),
    ],
)
def test_a_destination_or_root_of_the_wrong_kind_is_bad_input(tmp_path, root_exists, make_dest,
                                                               said):
    root = tmp_path / "runs"
    if root_exists:
        write_run(root, "passed")
    make_dest(tmp_path / "dest")
    with pytest.raises(InputError, match=said):
        publish(root, tmp_path / "dest")


def test_a_link_already_in_the_destination_is_not_written_through(tmp_path):
    root = tmp_path / "runs"
    run = write_run(root, "passed")
    outside = tmp_path / "outside"
    outside.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    (site / SCENARIO).symlink_to(outside)
    (site / "raw").symlink_to(root)  # a link to the raw runs: the index must not list them
    done = publish_site(root, site)
    assert list(outside.iterdir()) == []
    assert any("in the destination is a link" in line for line in done.skipped), done.skipped
    hrefs = _hrefs((site / "index.html").read_text())
    assert not [h for h in hrefs if h.startswith("raw/")]
    assert f'data-run="{run.name}"' not in (site / "index.html").read_text()


def test_only_what_publish_chose_reaches_the_site(tmp_path):
    root = tmp_path / "runs"
    runs = [write_run(root, kind, run_id=f"2026112{i}T000000Z-{kind[:6]}")
            for i, kind in enumerate(["passed", "regressed"])]
    for run in runs:
        render_report(run)
        (run / "notebook.ipynb").write_text("{}")
        (run / ".env").write_text("HF_TOKEN=hf_x\n")
        (run / "secrets.txt").write_text("anything\n")
        (run / "rollouts").mkdir()
        (run / "rollouts" / "step1.jsonl").write_text("{}\n")
    (root / "notes.txt").write_text("not a run file\n")
    write_index(root)  # the runs root's own index and caches stay home
    publish(root, tmp_path / "site")
    site = tmp_path / "site"
    chosen = {RUN_FILES[key] for key in PUBLISHED_FILES}  # no summary cache: it names host paths
    expected = {"index.html", ".nojekyll", SCENARIO, ".trends", SITE_LOCK, LEDGER_DIR,
                f"{LEDGER_DIR}/.lock", f"{LEDGER_DIR}/{SCENARIO}.cpu.jsonl"}  # the site's memory
    for run in runs:
        rel = run.relative_to(root).as_posix()
        expected |= {rel} | {f"{rel}/{name}" for name in chosen}
    found = _entries(site)
    charts = {p for p in found if p.startswith(".trends/")}
    assert charts and all(p.endswith(".png") for p in charts)
    assert set(found) - charts == expected


def test_every_published_file_goes_through_the_one_redacting_copy(tmp_path, monkeypatch):
    """metrics.jsonl included: verl's file logger writes strings."""
    root = tmp_path / "runs"
    run = write_run(root, "passed")
    render_report(run)
    seen: list[str] = []

    real = redaction.redact_opened

    def redact_opened(fd: int, target: Path, form: str, *, name: str = "") -> Path:
        seen.append(Path(name).name)
        return real(fd, target, form, name=name)

    monkeypatch.setattr(redaction, "redact_opened", redact_opened)
    done = publish_site(root, tmp_path / "site")
    assert sorted(seen) == sorted(RUN_FILES[key] for key in PUBLISHED_FILES)
    assert sorted(p.name for p in done.copied) == sorted(seen)


def test_metrics_strings_are_redacted_and_numbers_kept_when_published(tmp_path):
    root = tmp_path / "runs"
    run = write_run(root, "passed")
    with (run / "metrics.jsonl").open("a") as out:
        out.write(json.dumps({"step": 5, "actor/pg_loss": 0.25,
                              "trainer/note": "HF_TOKEN=hf_PlantedInMetrics12345"}) + "\n")
    publish(root, tmp_path / "site")
    published = (tmp_path / "site" / run.relative_to(root) / "metrics.jsonl").read_text()
    assert "hf_PlantedInMetrics12345" not in published
    raw = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    kept = [json.loads(line) for line in published.splitlines()]
    numbers = [{k: v for k, v in row.items() if isinstance(v, (int, float))} for row in raw]
    assert [{k: v for k, v in row.items() if isinstance(v, (int, float))} for row in kept] == numbers


def _publisher(root: str, dest: str, barrier) -> None:
    barrier.wait(timeout=60)
    publish(Path(root), Path(dest))


def test_five_concurrent_publishes_to_one_destination_leave_a_complete_site(tmp_path):
    root = tmp_path / "runs"
    runs = [write_run(root, kind, run_id=f"2026112{i}T000000Z-{kind[:6]}")
            for i, kind in enumerate(["passed", "regressed", "failed", "passed"])]
    render_report(runs[0])
    site = tmp_path / "site"
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(5)
    procs = [ctx.Process(target=_publisher, args=(str(root), str(site), barrier))
             for _ in range(5)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * 5
    found = _entries(site)
    temps = [p for p in found if Path(p).name.startswith(".")
             and Path(p).name not in {".nojekyll", ".trends", SITE_LOCK, ".lock"}]
    assert temps == []
    for run in runs:
        rel = run.relative_to(root)
        for key in PUBLISHED_FILES:
            assert (site / rel / RUN_FILES[key]).is_file() == (run / RUN_FILES[key]).is_file()
        json.loads((site / rel / "run.json").read_text())
        json.loads((site / rel / "checks.json").read_text())
    page = (site / "index.html").read_text()
    assert page.rstrip().endswith("</html>")
    assert sorted(re.findall(r'data-run="([^"]+)"', page)) == sorted(r.name for r in runs)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs += [v for k, v in attrs if tag == "a" and k == "href" and v]


def _hrefs(page: str) -> list[str]:
    parser = _Links()
    parser.feed(page)
    return parser.hrefs


NAMES = [
    pytest.param("hash#tag", id="hash"),
    pytest.param("query?x=1&y=2", id="question-mark-and-ampersand"),
    pytest.param("100%25done", id="percent"),
    pytest.param("with space", id="space"),
    pytest.param("colon:like-a-scheme", id="colon"),
    pytest.param("ünïcødé", id="non-ascii"),
]


@pytest.mark.parametrize("name", NAMES)
def test_index_links_are_percent_encoded_and_open_their_report(tmp_path, name):
    root = tmp_path / "runs"
    run = write_run(root, "passed", scenario=f"s-{name}", run_id=f"20261129T000000Z-{name}")
    render_report(run)
    for index in (write_index(root), publish(root, tmp_path / "site")):
        hrefs = _hrefs(index.read_text())
        # its row of all runs, and the nightly table's newest and last green night
        assert len(hrefs) == 3 and len(set(hrefs)) == 1, hrefs
        parts = urlsplit(hrefs[0])
        assert (parts.scheme, parts.netloc, parts.query, parts.fragment) == ("", "", "", "")
        target = index.parent / unquote(parts.path)
        assert target.is_file() and target.resolve().parent.name == run.name


def _judged_like_the_pipeline(run: Path) -> None:
    """Give the hand-made verdict the shape ``Verdict.summary`` writes (exit code, counts)."""
    checks = json.loads((run / "checks.json").read_text())
    counts = {s: sum(r["status"] == s for r in checks["rows"]) for s in STATUSES}
    verdict = {**checks["verdict"], "exit_code": 0 if counts["fail"] == 0 else 1, "counts": counts}
    checks["verdict"] = verdict
    (run / "checks.json").write_text(json.dumps(checks, indent=2, sort_keys=True))
    data = json.loads((run / "run.json").read_text())
    data["verdict"] = verdict
    (run / "run.json").write_text(json.dumps(data, indent=2, sort_keys=True))


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param(lambda run: None, id="hand-made-verdict"),
        pytest.param(_judged_like_the_pipeline, id="pipeline-verdict-with-counts"),  # "pass": 3
    ],
)
def test_the_published_index_shows_each_runs_real_verdict(tmp_path, shape):
    root = tmp_path / "runs"
    runs = {kind: write_run(root, kind, run_id=f"2026112{i}T000000Z-{kind[:6]}")
            for i, kind in enumerate(["passed", "regressed"])}
    for run in runs.values():
        shape(run)
        render_report(run)
    site = tmp_path / "site"
    page = publish(root, site).read_text()
    for kind, run in runs.items():
        published = site / run.relative_to(root)
        source = json.loads((run / "checks.json").read_text())["verdict"]
        assert json.loads((published / "checks.json").read_text())["verdict"] == source
        assert json.loads((published / "run.json").read_text())["verdict"] == source
        assert source["status"] == kind
    shown = dict(re.findall(r'data-verdict="([^"]+)" data-run="([^"]+)"', page))
    assert shown == {"passed": runs["passed"].name, "regressed": runs["regressed"].name}
    dates = re.findall(r'data-run="[^"]+"><td>([^<]*)</td>', page)
    assert len(dates) == 2 and all(re.match(r"\d{4}-\d{2}-\d{2}", d) for d in dates), dates


def test_cli_publish_names_what_it_skipped_on_stderr(tmp_path, capsys):
    root = tmp_path / "runs"
    run = write_run(root, "passed")
    _link_file("run.log", "passwd")(root, run, _host(tmp_path))
    assert main(["publish", str(root), str(tmp_path / "site")]) == 0
    out, err = capsys.readouterr()
    assert out.strip().splitlines()[-1] == str(tmp_path / "site" / "index.html")
    assert f"publish: skipped {run / 'run.log'}: a symbolic link, not followed" in err
