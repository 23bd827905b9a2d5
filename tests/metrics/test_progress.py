"""The live status line read from a real CPU run's log: phases first, then steps and time left."""

from __future__ import annotations

from pathlib import Path

from workbook.metrics.progress import Progress

REAL_RUN = Path(__file__).resolve().parents[1] / "profiles" / "data" / "gspo_cpu_run.log"


def test_phases_follow_a_real_run_and_never_go_back() -> None:
    progress = Progress()
    seen = [progress.phase]
    for number, line in enumerate(REAL_RUN.read_text(errors="replace").splitlines()):
        progress.feed(line, now=float(number))
        if progress.phase != seen[-1]:
            seen.append(progress.phase)
    assert seen[:2] == ["starting verl", "starting Ray"]
    assert seen.index("loading the model") < seen.index("starting vLLM") < seen.index("training")
    assert progress.step == 4 and progress.total_steps == 4
    assert progress.status(now=1e6).startswith("step 4 of 4")


def test_status_counts_steps_and_estimates_the_time_left() -> None:
    progress = Progress(total_steps=4, started=0.0)
    assert progress.status(now=5.0) == "starting verl · 5 s elapsed"
    progress.feed("(TaskRunnerV1 pid=1) step:1 - actor/pg_loss:0.1", now=60.0)
    progress.feed("(TaskRunnerV1 pid=1) step:2 - actor/pg_loss:0.1", now=70.0)
    assert progress.status(now=75.0) == (
        "step 3 of 4 · 1 min 15 s elapsed · last step 10.0 s · about 20 s left")
    progress.feed("(TaskRunnerV1 pid=1) step:1 - actor/pg_loss:0.1", now=80.0)  # a late repeat
    assert progress.step == 2
