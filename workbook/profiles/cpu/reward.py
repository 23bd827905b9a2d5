"""Dense reward of the tiny CPU scenarios: the fraction of digit characters in the response.

A randomly initialised model never solves GSM8K-style questions, so verl's built-in exact-match
reward is always 0 and every advantage, loss and gradient with it. Counting digits gives each
sampled response a different score in [0, 1], so GRPO/GAE have something to learn. verl loads
this file by path (``reward.custom_reward_function.path``) and calls ``compute_score``; it
must not import anything from the workbook.
"""

from __future__ import annotations

from typing import Any


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None, **kwargs: Any
) -> float:
    """Share of characters in ``solution_str`` that are digits (0.0 for an empty response)."""
    if not solution_str:
        return 0.0
    return sum(char.isdigit() for char in solution_str) / len(solution_str)
