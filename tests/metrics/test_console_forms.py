"""Every console form verl output takes on its way to a log file, and the traps that look alike."""

from __future__ import annotations

import math

import pytest

from workbook.metrics.console import ConsoleParser, read_console
from workbook.metrics.rows import parse_value

ESC = "\x1b"


def steps_of(text: str) -> dict[int, dict[str, float]]:
    return read_console(text.split("\n")).steps


@pytest.mark.parametrize(
    "prefix",
    [
        "(TaskRunner pid=14640) ",
        "(main_task pid=28294) ",
        "(FullyAsyncTrainer pid=7) ",
        "(WorkerDict pid=1609, ip=172.26.135.50) ",
        "(pid=864071) ",
        f"{ESC}[36m(TaskRunner pid=14640){ESC}[0m ",
        f"{ESC}[36m(vLLMHttpServer pid=860863){ESC}[0m {ESC}[1;36m(EngineCore_DP0 pid=861000){ESC}[0m ",
        "",
    ],
)
def test_ray_prefixes_and_ansi_are_stripped(prefix: str) -> None:
    assert steps_of(f"{prefix}step:3 - actor/pg_loss:0.5 - critic/score/mean:0.25") == {
        3: {"actor/pg_loss": 0.5, "critic/score/mean": 0.25}
    }


def test_repeated_across_cluster_suffix_is_not_part_of_the_last_value() -> None:
    line = f"(TaskRunner pid=1) step:4 - a/b:1.5{ESC}[32m [repeated 15x across cluster]{ESC}[0m"
    assert steps_of(line) == {4: {"a/b": 1.5}}


def test_tqdm_bar_glued_by_carriage_return() -> None:
    line = "(TaskRunner pid=1) \rTraining Progress:  10%|█         | 1/10 [00:01<00:09,  1.0s/it]\rstep:1 - a:2.0"
    assert steps_of(line) == {1: {"a": 2.0}}


def test_tqdm_bar_glued_without_separator() -> None:
    line = "Epoch 1/6:   6%|▋         | 4/62 [00:31<07:27,  7.71s/it]step:5 - train/loss:0.99 - train/lr(1e-3):0.0013"
    assert steps_of(line) == {5: {"train/loss": 0.99, "train/lr(1e-3)": 0.0013}}


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("0.123", 0.123),
        ("-0.000", -0.0),
        ("1e-06", 1e-06),
        ("1.0500949201741605e-05", 1.0500949201741605e-05),
        ("inf", math.inf),
        ("-inf", -math.inf),
        ("np.float64(0.0017013388)", 0.0017013388),
        ("np.int32(16)", 16.0),
        ("np.float32(-2.5)", -2.5),
        ("True", 1.0),
        ("12", 12.0),
    ],
)
def test_value_forms(raw: str, expected: float) -> None:
    assert parse_value(raw) == expected


def test_nan_value_is_kept_as_nan() -> None:
    run = steps_of("step:2 - actor/pg_loss:nan - actor/ppo_kl:np.float64(nan)")
    assert math.isnan(run[2]["actor/pg_loss"]) and math.isnan(run[2]["actor/ppo_kl"])


@pytest.mark.parametrize(
    "raw", ["np.float64(0.12", "0.1.2", "abc", "", "np.float64(", "tensor(0.5)x"]
)
def test_incomplete_or_foreign_values_are_not_numbers(raw: str) -> None:
    assert parse_value(raw) is None


def test_keys_with_parentheses_at_dash_and_slash() -> None:
    line = (
        "step:7 - val-core/openai/gsm8k/acc/mean@1:0.5 - train/lr(1e-3):0.001 - "
        "critic/vf-loss:2.0 - timing_s/agent_loop/slowest/generate_sequences:3.5"
    )
    assert steps_of(line)[7] == {
        "val-core/openai/gsm8k/acc/mean@1": 0.5,
        "train/lr(1e-3)": 0.001,
        "critic/vf-loss": 2.0,
        "timing_s/agent_loop/slowest/generate_sequences": 3.5,
    }


