"""Panels: present when their metrics are, absent (not empty) when not; the live view's throttle."""

from __future__ import annotations

from pathlib import Path

from workbook.metrics.loading import load_metrics
from workbook.metrics.model import RunMetrics
from workbook.plots.live import LiveView
from workbook.plots.panels import Band, build_panels, regression_panel
from workbook.plots.trends import trend_chart

DATA = Path(__file__).parent / "data"
PNG = b"\x89PNG\r\n\x1a\n"


def _keys(metrics: RunMetrics, **kw) -> list[str]:
    return [p.key for p in build_panels(metrics, **kw)]


def test_gspo_metrics_give_every_panel_but_the_critic():
    panels = build_panels(
        load_metrics(DATA / "gspo-metrics.jsonl"), clip_ratio_low=3e-4, clip_ratio_high=4e-4
    )
    assert [p.key for p in panels] == [
        "policy_loss",
        "clip_fraction",
        "rollout_timing",
        "timing_breakdown",
        "reward",
        "response_length",
        "throughput",
    ]  # no memory panel: on CPU verl logs accelerator memory as 0
    assert all(p.png.startswith(PNG) and len(p.png) < 120_000 for p in panels)
    clip = panels[1]
    assert "low 0.0003" in clip.title and "high 0.0004" in clip.title
    assert clip.metrics == ("actor/pg_clipfrac",)  # the lower clip fraction is identically zero


def test_ppo_metrics_add_the_critic_panel():
    panels = {p.key: p for p in build_panels(load_metrics(DATA / "ppo-metrics.jsonl"))}
    assert panels["critic"].metrics == ("critic/vf_loss", "critic/vf_clipfrac")
    assert "timing_s/update_critic" in panels["timing_breakdown"].metrics


def test_lower_clip_fraction_is_drawn_when_it_is_not_zero():
    run = RunMetrics()
    for step in (1, 2):
        run.put_many(step, {"actor/pg_clipfrac": 0.1, "actor/pg_clipfrac_lower": 0.02 * step}, "t")
    (clip,) = build_panels(run)
    assert clip.metrics == ("actor/pg_clipfrac", "actor/pg_clipfrac_lower")
    assert "clip ratio" not in clip.title  # no ratios configured: none claimed


def test_memory_panel_needs_measured_memory():
    run = RunMetrics()
    run.put_many(1, {"actor/perf/max_memory_allocated_gb": 0.0}, "t")
    assert _keys(run) == []
    run.put_many(2, {"actor/perf/max_memory_allocated_gb": 41.5}, "t")
    assert _keys(run) == ["memory"]


def test_absent_metrics_give_no_panel():
    assert build_panels(RunMetrics()) == []
    run = RunMetrics()
    run.put_many(1, {"actor/pg_loss": 0.1, "timing_s/gen": 2.0}, "t")
    assert _keys(run) == ["policy_loss", "rollout_timing", "timing_breakdown"]
    nan_only = RunMetrics()
    nan_only.put_many(1, {"actor/pg_loss": float("nan")}, "t")
    assert _keys(nan_only) == []


def test_regression_panel_needs_the_metric():
    run = load_metrics(DATA / "gspo-metrics.jsonl")
    band = Band(value=0.25, low=0.2, high=0.3, window=(2, 4))
    assert regression_panel(run, "actor/pg_clipfrac", band, "t").png.startswith(PNG)
    assert regression_panel(run, "critic/vf_loss", band, "t") is None


def test_trend_chart_marks_first_run_out_of_band():
    png = trend_chart(
        "s",
        ["a", "b", "c"],
        {"throughput": [1.0, None, 3.0], "reward": [None] * 3},
        {"throughput": "tokens/s/device"},
        {"throughput": 2},
    )
    assert png.startswith(PNG)


def test_live_view_shows_status_from_the_first_line_and_redraws_once_per_step(capsys, monkeypatch):
    import workbook.plots.live

    monkeypatch.setattr(workbook.plots.live, "REFRESH_S", 3600.0)  # no second refresh in the test
    live = LiveView(clip_ratio_low=3e-4, clip_ratio_high=4e-4, total_steps=4, enabled=True)
    run = RunMetrics()
    live.line("ray init kwargs: {'num_cpus': 32}", run)
    assert live.progress.phase == "starting Ray" and live.frames == 1 and live.redraws == 0
    run.put_many(
        1,
        {"actor/pg_loss": 0.1, "actor/pg_clipfrac": 0.1, "timing_s/gen": 2.0, "timing_s/step": 3.0},
        "t",
    )
    for _ in range(5):
        live.line("(TaskRunnerV1 pid=7) step:1 - actor/pg_loss:0.1", run)
    assert live.redraws == 1 and live.frames == 1  # the tail refreshes at most once a second
    assert live.progress.status().startswith("step 2 of 4")
    run.put_many(2, {"actor/pg_loss": 0.2}, "t")
    live.line("\x1b[36m(TaskRunnerV1 pid=7)\x1b[0m step:2 - " + "x:1 - " * 100, run)
    assert live.redraws == 2
    assert live.tail[-1].startswith("(TaskRunnerV1 pid=7) step:2") and live.tail[-1].endswith("…")
    live.close(run)
    assert live.frames == 2  # the final frame stays
    assert LiveView().enabled is False  # outside a Jupyter kernel the view does nothing


def test_trend_chart_draws_an_onset_on_its_series_named_by_its_night(monkeypatch):
    import matplotlib.axes

    lines: list[tuple[float, str, str]] = []
    axvline = matplotlib.axes.Axes.axvline

    def spy(self, x=0, *args, **kwargs):
        lines.append((x, kwargs.get("linestyle"), kwargs.get("label")))
        return axvline(self, x, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "axvline", spy)
    labels = [f"11-{d:02d}" for d in range(1, 9)]
    png = trend_chart("s", labels, {"throughput": [1.0] * 4 + [2.0] * 4}, {}, {},
                      [(2, "torch")], onsets={"throughput": [4]})

    assert png.startswith(PNG)
    assert lines == [(2, ":", None), (4, "--", "onset: 11-05")]
