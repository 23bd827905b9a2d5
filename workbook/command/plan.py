"""The exact command of a run, as the command stage hands it to a launcher."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """The exact command of a run: argv (no shell) and the environment it adds."""

    argv: list[str]
    env: dict[str, str]
