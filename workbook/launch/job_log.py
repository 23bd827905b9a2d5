"""A Ray job's log, followed into run.log without losing or repeating a line.

Ray's ``tail_job_logs`` ends silently when its connection drops (ray-project/ray#57002), and
every new tail starts again from the log's first byte. :func:`follow_log` (a thread) keeps
reconnecting until the job is over and tags each new connection; :class:`LineLog` counts the
lines of each connection and writes only those past what is already in run.log. At the end
the full job log (authoritative) fills in whatever the stream missed.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from dataclasses import dataclass
from typing import TextIO

from workbook.launch import ray_client
from workbook.launch.outcome import LineSink


@dataclass
class LineLog:
    """Appends streamed chunks to run.log as whole lines, never the same line twice.

    Every (re)connection of Ray's tail starts from the job log's first byte, so each
    connection counts its lines and only those past ``written`` are new.
    """

    handle: TextIO
    on_line: LineSink | None
    written: int = 0
    _seen: int = 0
    _partial: str = ""

    def connect(self) -> None:
        self._seen, self._partial = 0, ""

    def feed(self, chunk: str) -> None:
        *lines, self._partial = (self._partial + chunk).split("\n")
        for line in lines:
            self._seen += 1
            if self._seen > self.written:
                self._emit(line)

    def reconcile(self, full_log: str) -> int:
        """Append what the stream missed from the authoritative full log; count appended."""
        lines = full_log.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        missing = lines[self.written :]
        for line in missing:
            self._emit(line)
        return len(missing)

    def _emit(self, line: str) -> None:
        self.handle.write(line + "\n")
        self.handle.flush()
        self.written += 1
        if self.on_line is not None:
            self.on_line(line)


def follow_log(
    client: ray_client.JobsClient,
    job_id: str,
    out: queue.Queue[tuple[str, str]],
    done: threading.Event,
) -> None:
    """Thread body: follow the job log, reconnecting until the job is over (or ``done``)."""

    async def follow() -> None:
        while not done.is_set():
            out.put(("connect", ""))
            try:
                async for chunk in client.tail(job_id):
                    out.put(("chunk", chunk))
                    if done.is_set():
                        return
            except Exception as exc:  # noqa: BLE001 - any drop (aiohttp, Ray, socket): reconnect
                out.put(("drop", f"{type(exc).__name__}: {exc}"))
            else:
                try:
                    if client.state(job_id).terminal:
                        return
                except Exception as exc:  # noqa: BLE001 - status unknown: reconnect anyway
                    out.put(("drop", f"{type(exc).__name__}: {exc}"))
                out.put(("drop", "stream ended before the job did"))
            for _ in range(10):
                if done.is_set():
                    return
                await asyncio.sleep(0.1)

    ray_client.run_coroutine(follow())
    out.put(("end", ""))
