"""``workbook baseline propose``: a candidate from the ledger's last green nights, reviewed
against the blessed baseline."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.history.nights import DATA, SCENARIO, VERSIONS, newer, night
from workbook.checks.baseline import load_baseline
from workbook.cli import main
from workbook.history.proposal import MetricChange, select_sources
from workbook.scenario import load_scenario

PROJECT_PARAMS = Path(__file__).resolve().parents[2] / "params"
NEW_TORCH = newer(VERSIONS, torch="2.14.0+cpu")


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    """The tiny GSPO scenario in a params folder of its own, its baseline blessed (below)."""
    params = tmp_path / "params"
    shutil.copytree(PROJECT_PARAMS / "base", params / "base")
    path = params / f"{SCENARIO}.yaml"
    shutil.copyfile(PROJECT_PARAMS / f"{SCENARIO}.yaml", path)
    placeholder = params / "baselines" / f"{SCENARIO}.cpu.json"  # the scenario names it
    placeholder.parent.mkdir()
    placeholder.write_text('{"metrics": {"actor/grad_norm": {"value": 1.0}}}')
    return path


def resolved(path: Path) -> dict[str, Any]:
    return load_scenario(path, check_files=False).model_dump(mode="json")


def scaled_night(root: Path, scenario: Path, day: int, verdict: str = "passed", *,
                 factor: float = 1.0, versions: dict[str, str] | None = None,
                 **settings: Any) -> Path:
    """A night as ``night`` writes it, its params the scenario's as a run records them and its
    metrics the fixture's times ``factor`` (so no two runs log the same numbers)."""
    path = night(root, day, verdict, versions=versions or VERSIONS,
                 settings={**resolved(scenario), **settings})
    lines = []
    for line in (DATA / "gspo-metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        record["data"] = {k: v * factor if isinstance(v, float) else v
                          for k, v in record["data"].items()}
        lines.append(json.dumps(record))
    (path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return path


def blessed(root: Path, scenario: Path, created: str = "2026-11-05T00:00:00Z") -> Path:
    """The scenario's baseline, blessed from three nights in the old environment."""
    runs = [scaled_night(root, scenario, day, factor=f)
            for day, f in ((1, 1.0), (2, 1.01), (3, 0.99))]
    out = scenario.parent / "baselines" / f"{SCENARIO}.cpu.json"
    assert main(["bless", *map(str, runs), "--scenario", str(scenario), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    data["provenance"]["created"] = created
    out.write_text(json.dumps(data))
    return out


def new_nights(root: Path, scenario: Path, days: tuple[int, ...] = (10, 11, 12, 13),
               verdict: str = "improved") -> list[Path]:
    """Green nights after a torch upgrade that moved every metric by half."""
    factors = (1.5, 1.51, 1.49, 1.505, 1.495)
    return [scaled_night(root, scenario, day, verdict, factor=factors[i % 5], versions=NEW_TORCH)
            for i, day in enumerate(days)]


def propose(scenario: Path, root: Path, out: Path, *more: str) -> int:
    return main(["baseline", "propose", str(scenario), "--runs-root", str(root),
                 "--out", str(out), *more])


def test_the_candidate_is_what_bless_writes_from_the_last_green_nights(
        tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "runs"
    blessed(root, scenario)
    nights = new_nights(root, scenario, days=(10, 11, 12, 13, 14, 15))
    out = tmp_path / "proposal"

    assert propose(scenario, root, out, "--last", "3") == 0

    candidate = load_baseline(out / f"{SCENARIO}.cpu.json")
    assert candidate.provenance["run_ids"] == [p.name for p in nights[-3:]]
    by_bless = tmp_path / "by-bless.json"
    assert main(["bless", *map(str, nights[-3:]), "--scenario", str(scenario),
                 "--out", str(by_bless)]) == 0
    reference = load_baseline(by_bless)
    assert {k: m.to_dict() for k, m in candidate.metrics.items()} == {
        k: m.to_dict() for k, m in reference.metrics.items()}
    assert (candidate.settings, candidate.hardware_key) == (reference.settings,
                                                           reference.hardware_key)
    printed = capsys.readouterr().out
    assert f"candidate: {out / f'{SCENARIO}.cpu.json'}" in printed
    assert f"review: {out / 'review.html'}" in printed
    assert f"cp {out / f'{SCENARIO}.cpu.json'} {scenario.parent / 'baselines'}" in printed
    # nothing in params/ is written
    assert load_baseline(scenario.parent / "baselines" / f"{SCENARIO}.cpu.json").provenance[
        "created"] == "2026-11-05T00:00:00Z"


def test_red_nights_and_other_settings_never_feed_the_candidate(
        tmp_path: Path, scenario: Path) -> None:
    root = tmp_path / "runs"
    blessed(root, scenario)
    greens = new_nights(root, scenario, days=(10, 12, 14))
    scaled_night(root, scenario, 15, "regressed", factor=3.0, versions=NEW_TORCH)
    scaled_night(root, scenario, 16, "passed", factor=1.5, versions=NEW_TORCH, lr=2e-4)
    out = tmp_path / "proposal"

    assert propose(scenario, root, out) == 0

    # the last 5 eligible: two of the old nights and the three new ones
    ids = load_baseline(out / f"{SCENARIO}.cpu.json").provenance["run_ids"]
    assert ids[-3:] == [p.name for p in greens] and len(ids) == 5
    assert not any("-reg" in i or "016" in i for i in ids)


@pytest.mark.parametrize("greens, red, other_settings, words", [
    (2, 3, 1, "2 green runs with these settings (at least 3 needed to propose a baseline); of "
              "the other nights in the ledger: 3 were red; 1 had other settings"),
    (1, 1, 0, "1 green run with these settings (at least 3 needed to propose a baseline); of "
              "the other nights in the ledger: 1 was red"),
    (0, 0, 2, "0 green runs with these settings (at least 3 needed to propose a baseline); of "
              "the other nights in the ledger: 2 had other settings"),
], ids=["mixed", "singular", "only-other-settings"])
def test_fewer_than_three_green_nights_is_exit_2_with_the_counts(
        tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str], greens: int,
        red: int, other_settings: int, words: str) -> None:
    root = tmp_path / "runs"
    for day in range(greens):
        scaled_night(root, scenario, 10 + day, factor=1 + day / 100)
    for day in range(red):
        scaled_night(root, scenario, 20 + day, "regressed", factor=3.0)
    for day in range(other_settings):
        scaled_night(root, scenario, 25 + day, factor=1.0, lr=5e-4)

    assert propose(scenario, root, tmp_path / "proposal") == 2

    assert words in capsys.readouterr().err
    assert not (tmp_path / "proposal").exists()


@pytest.mark.parametrize("last", ["2", "0"])
def test_last_below_three_is_exit_2(tmp_path: Path, scenario: Path, last: str) -> None:
    root = tmp_path / "runs"
    blessed(root, scenario)

    assert propose(scenario, root, tmp_path / "p", "--last", last) == 2


def test_the_review_page_compares_each_metric_and_names_what_changed(
        tmp_path: Path, scenario: Path) -> None:
    root = tmp_path / "runs"
    old = load_baseline(blessed(root, scenario))
    nights = new_nights(root, scenario, days=(10, 11, 12))
    out = tmp_path / "proposal"

    assert propose(scenario, root, out, "--last", "3") == 0

    page = (out / "review.html").read_text()
    new = load_baseline(out / f"{SCENARIO}.cpu.json")
    metric = "actor/grad_norm"
    change = MetricChange(metric, old.metrics[metric].value, old.metrics[metric].sigma,
                          new.metrics[metric].value, new.metrics[metric].sigma)
    row = page.split(f'<tr data-metric="{metric}">')[1].split("</tr>")[0]
    for col, value, sign in (("old", change.old, ""), ("new", change.new, ""),
                             ("delta", change.delta, "+"), ("sigmas", change.delta_sigmas, "+"),
                             ("kl", change.symmetric_kl, "")):
        assert value is not None
        assert f'data-col="{col}">{value:{sign}.6g}</td>' in row
    assert "symmetric Kullback-Leibler" in page and "closed form" in page
    torch = page.split('<tr data-change="package">')[1].split("</tr>")[0]
    assert "<td>torch</td><td>2.13.0+cpu</td><td>2.14.0+cpu</td>" in torch
    for run in nights:
        assert f'data-source="{run.name}"' in page


def test_a_red_night_the_candidate_turns_green_is_listed_as_such(
        tmp_path: Path, scenario: Path) -> None:
    root = tmp_path / "runs"
    blessed(root, scenario)
    new_nights(root, scenario, days=(10, 11, 12))
    fixed = scaled_night(root, scenario, 13, "regressed", factor=1.5, versions=NEW_TORCH)
    broken = scaled_night(root, scenario, 14, "regressed", factor=3.0, versions=NEW_TORCH)
    before = scaled_night(root, scenario, 4, "regressed", factor=1.5)  # before the blessing
    out = tmp_path / "proposal"

    assert propose(scenario, root, out, "--last", "3") == 0

    page = (out / "review.html").read_text()
    assert f'data-red-night="{fixed.name}" data-outcome="turned green"' in page
    assert f'data-red-night="{broken.name}" data-outcome="kept red"' in page
    assert f'data-red-night="{before.name}"' not in page
    assert json.loads((fixed / "checks.json").read_text())["verdict"]["status"] == "regressed"


NORMALS = [  # old, old sigma, new, new sigma, delta in sigmas, symmetric KL
    (1.0, 0.1, 1.2, 0.1, 2.0, 4.0),
    (1.0, 0.1, 1.0, 0.2, 0.0, 0.5 * (0.25 + 4.0) - 1.0),
    (1.0, 0.0, 1.2, 0.1, None, None),
    (1.0, 0.1, 1.2, 0.0, 2.0, None),
    (None, None, 1.2, 0.1, None, None),
]


@pytest.mark.parametrize("old, old_sigma, new, new_sigma, sigmas, kl", NORMALS,
                         ids=["shifted", "wider", "old-sigma-0", "new-sigma-0", "new-metric"])
def test_the_move_is_measured_in_the_blessed_noise(
        old: float | None, old_sigma: float | None, new: float, new_sigma: float,
        sigmas: float | None, kl: float | None) -> None:
    change = MetricChange("m", old, old_sigma, new, new_sigma)

    assert change.delta_sigmas == (None if sigmas is None else pytest.approx(sigmas))
    assert change.symmetric_kl == (None if kl is None else pytest.approx(kl))
    if kl is not None:
        assert math.isfinite(kl) and kl >= 0


def test_selection_reads_the_ledger_oldest_first(tmp_path: Path, scenario: Path) -> None:
    from workbook.history.ledger import read_ledger

    root = tmp_path / "runs"
    for day in (14, 10, 12, 11, 13):
        scaled_night(root, scenario, day, factor=1 + day / 100)

    chosen = select_sources(read_ledger(root, SCENARIO, "cpu"), _settings(scenario), 3)

    assert [e.date[:10] for e in chosen.sources] == ["2026-11-12", "2026-11-13", "2026-11-14"]


def _settings(scenario: Path) -> dict[str, Any]:
    from workbook.params.settings import settings_of

    return settings_of(resolved(scenario))


def test_selection_keeps_other_hardware_out(tmp_path: Path, scenario: Path) -> None:
    root = tmp_path / "runs"
    paths = [scaled_night(root, scenario, day, factor=1 + day / 100) for day in (10, 11, 12, 13)]
    info = json.loads((paths[0] / "run.json").read_text())
    info["hardware"] = {**info["hardware"], "cpu": "Intel Xeon"}
    (paths[0] / "run.json").write_text(json.dumps(info))
    from workbook.history.ledger import read_ledger

    chosen = select_sources(read_ledger(root, SCENARIO, "cpu"), _settings(scenario), 5)

    assert [e.run_id for e in chosen.sources] == [p.name for p in paths[1:]]
    assert chosen.other_hardware == 1


def test_a_bare_name_is_the_params_file_and_the_default_out_is_under_the_runs_root(
        tmp_path: Path, scenario: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "runs"
    blessed(root, scenario)
    new_nights(root, scenario, days=(10, 11, 12))
    monkeypatch.setenv("WORKBOOK_PARAMS", str(scenario.parent))

    assert main(["baseline", "propose", SCENARIO, "--runs-root", str(root), "--last", "3"]) == 0

    made = sorted((root / "proposals" / f"{SCENARIO}.cpu").iterdir())
    assert len(made) == 1
    assert (made[0] / "review.html").is_file() and (made[0] / f"{SCENARIO}.cpu.json").is_file()
