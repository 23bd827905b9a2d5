"""Real verl PPO (GAE + critic) across a local 2-node Ray cluster the run starts itself."""

from __future__ import annotations

import pytest

from tests.conftest import CliRun, SuiteRun
from tests.report import report_assertions as ra

pytestmark = [pytest.mark.verl, pytest.mark.ray]


def test_ppo_job_succeeds_with_critic_and_actor_metrics_every_step(ppo_run: CliRun) -> None:
    assert ppo_run.exit_code == 0, ppo_run.output
    info = ppo_run.json("run.json")
    assert info["status"] == "succeeded" and info["launcher"] == "ray"
    assert info["ray_job"]["status"] == "SUCCEEDED"
    assert info["ray_job"]["job_id"] == ppo_run.run_dir.name
    from workbook.metrics.loading import load_metrics

    metrics = load_metrics(ppo_run.run_dir)
    assert metrics.step_numbers == [1, 2]
    for name in ("critic/vf_loss", "actor/pg_loss", "critic/vf_clipfrac"):
        assert set(metrics.series(name)) == {1, 2}, name
    assert "step:2 " in (ppo_run.run_dir / "run.log").read_text()


def test_the_job_really_spans_both_nodes_and_replays_its_rollouts(ppo_run: CliRun) -> None:
    preflight = ppo_run.json("run.json")["ray_job"]["preflight"]
    assert sum(1 for n in preflight["nodes"] if n["alive"]) == 2
    assert ppo_run.json("run.json")["diagnosis"]["replayed_steps"] == [1, 2]


def test_ppo_is_judged_against_its_blessed_baseline(ppo_run: CliRun) -> None:
    rows = {r["name"]: r for r in ppo_run.json("checks.json")["rows"]}
    assert rows["critic/vf_loss vs baseline"]["status"] == "pass"
    assert rows["actor/pg_loss vs baseline"]["status"] == "pass"


def test_ppo_report_has_the_critic_curves(ppo_run: CliRun) -> None:
    ra.assert_report(ppo_run.run_dir, verdict="passed")
    page = ra.report_html(ppo_run.run_dir)
    assert "critic" in ra.panels(page)
    assert {"critic/vf_loss", "critic/vf_clipfrac"} <= set(ra.panel_metrics(page, "critic"))


def test_the_cluster_started_for_the_run_is_gone_afterwards(smoke: SuiteRun) -> None:
    assert smoke.leftovers == []
    assert not (smoke.directory / "cluster.json").exists()
