"""Time sources for object timestamps and the controllers-lite.

Network behaviour (watch timeouts, bookmarks, injected delays) always runs on real event-loop
time; only what ends up *inside objects* (creationTimestamp, pod startTime, condition
transition times) and the controllers' pacing use this clock, so a test can run a pod's
Pending → Ready lifecycle in zero wall time with :class:`ManualClock`.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Current wall-clock time, timezone-aware UTC."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""
        ...

    async def sleep_until(self, moment: datetime) -> None:
        """Wait until this clock reads ``moment`` (returns at once if it already has).

        Timers should use this rather than ``sleep(deadline - now())``: with a manual clock,
        time may move between computing the delay and starting to sleep.
        """
        ...


class SystemClock:
    """Real time."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    async def sleep_until(self, moment: datetime) -> None:
        await asyncio.sleep(max(0.0, (moment - self.now()).total_seconds()))


class ManualClock:
    """A clock that only moves when a test calls :meth:`advance`.

    Sleepers wake in deadline order; ``advance`` yields to the event loop after waking them so
    that the code which was sleeping gets to run before the caller continues.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._sleepers: list[tuple[datetime, int, asyncio.Future[None]]] = []
        self._sequence = itertools.count()

    def now(self) -> datetime:
        return self._now

    async def sleep(self, seconds: float) -> None:
        await self.sleep_until(self._now + timedelta(seconds=max(0.0, seconds)))

    async def sleep_until(self, moment: datetime) -> None:
        if moment <= self._now:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (moment, next(self._sequence), future))
        await future

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking every sleeper whose deadline has come, in order."""
        target = self._now + timedelta(seconds=seconds)
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            self._now = max(self._now, deadline)
            if not future.done():
                future.set_result(None)
            await _let_others_run()
        self._now = target
        await _let_others_run()


async def _let_others_run(rounds: int = 5) -> None:
    # A woken task may itself schedule further work (a controller writing to the store, which
    # wakes a watcher); a few bare yields let such short chains finish.
    for _ in range(rounds):
        await asyncio.sleep(0)


def format_time(moment: datetime) -> str:
    """RFC 3339 with second precision (metav1.Time), e.g. ``2026-01-01T00:00:00Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(moment: datetime) -> str:
    """RFC 3339 with microseconds (metav1.MicroTime), e.g. ``2026-01-01T00:00:00.000000Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
