"""Large answers are decoded on one worker thread: off the event loop's thread, one at a time."""

from __future__ import annotations

import asyncio
import threading
import time

from autoscaler.prometheus.offload import DecodeThread


async def test_work_runs_off_the_loop_on_one_thread_one_job_at_a_time() -> None:
    decoder = DecodeThread()
    running: list[int] = []
    overlap: list[bool] = []

    def job(n: int) -> str:
        running.append(n)
        overlap.append(len(running) > 1)
        time.sleep(0.02)
        running.remove(n)
        return threading.current_thread().name

    try:
        names = await asyncio.gather(*(decoder.run(lambda n=n: job(n)) for n in range(5)))
    finally:
        decoder.close()
    assert len(set(names)) == 1 and names[0].startswith("prometheus-decode")
    assert names[0] != threading.current_thread().name
    assert not any(overlap)


async def test_the_loop_keeps_its_turns_while_the_thread_works() -> None:
    decoder = DecodeThread()
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        await decoder.run(lambda: time.sleep(0.3))  # a blocking call: the lock is released
    finally:
        ticker.cancel()
        decoder.close()
    assert ticks >= 10
