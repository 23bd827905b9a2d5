"""What the edge tests share: a minimal valid NPU scenario, and a guard against blocking reads."""

from __future__ import annotations

import signal
from collections.abc import Iterator
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
