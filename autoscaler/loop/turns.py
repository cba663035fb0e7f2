"""Long work on the event loop in steps, with a turn for the loop between them.

A 10,000-target sync reads answers of 100,000 series: decoding one and turning it into readings is a
tenth of a second of pure Python or more. Done in one go, everything else on the loop (the
reconcilers' ticks, the HTTP server's answers, the watches' events) waits for all of it. The work is written as a
generator that yields every few milliseconds; :func:`in_turns` runs it, letting the loop run whatever is
ready at each yield.

Not a worker thread: the work is pure Python, so a thread never runs it beside the loop, only instead
of it, taking the interpreter lock in turns with the loop's thread, whose own steps then took longer, and
the syncs' durations with them (docs/benchmarks-history.md, "Loop lag at 10,000 targets: where it goes").

The cyclic collector is held off during each step (:func:`~autoscaler.loop.collector.collector_paused`).
A step decodes a slice of an answer into thousands of containers that reference counting frees at the
step's end; a collection that started in the middle of one walked them all, with everything else young,
and the decoding steps were where the loop stalled longest at 10,000 targets (docs/benchmarks-history.md,
"Where the loop stalls, the syncs after the first pass, a trial that lost writes").
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import TypeVar

from autoscaler.loop.collector import collector_paused

T = TypeVar("T")

__all__ = ["at_once", "collector_paused", "in_turns"]


async def in_turns(steps: Generator[None, None, T]) -> T:
    """The value ``steps`` returns, giving the loop a turn at each of its yields. Cancelled at a turn,
    the generator is left unfinished (its work is dropped). No cyclic collection runs inside a step."""
    while True:
        try:
            with collector_paused():
                next(steps)
        except StopIteration as done:
            result: T = done.value
            return result
        await asyncio.sleep(0)


def at_once(steps: Generator[None, None, T]) -> T:
    """The value ``steps`` returns, run to its end without a turn for the loop: for work known to be one step
    (a small answer), where :func:`in_turns`' bookkeeping would cost more than the work."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: T = done.value
            return result
