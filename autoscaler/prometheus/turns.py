"""Long work on the event loop in steps, with a turn for the loop between them.

A 10,000-target sync reads answers of 100,000 series: decoding one and turning it into readings is
~100 ms of pure Python (200+ ms on a slow core). Done in one go, everything else on the loop (the
reconcilers' ticks, the HTTP server's answers, the watches' events) waits for all of it. The work is written as a
generator that yields every few milliseconds; :func:`in_turns` runs it, letting the loop run whatever is
ready at each yield.

Not a worker thread: the work is pure Python, so a thread never runs it beside the loop, only instead
of it, taking the interpreter lock in turns with the loop's thread. Each time the loop's thread gave
the lock up (any socket call does) it waited out the thread's switch interval to get it back, so its
own short steps became long ones: at 10,000 targets the loop fell 225 ms behind its timers with one
decoding thread (bench/service.py, BENCHMARKS.md), the steps that waited being the loop's own decodes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import TypeVar

T = TypeVar("T")

__all__ = ["in_turns"]


async def in_turns(steps: Generator[None, None, T]) -> T:
    """The value ``steps`` returns, giving the loop a turn at each of its yields. Cancelled at a turn,
    the generator is left unfinished (its work is dropped)."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: T = done.value
            return result
        await asyncio.sleep(0)
