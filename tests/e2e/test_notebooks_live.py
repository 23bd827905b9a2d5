"""The GSPO notebook where researchers meet it: in a real JupyterLab driven by a real browser,
and through plain papermill exactly as the docs show -- each a real verl run. The papermill run
is the session's second green night of the default scenario (tests/e2e/test_nights.py).

JupyterLab is started the way the docs say (``workbook lab``: a working copy, so the tracked
notebook stays clean), with its own port, and stopped at the end. Debian's Chromium drives it
through Playwright. Screenshots land in ``test-artifacts/``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chromium import ARTIFACTS, chromium
from tests.conftest import REPO, WORKBOOK, HeavyLock, PapermillNight, processes_naming

pytestmark = [pytest.mark.verl, pytest.mark.browser]
PARAMETERS = """scenario = "params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
clip_ratio_low = None
clip_ratio_high = 6e-4
steps = 4
overrides = []
run_root = ""
run_dir = \"\""""


IDLE = ".jp-Notebook-ExecutionIndicator[data-status='idle'], .jp-KernelStatus:has-text('Idle')"
# some cell shows it is running or ran: its prompt reads [*] or [N]
STARTED = """() => [...document.querySelectorAll('.jp-InputPrompt')]
    .some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def lab(session_env: dict[str, str], cpu_assets: object,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``workbook lab`` on its own port and working folder; stopped (by PID) afterwards."""
    port, folder = _free_port(), tmp_path_factory.mktemp("lab")
    proc = subprocess.Popen(
        [*WORKBOOK, "lab", "gspo", "--dir", str(folder), "--no-browser", "--port", str(port),
         "--jupyter-arg=--ServerApp.ip=127.0.0.1", "--jupyter-arg=--IdentityProvider.token=",
         "--jupyter-arg=--ServerApp.password=", "--jupyter-arg=--ServerApp.disable_check_xsrf=True"],
        env=session_env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/api", timeout=2)
            break
        except OSError:
            time.sleep(1)
    else:
        os.killpg(proc.pid, signal.SIGTERM)
        pytest.fail("JupyterLab did not start within 120 s")
    yield url, folder
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def page(lab: tuple[str, Path]) -> Iterator[object]:
    url, _ = lab
    with chromium() as browser:
        tab = browser.new_page(viewport={"width": 1500, "height": 1000})
        tab.goto(f"{url}/lab/tree/gspo.ipynb")
        tab.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        # a Run All sent before the kernel is idle can be dropped on a loaded machine
        tab.wait_for_selector(IDLE, timeout=180_000)
        yield tab


def _run_all(tab) -> None:  # type: ignore[no-untyped-def]
    """Run All from the menu, once more if no cell started within a minute (a click a busy
    browser lost)."""
    for attempt in range(2):
        tab.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        tab.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        try:
            tab.wait_for_function(STARTED, timeout=60_000)
            return
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: try the menu again
            if attempt:
                raise


def _output_attr(tab, selector: str, attribute: str) -> str | None:  # type: ignore[no-untyped-def]
    found = tab.locator(f".jp-OutputArea-output {selector}")
    return found.first.get_attribute(attribute) if found.count() else None


@pytest.fixture(scope="module")
def lab_run(page, session_env: dict[str, str]) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Change clip_ratio_high and steps in the parameters cell, Run All, watch the live view
    through step 2, then press the stop button: one real run shows the live view, the stop and
    the stopped run's report."""
    cell = page.locator(".jp-Cell", has_text="clip_ratio_high = None").first
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(PARAMETERS)
    seen: dict[str, object] = {"steps": [], "statuses": []}
    with HeavyLock():
        started = time.monotonic()
        _run_all(page)
        deadline = started + 1500
        while time.monotonic() < deadline and "2" not in seen["steps"]:  # type: ignore[operator]
            status = page.locator(".jp-OutputArea-output [data-live=status]")
            if status.count():
                seen.setdefault("status_after_s", round(time.monotonic() - started, 1))
                text = status.first.inner_text()
                if not seen["statuses"] or seen["statuses"][-1] != text:  # type: ignore[index]
                    seen["statuses"].append(text)  # type: ignore[union-attr]
            step = _output_attr(page, "[data-live=plots]", "data-step")
            if step and step not in seen["steps"]:  # type: ignore[operator]
                seen["steps"].append(step)  # type: ignore[union-attr]
            time.sleep(0.5)
        page.locator("jp-button[data-command='notebook:interrupt-kernel'], "
                     "button[data-command='notebook:interrupt-kernel']").first.click()
        while time.monotonic() < deadline:
            verdict = _output_attr(page, "#verdict-banner", "data-verdict")
            if verdict:
                seen["verdict"] = verdict
                break
            time.sleep(1.0)
        # the last cell renders the stopped run's report and the index
        page.wait_for_selector(".jp-OutputArea-output [data-finished]", timeout=600_000)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "lab-gspo-stopped.png"), full_page=True)
    return seen


