"""A sync gives its concurrency slot back while it waits for its metrics, and never leaks one."""

from __future__ import annotations

import asyncio

from autoscaler.service.sync.schedule import ConcurrencySlot


async def test_a_waiting_sync_lets_another_work() -> None:
    semaphore = asyncio.Semaphore(1)
    metrics_ready = asyncio.Event()
    order: list[str] = []

    async def waiting_for_metrics() -> None:
        async with ConcurrencySlot(semaphore) as slot:
            order.append("a works")
            async with ConcurrencySlot.given_back(slot):
                await metrics_ready.wait()
            order.append("a works again")

    async def other() -> None:
        async with ConcurrencySlot(semaphore):
            order.append("b works")
            metrics_ready.set()

    await asyncio.wait_for(asyncio.gather(waiting_for_metrics(), other()), 2)
    assert order == ["a works", "b works", "a works again"]
    assert not semaphore.locked()


async def test_cancelled_while_taking_the_slot_back_leaks_nothing() -> None:
    semaphore = asyncio.Semaphore(1)
    given_back, metrics_ready = asyncio.Event(), asyncio.Event()

    async def sync() -> None:
        async with ConcurrencySlot(semaphore) as slot, ConcurrencySlot.given_back(slot):
            given_back.set()
            await metrics_ready.wait()

    task = asyncio.create_task(sync())
    await given_back.wait()
    async with ConcurrencySlot(semaphore):  # another sync takes the slot given back…
        metrics_ready.set()
        await asyncio.sleep(0.01)  # …so the first one waits to get it back, and is cancelled
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled()
    assert not semaphore.locked()
    async with ConcurrencySlot(semaphore):  # exactly one slot: a second one is not free
        assert semaphore.locked()


async def test_without_a_slot_nothing_is_given_back() -> None:
    semaphore = asyncio.Semaphore(1)
    async with ConcurrencySlot.given_back(None):
        pass
    assert not semaphore.locked()
