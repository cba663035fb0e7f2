"""Coalescing metric reads: targets whose syncs start close together share Prometheus queries.

Each reconciler asks for its own metrics; the batcher holds the requests that arrive within a short
window and hands them to the Prometheus layer in one ``MetricsReader.read`` call, which groups
targets sharing a query template into one query. A namespace's targets sync on the same tick, so a
window holds whole namespaces (and the other namespaces whose ticks fall inside it): with 1,000
targets in 50 namespaces and a 1 s window, ~15 reads and ~30 queries a period instead of 1,000 reads.

Sharing a read never means waiting for the slowest target in it: the reader hands each target its
readings as soon as its own queries are done, and the batcher passes them on at once — at most
:data:`RELEASE_PER_TURN` of them per turn of the event loop. One answer completes a whole namespace's
targets at the same moment (200 of them at 10,000 targets in 50 namespaces); woken together, their
decisions would run back to back before the loop saw a timer again (~0.3 ms each). Released in
slices, a timer waits for one slice at most.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Sequence
from typing import Protocol

import structlog

from autoscaler.core.observation import MetricFailure, MetricReading
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.reader import OnReady

log = structlog.get_logger("autoscaler.batcher")

RELEASE_PER_TURN = 16  # readings handed to waiting syncs per turn of the event loop


class ReadMany(Protocol):
    """Read targets' metrics now (``at`` None: by Prometheus' clock); ``on_ready(i, row)`` as soon as
    target ``i``'s readings are complete (a reader that cannot tell may only return them all)."""

    def __call__(
        self, queries: Sequence[TargetQuery], at: float | None, *, on_ready: OnReady | None = None
    ) -> Awaitable[list[list[MetricReading]]]: ...


class MetricsBatcher:
    def __init__(self, read_many: ReadMany, *, window: float = 1.0) -> None:
        self._read_many = read_many
        self._window = window
        self._pending: list[tuple[TargetQuery, asyncio.Future[list[MetricReading]]]] = []
        self._flush_task: asyncio.Task[None] | None = None
        self.batches = 0
        self._releases: deque[tuple[asyncio.Future[list[MetricReading]], list[MetricReading]]] = deque()
        self._releasing = False

    async def read(self, query: TargetQuery) -> list[MetricReading]:
        """This target's readings (one per metric, failures included); never raises for a metric."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[MetricReading]] = loop.create_future()
        self._pending.append((query, future))
        if self._flush_task is None:
            self._flush_task = asyncio.create_task(self._flush_later(), name="metrics-batch")
        return await future

    async def _flush_later(self) -> None:
        try:
            if self._window > 0:
                await asyncio.sleep(self._window)
        finally:
            self._flush_task = None
        batch, self._pending = self._pending, []
        live = [(q, f) for q, f in batch if not f.done()]  # a cancelled sync no longer waits
        if not live:
            return
        self.batches += 1

        def ready(index: int, row: list[MetricReading]) -> None:
            self._release(live[index][1], row)

        try:
            rows = await self._read_many([q for q, _ in live], None, on_ready=ready)
        except Exception as exc:  # the reader should not raise; if it does, every metric failed
            log.exception("metrics read failed")
            rows = [[MetricFailure(f"reading metrics failed: {exc}") for _ in q.metrics] for q, _ in live]
        for (_, future), row in zip(live, rows, strict=True):
            self._release(future, row)

    def _release(self, future: asyncio.Future[list[MetricReading]], row: list[MetricReading]) -> None:
        """Hand ``row`` to the sync waiting on ``future``, in the next slice of releases."""
        if future.done():  # cancelled, or already handed over by on_ready
            return
        self._releases.append((future, row))
        if not self._releasing:
            self._releasing = True
            asyncio.get_running_loop().call_soon(self._release_slice)

    def _release_slice(self) -> None:
        for _ in range(min(RELEASE_PER_TURN, len(self._releases))):
            future, row = self._releases.popleft()
            if not future.done():
                future.set_result(row)
        if self._releases:
            asyncio.get_running_loop().call_soon(self._release_slice)
        else:
            self._releasing = False

    async def close(self) -> None:
        task = self._flush_task
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        for _, future in self._pending:
            if not future.done():
                future.cancel()
        self._pending = []
