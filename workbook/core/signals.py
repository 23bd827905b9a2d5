"""SIGINT and SIGTERM turned into a stop request while a block runs, then put back.

A terminal's Ctrl-C, ``kill`` and a CI runner's cancellation all mean "stop, but keep what was
done": a run, a suite or a sweep asks what it runs to stop and still writes its report. Python
lets only the main thread set handlers; elsewhere the block runs with the handlers as they are.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOPPING = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stopping_on_signals(on_stop: Callable[[str], None]) -> Iterator[None]:
    """Call ``on_stop(name)`` (``"SIGINT"``, ``"SIGTERM"``) for each such signal in the block."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        on_stop(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handler) for sig in STOPPING}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
