"""At most a few syncs' work per turn of the event loop.

The loop runs everything that is ready before it looks at its timers again. A namespace's targets sync
on the same tick (so that their metrics share queries), and one answer completes a namespace's
readings at once: at 10,000 targets in 50 namespaces that is 200 syncs ready together, each a millisecond
of work or more on a slow core, up to ``sync.concurrency`` (50) of them back to back in one turn. A sync
passes a :class:`TurnPacer` before each of its two parts of work (as its tick's timer ends its wait, as
the batcher hands it its readings): at most ``per_turn`` pass in one turn, the others wait for the next
turns, in the order they came. (It bounds the work of a turn; the loop's lag at 10,000 targets is mostly
something else, the garbage collector: docs/benchmarks-history.md, "Loop lag at 10,000 targets: where it goes".)
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, TypeVar

__all__ = ["PER_TURN", "TurnPacer", "running_loop"]

T = TypeVar("T")

PER_TURN = 16  # syncs let through per turn of the loop: ~16 ms of work on a slow core


def running_loop(known: asyncio.AbstractEventLoop | None) -> asyncio.AbstractEventLoop:
    """The running event loop: ``known`` (the one an object found before) while it is still open.

    For the objects every sync goes through a few times (the pacer, the tick timers, the batcher): on
    CPython 3.11 ``asyncio.get_running_loop()`` asks the kernel for the process id at every call (a loop
    must not be used across a fork), which showed in the profile at 10,000 targets (docs/benchmarks-history.md,
    "Cyclic garbage of the compiled build; the coroutine modules compiled"). Each object lives in the
    service's one loop; a closed one
    (a test's earlier loop) is asked for again."""
    if known is None or known.is_closed():
        return asyncio.get_running_loop()
    return known


class TurnPacer:
    """Lets at most ``per_turn`` waiters through per turn of the event loop, in the order they came.

    A waiter is a future: :meth:`turn` makes one and waits on it; :meth:`pass_on` queues one that another part
    of the service made (a tick's timer, the batcher handing a sync its readings), so that the sync waiting on
    it passes the pacer in the same wait instead of a second one: each wait of a sync is one more future and
    one more resumption of its chain of coroutines, per target and period.

    Every waiter waits for the next turn, even alone: a pass decided in this turn would run beside the
    ones released for it, so the bound would not hold. A turn later is nothing to a sync."""

    def __init__(self, per_turn: int = PER_TURN) -> None:
        self._per_turn = per_turn
        self._waiting: deque[tuple[asyncio.Future[Any], Any]] = deque()
        self._release_due = False
        self._loop: asyncio.AbstractEventLoop | None = None

    async def turn(self) -> None:
        """Return in a later turn, with at most ``per_turn - 1`` other waiters. Cancellation-safe: a
        caller cancelled while waiting takes no one's place."""
        loop = self._loop = running_loop(self._loop)
        future: asyncio.Future[None] = loop.create_future()
        self.pass_on(future, None)
        await future

    def pass_on(self, future: asyncio.Future[T], value: T) -> None:
        """Set ``future``'s result to ``value`` in a later turn, in its place among the waiters (unless it is
        done by then: cancelled, it takes no one's place)."""
        self._waiting.append((future, value))
        if not self._release_due:
            self._release_due = True
            self._loop = loop = running_loop(self._loop)
            loop.call_soon(self._release)

    def _release(self) -> None:
        """Let the next ``per_turn`` waiters go: they run in the next turn, and this runs again after them
        while others wait."""
        released = 0
        waiting = self._waiting
        while waiting and released < self._per_turn:
            future, value = waiting.popleft()
            if not future.done():  # not cancelled
                future.set_result(value)
                released += 1
        if waiting:
            self._loop = loop = running_loop(self._loop)
            loop.call_soon(self._release)
        else:
            self._release_due = False
