"""Onsets: a headline number's change of level across nights, found where it starts."""

from __future__ import annotations

import random

import pytest

from workbook.history.onsets import MIN_NIGHTS, onsets


def noisy(n: int, seed: int, *, level: float = 10.0, sigma: float = 0.3) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(level, sigma) for _ in range(n)]


@pytest.mark.parametrize("night", [3, 6, 9])
def test_a_step_in_twelve_nights_is_found_at_its_night(night: int) -> None:
    series = noisy(12, seed=night)
    series[night:] = [v + 2.0 for v in series[night:]]  # about 7 noise widths

    assert onsets(series) == [night]


def test_a_step_in_a_series_flat_to_the_digit_is_found() -> None:
    assert onsets([5.0] * 7 + [6.0] * 5) == [7]


def test_flat_noise_has_no_onset() -> None:
    assert onsets(noisy(12, seed=0)) == []
    marked = sum(bool(onsets(noisy(12, seed=s))) for s in range(200))
    assert marked <= 10  # at most 5% of flat series (measured: about 2%)


@pytest.mark.parametrize("series", [
    [], [1.0], [1.0, 1.0, 9.0, 9.0, 9.0], [1.0, None, 1.0, 9.0, None, 9.0, 9.0],
    [1.0] * 3 + [float("nan")] * 6 + [9.0] * 2,
], ids=["empty", "one", "five", "five-measured", "nans"])
def test_fewer_than_six_measured_nights_have_no_onset(series: list[float | None]) -> None:
    assert MIN_NIGHTS == 6
    assert onsets(series) == []


def test_an_onset_is_named_by_its_night_in_the_series_with_gaps() -> None:
    series: list[float | None] = [1.0, 1.0, None, 1.0, 1.0, 9.0, None, 9.0, 9.0]

    assert onsets(series) == [5]