def _lab_run_dir(session_env: dict[str, str]) -> Path:
    root = Path(session_env["WORKBOOK_RUNS"]) / "gspo-tiny-1n1cpu-fsdp2-vllm"
    runs = [p for p in root.iterdir() if p.is_dir()
            and json.loads((p / "run.json").read_text()).get("clip_ratio_high") == 6e-4
            and json.loads((p / "run.json").read_text()).get("notebook") == "gspo"]
    assert runs, "the lab run is not under the runs root"
    return max(runs)


def test_run_all_shows_live_status_within_seconds_then_per_step_frames(lab_run) -> None:  # type: ignore[no-untyped-def]
    assert lab_run.get("status_after_s") is not None, lab_run
    assert lab_run["status_after_s"] < 120  # kernel start + validation, then status at once
    statuses = " | ".join(lab_run["statuses"])
    assert "starting" in statuses or "loading" in statuses, statuses  # before any step
    assert lab_run["steps"][:2] == ["1", "2"], lab_run


def test_the_stop_button_stops_the_run_and_records_it_neutrally(lab_run, session_env) -> None:  # type: ignore[no-untyped-def]
    assert lab_run.get("verdict") == "stopped", lab_run
    run = _lab_run_dir(session_env)
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "stopped" and info["expected_steps"] == 4, info
    assert 2 <= info["steps_reached"] < 4, info  # stopped during step 3
    assert info["finished_at"]
    report = (run / "report.html").read_text()
    assert "Why it failed" not in report
    assert (run / "notebook.ipynb").is_file()
    from workbook.command.builder import ray_temp_dir

    assert processes_naming(str(run), ray_temp_dir(run.name)) == []


def test_the_stopped_run_lands_under_the_runs_root_and_in_the_index(lab_run, session_env) -> None:  # type: ignore[no-untyped-def]
    run = _lab_run_dir(session_env)
    index = (Path(session_env["WORKBOOK_RUNS"]) / "index.html").read_text()
    assert f'data-run="{run.name}"' in index
    rows = {r["name"]: r for r in json.loads((run / "checks.json").read_text())["rows"]}
    # the researcher's change is named where the run meets its baseline
    assert "clip_ratio_high 0.0004 -> 0.0006" in rows["actor/pg_loss vs baseline"]["message"]


def test_the_tracked_notebook_stays_clean(lab_run) -> None:  # type: ignore[no-untyped-def]
    tracked = json.loads((REPO / "notebooks" / "gspo.ipynb").read_text())
    assert all(c.get("outputs", []) == [] for c in tracked["cells"] if c["cell_type"] == "code")
    assert "clip_ratio_high = None" in "".join(
        "".join(c["source"]) for c in tracked["cells"])


def test_papermill_exactly_as_the_docs_show_runs_reports_and_indexes(
        papermill_night: PapermillNight, session_env: dict[str, str]) -> None:
    night = papermill_night
    assert night.returncode == 0, night.stderr[-3000:]
    assert night.report is not None and night.run_dir is not None, night.stderr[-2000:]
    assert night.run_dir.parent.parent == Path(session_env["WORKBOOK_RUNS"])  # the one runs root
    assert night.report.is_file() and (night.run_dir / "notebook.ipynb").is_file()
    index = (Path(session_env["WORKBOOK_RUNS"]) / "index.html").read_text()
    assert f'data-run="{night.run_dir.name}"' in index
    checks = json.loads((night.run_dir / "checks.json").read_text())
    assert checks["verdict"]["status"] == "passed", checks["verdict"]  # a green night
