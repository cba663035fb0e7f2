"""Coalescing metric reads: targets whose syncs start close together share Prometheus queries.

Each reconciler asks for its own metrics; the batcher holds the requests that arrive within a short
window and hands them to the Prometheus layer in one ``MetricsReader.read`` call, which groups
targets sharing a query template into one query. A namespace's targets sync on the same tick, so a
window holds whole namespaces (and the other namespaces whose ticks fall inside it): with 1,000
targets in 50 namespaces and a 1 s window, ~15 reads and ~30 queries a period instead of 1,000 reads.

Sharing a read never means waiting for the slowest target in it: the reader hands each target its
readings as soon as its own queries are done, and the batcher passes them on at once. One answer
completes a whole namespace's targets at the same moment (200 of them at 10,000 targets in 50
namespaces); their syncs go on through the service's :class:`~autoscaler.loop.pacing.TurnPacer`, a
few per turn of the event loop, so that their decisions do not run back to back before the loop sees a
timer again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Protocol

import structlog

from autoscaler.core.observation import MetricFailure, MetricReading
from autoscaler.loop.pacing import TurnPacer, running_loop
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.reader import OnReady

log = structlog.get_logger("autoscaler.batcher")


class ReadMany(Protocol):
    """Read targets' metrics now (``at`` None: by Prometheus' clock); ``on_ready(i, row)`` as soon as
    target ``i``'s readings are complete (a reader that cannot tell may only return them all)."""

    def __call__(
        self, queries: Sequence[TargetQuery], at: float | None, *, on_ready: OnReady | None = None
    ) -> Awaitable[list[list[MetricReading]]]: ...


class MetricsBatcher:
    def __init__(self, read_many: ReadMany, *, window: float = 1.0, pacer: TurnPacer | None = None) -> None:
        """``pacer``: what a sync passes once its readings came (the service shares one with the syncs'
        starts, see :mod:`~autoscaler.loop.pacing`)."""
        self._read_many = read_many
        self._window = window
        self._pacer = pacer or TurnPacer()
        self._pending: list[tuple[TargetQuery, asyncio.Future[list[MetricReading]]]] = []
        self._flush_task: asyncio.Task[None] | None = None  # the batch whose window is open
        self._flushes: set[asyncio.Task[None]] = set()  # every batch not done: in its window or being read
        self.batches = 0
        self._loop: asyncio.AbstractEventLoop | None = None

    def read(self, query: TargetQuery) -> asyncio.Future[list[MetricReading]]:
        """This target's readings (one per metric, failures included) when the future is done; never fails
        for a metric. Cancelling the future is all a sync that gives up has to do. A future, not a coroutine
        around it: a sync waits here for a second or more, and each coroutine it waits in is one more object
        the cyclic collector walks and one more frame resumed when the readings come."""
        loop = self._loop = running_loop(self._loop)
        future: asyncio.Future[list[MetricReading]] = loop.create_future()
        self._pending.append((query, future))
        if self._flush_task is None:
            self._flush_task = task = asyncio.create_task(self._flush_later(), name="metrics-batch")
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)
        return future  # done through the pacer: a few syncs' readings per turn

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
        pacer = self._pacer
        # A row handed over is queued in the pacer (its future is not done yet): each is handed once, as soon
        # as it is complete or with the read's result, to the sync still waiting on its future.
        handed = [False] * len(live)

        def hand_over(index: int, row: list[MetricReading]) -> None:
            if handed[index]:
                return
            handed[index] = True
            future = live[index][1]
            if not future.done():
                pacer.pass_on(future, row)

        try:
            rows = await self._read_many([q for q, _ in live], None, on_ready=hand_over)
        except asyncio.CancelledError:  # closed: the syncs still waiting for this batch wait no more
            for _, future in live:
                future.cancel()
            raise
        except Exception as exc:  # the reader should not raise; if it does, every metric failed
            log.exception("metrics read failed")
            rows = [[MetricFailure(f"reading metrics failed: {exc}") for _ in q.metrics] for q, _ in live]
        for index, row in enumerate(rows):
            hand_over(index, row)

    async def close(self) -> None:
        """Cancel every batch, the ones being read included: a read that went on after the service's
        shutdown used a Prometheus client already closed."""
        flushes = list(self._flushes)
        for task in flushes:
            task.cancel()
        await asyncio.gather(*flushes, return_exceptions=True)
        for _, future in self._pending:
            if not future.done():
                future.cancel()
        self._pending = []
