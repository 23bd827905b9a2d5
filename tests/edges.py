"""What the edge tests share: a minimal valid NPU scenario, and a guard against blocking reads."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# A scenario that validates without NPUs (nothing is launched): the edge tables vary one field.
NPU_SCENARIO = """\
profile: npu
model_path: /m
train_files: /t.parquet
val_files: /v.parquet
devices_per_node: 8
train_batch_size: 32
ppo_mini_batch_size: 16
rollout_n: 4
"""


@contextmanager
def never_blocks(seconds: int) -> Iterator[None]:
    """Fail instead of hanging: a FIFO or device opened for a blocking read would wait for ever."""

    def timed_out(signum: int, frame: object) -> None:
        raise TimeoutError(f"blocked on its input for {seconds} s")

    previous = signal.signal(signal.SIGALRM, timed_out)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def raised_within(call: Callable[[], object], seconds: float = 10) -> BaseException | None:
    """What ``call`` raised, run in a thread; fails the test if it is still blocked after
    ``seconds`` (a thread, not SIGALRM: the call may run where signals cannot reach it)."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - the thread reports what it met
            raised.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=seconds)
    assert not worker.is_alive(), f"{call} blocked for {seconds} s"
    return raised[0] if raised else None
