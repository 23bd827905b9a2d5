"""A scenario's headline number across its nights, as a tiny inline SVG line for the index.

One point per night, oldest first, each dot in its night's verdict colour (the index's badge
colours, ``templates/page.css.j2``), so a glance shows the trend and which nights were red. The
numbers go into the SVG's title for a reader who hovers; the full charts are further down.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT, PAD = 120, 26, 3
SHOWN_NIGHTS = 30  # the newest nights drawn


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    verdict: str


@dataclass(frozen=True)
class Sparkline:
    """What the template draws: the line's points, one dot per night and the hover text."""

    points: str
    dots: tuple[Dot, ...]
    title: str
    width: int = WIDTH
    height: int = HEIGHT


def sparkline(label: str, nights: Sequence[tuple[float | None, str]]) -> Sparkline | None:
    """``nights``: (headline value or None, verdict) oldest first; None under two values."""
    shown = [(v, verdict) for v, verdict in nights[-SHOWN_NIGHTS:] if v is not None]
    if len(shown) < 2:
        return None
    values = [v for v, _ in shown]
    low, high = min(values), max(values)
    if high == low:  # a flat line sits in the middle
        low, high = low - 1.0, high + 1.0
    span = high - low
    step = (WIDTH - 2 * PAD) / (len(shown) - 1)
    dots = tuple(Dot(round(PAD + i * step, 1),
                     round(HEIGHT - PAD - (v - low) / span * (HEIGHT - 2 * PAD), 1), verdict)
                 for i, (v, verdict) in enumerate(shown))
    title = (f"{label} over {len(shown)} nights: {values[0]:.4g} to {values[-1]:.4g} "
             f"(low {min(values):.4g}, high {max(values):.4g})")
    return Sparkline(" ".join(f"{d.x},{d.y}" for d in dots), dots, title)
