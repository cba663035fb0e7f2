"""At most a few syncs' work per turn of the event loop.

The loop runs everything that is ready before it looks at its timers again. A namespace's targets sync
on the same tick (so that their metrics share queries), and one answer completes a namespace's
readings at once: at 10,000 targets in 50 namespaces that is 200 syncs ready together, each ~1 ms of
work or more on a slow core, up to ``sync.concurrency`` (50) of them back to back in one turn. A sync
passes a :class:`TurnPacer` before each of its two parts of work (before it reads the cluster, after its
readings came): at most ``per_turn`` pass in one turn, the others wait for the next turns, in the order
they came. (It bounds the work of a turn; the loop's lag at 10,000 targets is mostly something else, the
garbage collector: BENCHMARKS.md "Loop lag at 10,000 targets".)
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["PER_TURN", "TurnPacer"]

PER_TURN = 16  # syncs let through per turn of the loop: ~16 ms of work on a slow core


class TurnPacer:
    """Lets at most ``per_turn`` callers of :meth:`turn` through per turn of the event loop, in order.

    Every caller waits for the next turn, even alone: a pass decided in this turn would run beside the
    ones released for it, so the bound would not hold. A turn later is nothing to a sync."""

    def __init__(self, per_turn: int = PER_TURN) -> None:
        self._per_turn = per_turn
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._release_due = False

    async def turn(self) -> None:
        """Return in a later turn, with at most ``per_turn - 1`` other callers. Cancellation-safe: a
        caller cancelled while waiting takes no one's place."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiting.append(future)
        if not self._release_due:
            self._release_due = True
            loop.call_soon(self._release)
        await future

    def _release(self) -> None:
        """Let the next ``per_turn`` waiting callers go: they run in the next turn, and this runs again
        after them while others wait."""
        released = 0
        while self._waiting and released < self._per_turn:
            future = self._waiting.popleft()
            if not future.done():  # not cancelled
                future.set_result(None)
                released += 1
        if self._waiting:
            asyncio.get_running_loop().call_soon(self._release)
        else:
            self._release_due = False
