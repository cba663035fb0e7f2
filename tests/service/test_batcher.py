"""The metrics batcher: reads that arrive within the window share one read, and the readings go back to
the waiting syncs a slice per turn of the event loop (a whole namespace's targets complete at once)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence

from autoscaler.core.observation import ExternalReading, MetricFailure, MetricReading
from autoscaler.core.spec import CrossVersionObjectReference
from autoscaler.loop.pacing import PER_TURN
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.reader import OnReady
from autoscaler.service.sync.batcher import MetricsBatcher


def query(name: str) -> TargetQuery:
    return TargetQuery("shop", name, CrossVersionObjectReference("Deployment", name), "app=x", (), ())


class Reader:
    def __init__(self, *, fail: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.fail = fail

    async def __call__(
        self, queries: Sequence[TargetQuery], at: float | None, *, on_ready: OnReady | None = None
    ) -> list[list[MetricReading]]:
        self.calls.append([q.name for q in queries])
        if self.fail:
            raise RuntimeError("boom")
        rows: list[list[MetricReading]] = [[ExternalReading((index,), 0.0)] for index in range(len(queries))]
        for index, row in enumerate(rows):  # one answer completes every target at the same moment
            if on_ready is not None:
                on_ready(index, row)
        return rows


async def test_reads_in_the_window_share_one_read_and_each_gets_its_own_row() -> None:
    reader = Reader()
    batcher = MetricsBatcher(reader, window=0.05)
    rows = await asyncio.gather(*(batcher.read(query(f"t{i}")) for i in range(5)))
    assert reader.calls == [[f"t{i}" for i in range(5)]]
    assert [row[0] for row in rows] == [ExternalReading((i,), 0.0) for i in range(5)]
    assert batcher.batches == 1


async def test_a_namespace_completed_at_once_is_released_a_slice_per_turn() -> None:
    batcher = MetricsBatcher(Reader(), window=0.01)
    resumed: list[int] = []
    seen_per_turn: list[int] = []

    async def sync(index: int) -> None:
        await batcher.read(query(f"t{index}"))
        resumed.append(index)

    async def probe() -> None:  # records, turn after turn, how many syncs have resumed
        while len(resumed) < 200:
            seen_per_turn.append(len(resumed))
            await asyncio.sleep(0)
        seen_per_turn.append(len(resumed))

    await asyncio.gather(probe(), *(sync(i) for i in range(200)))
    steps = [after - before for before, after in itertools.pairwise(seen_per_turn)]
    assert sorted(resumed) == list(range(200))
    assert max(steps) <= PER_TURN <= 32, steps
    assert sum(1 for step in steps if step) >= 200 // PER_TURN


async def test_a_cancelled_sync_does_not_hold_up_the_others() -> None:
    batcher = MetricsBatcher(Reader(), window=0.02)
    waiting = [asyncio.ensure_future(batcher.read(query(f"t{i}"))) for i in range(3)]
    await asyncio.sleep(0)
    waiting[1].cancel()
    done = await asyncio.gather(*waiting, return_exceptions=True)
    assert isinstance(done[1], asyncio.CancelledError)
    assert [row[0] for row in (done[0], done[2])] == [ExternalReading((0,), 0.0), ExternalReading((1,), 0.0)]


async def test_a_reader_that_raises_fails_every_metric_instead() -> None:
    batcher = MetricsBatcher(Reader(fail=True), window=0.0)
    q = TargetQuery("shop", "web", CrossVersionObjectReference("Deployment", "web"), "app=x", (), ())
    assert await batcher.read(q) == []  # no metrics asked, none failed
    rows = await asyncio.gather(batcher.read(query("a")), batcher.read(query("b")))
    assert all(all(isinstance(r, MetricFailure) for r in row) for row in rows)


async def test_closing_cancels_a_read_in_progress_and_the_syncs_waiting_for_it() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def read_many(
        queries: Sequence[TargetQuery], at: float | None, *, on_ready: OnReady | None = None
    ) -> list[list[MetricReading]]:
        started.set()
        try:
            await asyncio.Event().wait()  # Prometheus has not answered yet
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    batcher = MetricsBatcher(read_many, window=0.0)
    waiting = asyncio.ensure_future(batcher.read(query("web")))
    await asyncio.wait_for(started.wait(), 1)  # its window closed: the batch is being read
    await asyncio.wait_for(batcher.close(), 1)
    assert cancelled.is_set()  # the read stopped with the service, before its client was closed
    assert isinstance((await asyncio.gather(waiting, return_exceptions=True))[0], asyncio.CancelledError)
