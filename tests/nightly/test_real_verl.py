"""``workbook nightly sync`` against the real verl at the commit the script facts name: no drift,
and the facts it derives are the committed ones (launch-time stamps aside). Needs a local mirror
of verl-project/verl (a bare git directory, ``$WORKBOOK_VERL_MIRROR``, default the one this
project's sources were read from); skipped, saying so, where there is none."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from workbook.cli import main
from workbook.nightly.standin import script_facts
from workbook.nightly.workflow import nightly_jobs

REPO = Path(__file__).resolve().parents[2]
FACTS = {f["job"]: f for f in (json.loads(p.read_text())
                               for p in sorted((REPO / "params" / "nightly").glob("*.script.json")))}
MIRROR = Path(os.environ.get("WORKBOOK_VERL_MIRROR", "/work/.mirror/verl-project+verl/repo"))
_STAMP = re.compile(r"(_\d{8}_\d{4}|/\d{8}_\d{6})$")  # the script's launch time in a name or folder


@pytest.fixture(scope="module")
def verl_at_the_facts_commit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    (commit,) = {f["verl_commit"] for f in FACTS.values()}
    if not (MIRROR / "HEAD").is_file():
        pytest.skip(f"no verl mirror at {MIRROR} (set WORKBOOK_VERL_MIRROR to a bare clone of "
                    "verl-project/verl): the real-checkout sync is not run")
    folder = tmp_path_factory.mktemp("verl")
    archive = subprocess.run(["git", "--git-dir", str(MIRROR), "archive", commit, ".github", "tests"],
                             capture_output=True, check=True, timeout=300).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True, timeout=300)
    return folder


def test_sync_finds_no_drift_in_the_real_nightly_at_the_facts_commit(
        verl_at_the_facts_commit: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKBOOK_PARAMS", raising=False)
    monkeypatch.delenv("WORKBOOK_VERL", raising=False)

    code = main(["nightly", "sync", "--verl", str(verl_at_the_facts_commit)])

    report = capsys.readouterr().out
    assert code == 0, report
    assert f"all {len(FACTS)} jobs as reproduced" in report


def test_the_facts_derived_from_the_real_scripts_are_the_committed_ones(
        verl_at_the_facts_commit: Path) -> None:
    jobs = nightly_jobs(verl_at_the_facts_commit)
    assert {j.name for j in jobs} == set(FACTS)
    for job in jobs:
        derived, recorded = script_facts(verl_at_the_facts_commit, job), FACTS[job.name]
        for key in ("script", "inputs", "entry", "env"):
            assert derived[key] == recorded[key], (job.name, key)
        assert [_STAMP.sub("", o) for o in derived["overrides"]] == [
            _STAMP.sub("", o) for o in recorded["overrides"]], job.name