def test_line_cut_mid_value_keeps_complete_pairs() -> None:
    text = (
        "(TaskRunner pid=1) step:3 - a:1.5 - b:np.float64(0.2\n"
        "(TaskRunner pid=1) step:4 - a:2.5 - actor/pg_lo\n"
        "(TaskRunner pid=1) step:5 - a:3.5 - b:"
    )
    assert steps_of(text) == {3: {"a": 1.5}, 4: {"a": 2.5}, 5: {"a": 3.5}}


def test_several_lines_for_one_step_merge_and_later_values_win() -> None:
    text = "step:250 - train/loss:0.58 - x:1.0\nnoise\nstep:250 - val/loss:0.57 - x:2.0"
    run = read_console(text.split("\n"), "run.log")
    assert run.steps == {250: {"train/loss": 0.58, "x": 2.0, "val/loss": 0.57}}
    assert run.sources[250] == {
        "train/loss": "run.log:1",
        "x": "run.log:3",
        "val/loss": "run.log:3",
    }


def test_resumed_run_starts_at_its_resume_step() -> None:
    text = "Setting global step to 100\nstep:101 - a:1.0\nstep:102 - a:2.0"
    assert list(steps_of(text)) == [101, 102]


@pytest.mark.parametrize(
    "line",
    [
        "training/global_step:6 - training/epoch:0 - critic/score/mean:0.25",
        "ValueError: step 0 - the batch is empty",
        "ValueError: step:0 - the batch is empty",
        "(main_task pid=2818891) epoch 0, step 1",
        "wandb:   training/global_step 435",
        "wandb: Run summary: step 12",
        "(TaskRunner pid=1) test_gen_batch meta info: {'global_steps': 5, 'validate': True}",
        "Saving checkpoint to: /ckpt/global_step_250",
    ],
)
def test_lines_that_only_look_like_steps_are_not_steps(line: str) -> None:
    assert steps_of(line) == {}


def wrap(line: str, width: int) -> list[str]:
    """What a terminal copy of a hard-wrapped line gives: fixed-width rows, trailing spaces lost."""
    return [line[i : i + width].rstrip(" ") for i in range(0, len(line), width)]


LONG_ROW = "(TaskRunner pid=221183) step:6 - " + " - ".join(
    [f"global_seqlen/min:{3440006 + i}" for i in range(3)]
    + [
        "actor/pg_loss:np.float64(-0.0009361457098102819)",
        "actor/pg_clipfrac:np.float64(0.001701338811674052)",
        "num_turns/max:np.int32(16)",
        "training/global_step:6",
        "training/epoch:0",
        "critic/score/mean:0.2511962950229645",
        "timing_s/agent_loop/generate_sequences/min:np.float64(19.92)",
        "timing_s/gen:4616.70871562697",
        "val-core/openai/gsm8k/acc/mean@1:0.25",
        "train/lr(1e-3):1e-06",
    ]
    + [f"timing_per_token_ms/stage{i}:{i}.123456789" for i in range(20)]
)


@pytest.mark.parametrize("width", list(range(80, 260, 7)) + [214])
def test_hard_wrapped_row_parses_like_the_unwrapped_row(width: int) -> None:
    expected = steps_of(LONG_ROW)
    text = "\n".join(
        wrap(LONG_ROW, width) + ["", "(TaskRunner pid=221183) validation generation end"]
    )
    assert steps_of(text) == expected


def test_wrap_that_splits_global_step_is_not_a_new_step() -> None:
    cut = LONG_ROW.index("step:6 - training/epoch")
    width = cut  # the second physical row starts with "step:6 - training/epoch:0 - ..."
    rows = wrap(LONG_ROW, width)
    assert rows[1].startswith("step:6 - training/epoch:0")
    assert steps_of("\n".join(rows)) == steps_of(LONG_ROW)


def test_wrap_that_drops_the_space_after_the_dash() -> None:
    cut = LONG_ROW.index(" - training/epoch") + 2  # row ends in " -", the space falls on the wrap
    rows = wrap(LONG_ROW, cut + 1)
    assert rows[0].endswith(" -") and rows[1].startswith("training/epoch")
    assert steps_of("\n".join(rows)) == steps_of(LONG_ROW)


def test_next_unprefixed_step_row_after_a_full_width_row_is_not_a_continuation() -> None:
    first = "step:1 - " + " - ".join(f"m{i}:1.25" for i in range(12))
    second = "step:2 - a:1.0"
    text = f"{first}\n{second}"
    assert steps_of(text) == {1: {f"m{i}": 1.25 for i in range(12)}, 2: {"a": 1.0}}


def test_live_mode_returns_a_row_as_soon_as_its_line_ends() -> None:
    parser = ConsoleParser(wraps=False)
    rows = parser.feed(
        "(TaskRunner pid=1) step:1 - " + " - ".join(f"m{i}:0.5" for i in range(20)) + "\n"
    )
    assert [r.step for r in rows] == [1]
    batch = ConsoleParser(wraps=True)
    assert (
        batch.feed("(TaskRunner pid=1) step:1 - " + " - ".join(f"m{i}:0.5" for i in range(20)))
        == []
    )
    assert [r.step for r in batch.finish()] == [1]


def test_pprinted_validation_dicts_are_read_but_are_not_steps() -> None:
    text = "\n".join(
        [
            "(TaskRunner pid=856134) (\"Initial validation metrics: {'val-aux/openai/gsm8k/reward/mean@1': 0.0, \"",
            "(vLLMHttpServer pid=9) INFO interleaved line from another process",
            "(TaskRunner pid=856134)  \"'val-core/openai/gsm8k/acc/mean@1': 0.5, 'val-aux/num_turns/min': 2, \"",
            "(TaskRunner pid=856134)  \"'timing/testing': np.float64(3.5)}\")",
            "(main_task pid=1) \"Final validation metrics: {'val/test_score/nq': 0.25}\"",
            "Initial validation metrics: {'val/x': 1.0,",
            " 'val/y': 2}",
        ]
    )
    run = read_console(text.split("\n"))
    assert run.steps == {}
    assert run.validation == {
        "initial": {
            "val-aux/openai/gsm8k/reward/mean@1": 0.0,
            "val-core/openai/gsm8k/acc/mean@1": 0.5,
            "val-aux/num_turns/min": 2.0,
            "timing_s/testing": 3.5,
            "val/x": 1.0,
            "val/y": 2.0,
        },
        "final": {"val/test_score/nq": 0.25},
    }


def test_old_names_become_canonical_with_unit_conversion() -> None:
    run = read_console(
        [
            "step:0 - timing/gen:23.792 - timing_per_token/gen:0.0004 - mfu/actor:0.3 - "
            "perf/max_memory_reserved_gb:59.5 - perf/cpu_memory_used_gb:64.1"
        ]
    )
    assert run.steps[0] == {
        "timing_s/gen": 23.792,
        "timing_per_token_ms/gen": 0.4,
        "perf/mfu/actor": 0.3,
        "actor/perf/max_memory_reserved_gb": 59.5,
        "actor/perf/cpu_memory_used_gb": 64.1,
    }
    assert run.original_names["perf/mfu/actor"] == "mfu/actor"


def test_the_parser_yields_rows_in_order_with_physical_line_numbers() -> None:
    parser = ConsoleParser()
    rows = parser.feed_lines(["noise", "step:1 - a:1", "", "step:2 - a:2"]) + parser.finish()
    assert [(r.step, r.line) for r in rows] == [(1, 2), (2, 4)]


def _unwrapped_rows_of_log_08() -> list[str]:
    from pathlib import Path

    text = (
        Path(__file__).resolve().parents[1]
        / "data"
        / "verl_logs"
        / "08_dapo-retool-npfloat64-hardwrapped-214.log"
    ).read_text()
    rows = []
    for block in text.split("\n\n"):
        row = ""
        for part in block.strip("\n").split("\n"):
            row += (" " if row.endswith(" -") else "") + part
        rows.append(row)
    return rows


@pytest.mark.parametrize("width", list(range(80, 420, 11)))
def test_real_rows_rewrapped_at_any_terminal_width_parse_the_same(width: int) -> None:
    rows = _unwrapped_rows_of_log_08()
    expected = read_console(rows).steps
    assert [len(expected[s]) for s in expected] == [71, 71, 71, 71]
    wrapped = [piece for row in rows for piece in wrap(row, width)]
    assert read_console(wrapped).steps == expected
