"""When a target syncs (its namespace's ticks) and how many syncs work at once (the concurrency slot)."""

from __future__ import annotations

import asyncio
import functools
import math
import time
import zlib

from autoscaler.loop.pacing import TurnPacer, running_loop


def _fraction(text: str) -> float:
    """A stable pseudo-random number in [0, 1) for ``text``."""
    return zlib.crc32(text.encode()) / 2**32


@functools.lru_cache(maxsize=4096)
def _phase(namespace: str) -> float:
    """A namespace's place in the period (asked at every tick of every target)."""
    return _fraction(namespace)


@functools.lru_cache(maxsize=8192)
def _draw(namespace: str, k: int) -> float:
    """Tick ``k``'s jitter draw for ``namespace``, in [-1, 1): cached, as every target of the namespace asks
    for the same few ticks at each of its syncs (a new string hashed at each ask showed in the profile)."""
    return 2 * _fraction(f"{namespace}#{k}") - 1


class Schedule:
    """When targets sync: once a period, every target of a namespace on the same tick.

    A batched Prometheus query covers whole namespaces (``namespace=~"a|b"``), so a batch is cheapest
    when it holds every target of the namespaces it reads. With each target on its own random phase, a
    batch window held a few targets of each of many namespaces but read all of those namespaces' pods: many
    times the series the targets needed, and decoding them was most of the service's CPU
    (docs/benchmarks-history.md, "The first service table: 1,000 targets, a 1 s scrape"). So the phase
    belongs to the namespace: namespaces spread over the period (a hash of the name) and each tick is
    jittered by up to ± ``jitter`` of the period (a hash of the namespace and the tick number), so
    namespaces still do not align, but a namespace's targets sync together and share one query per
    template. Ticks are a fixed grid, not a random walk, so the targets of a namespace stay together.

    A target with a sync period of its own (``spec.syncPeriodSeconds``, KEDA's pollingInterval) syncs on a
    grid of that period, drawn from its namespace's so that its syncs still fall in the same batches
    (:meth:`next_tick` with ``period``): a multiple of the service's period takes every n-th tick of the
    namespace; a period that divides it takes the namespace's ticks and n - 1 more evenly between each two;
    any other period has a grid of its own, spread and jittered the same way (its syncs batch with those of
    the namespace's targets of the same period).
    """

    def __init__(self, period: float, jitter: float, origin: float | None = None) -> None:
        self.period = period
        self.jitter = jitter
        self.origin = time.monotonic() if origin is None else origin
        # A target that syncs off its grid (a new target, or one late behind an overload) waits at least
        # this long before the next grid tick, so it never syncs twice in quick succession.
        self.min_gap = self.gap_for(period)
        self._own_grids: dict[float, Schedule] = {}  # periods neither a multiple nor a divisor of this one

    def gap_for(self, period: float) -> float:
        """The least time between two syncs of a target that syncs every ``period``."""
        return period * max(0.1, 1 - 2 * self.jitter) / 2

    def tick(self, namespace: str, k: int) -> float:
        shift = self.jitter * _draw(namespace, k) if self.jitter else 0.0
        return self.origin + (k + _phase(namespace) + shift) * self.period

    def _next_index(self, namespace: str, after: float) -> int:
        """The number of the first tick of ``namespace`` later than ``after`` (ticks only rise with it:
        jitter is at most half a period)."""
        k = math.floor((after - self.origin) / self.period - _phase(namespace) - self.jitter) - 1
        while self.tick(namespace, k) <= after:
            k += 1
        return k

    def next_tick(self, namespace: str, after: float, period: float | None = None) -> float:
        """The first tick of ``namespace`` later than ``after``, on the grid of ``period`` (None: the
        service's; see the class's docstring)."""
        if period is None or period == self.period:
            return self.tick(namespace, self._next_index(namespace, after))
        multiple = period / self.period
        if multiple > 1 and multiple.is_integer():  # every n-th tick of the namespace
            every = int(multiple)
            first = self._next_index(namespace, after)
            return self.tick(namespace, -(-first // every) * every)
        parts = self.period / period
        if parts > 1 and parts.is_integer():  # the namespace's ticks, and n - 1 more evenly between each two
            count = int(parts)
            last = self._next_index(namespace, after) - 1  # the last tick at or before ``after``
            start, end = self.tick(namespace, last), self.tick(namespace, last + 1)
            for part in range(1, count):
                when = start + part * (end - start) / count
                if when > after:
                    return when
            return end
        grid = self._own_grids.get(period)
        if grid is None:
            grid = self._own_grids[period] = Schedule(period, self.jitter, self.origin)
        return grid.next_tick(namespace, after)

    def after_sync(self, namespace: str, planned: float, now: float, period: float | None = None) -> float:
        """When a target of ``namespace`` syncs next, its sync planned for ``planned`` having ended at
        ``now``: its namespace's next tick, at least ``min_gap`` after ``planned``. A sync that ended past
        that tick (an overloaded service, a slow answer) skips it and waits for the first tick after
        ``now``, as the upstream controller requeues a late HPA a period after it synced: syncing at once
        instead made one sync more per late target (two 5-7 s apart, once back on the grid) and took it
        out of its namespace's batch, just when the service had the least to spare (docs/benchmarks-history.md,
        "Where the loop stalls, the syncs after the first pass, …"). ``period``: the target's own sync period
        (None: the service's)."""
        gap = self.min_gap if period is None else self.gap_for(period)
        planned_next = self.next_tick(namespace, planned + gap, period)
        return planned_next if planned_next >= now else self.next_tick(namespace, now, period)


class TickTimers:
    """Futures done at given times (``time.monotonic``), one timer of the loop per distinct time.

    Every target of a namespace waits for the same tick. A sleep each made, per target and period, a coroutine, a
    future, the loop's timer handle with its arguments and a copy of the context: objects alive for the whole
    period, that the cyclic collector walked at every young collection they lived through
    (docs/benchmarks-history.md, "Shared tick timers, the harness's core at start-up, …"). Here a tick's
    targets share one timer; each still waits on a future of its own, so that a cancelled wait cancels no
    other. With a ``pacer``, a tick's futures are done through it, a few per turn (:mod:`~autoscaler.loop.pacing`):
    the syncs that waited for the tick pass the pacer in the same wait."""

    def __init__(self, pacer: TurnPacer | None = None) -> None:
        self._due: dict[float, list[asyncio.Future[None]]] = {}
        self._pacer = pacer
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop it runs in (see running_loop)

    def at(self, when: float) -> asyncio.Future[None]:
        """A future done at ``when`` (in the loop's next turns if it is past; with a pacer, in its turns from
        then on). Cancelling it is all a waiter that gives up has to do."""
        loop = self._loop = running_loop(self._loop)
        future: asyncio.Future[None] = loop.create_future()
        waiting = self._due.get(when)
        if waiting is None:
            waiting = self._due[when] = []
            loop.call_later(max(0.0, when - time.monotonic()), self._fire, when)
        waiting.append(future)
        return future

    def _fire(self, when: float) -> None:
        pacer = self._pacer
        for future in self._due.pop(when, ()):
            if future.done():  # cancelled
                continue
            if pacer is None:
                future.set_result(None)
            else:
                pacer.pass_on(future, None)


class ConcurrencySlot:
    """One sync's place under the service's concurrency limit (``sync.concurrency``).

    The limit bounds the syncs doing work at once. A sync waiting for its batched metrics (up to
    ``sync.batchWindowSeconds``, then the query) does none, so it gives its slot back meanwhile:
    otherwise a thousand targets' waits alone would fill the limit and push syncs past their ticks.
    Cancellation-safe: a sync cancelled while waiting to get its slot back holds none and releases none.
    """

    def __init__(self, semaphore: asyncio.Semaphore) -> None:
        self._semaphore = semaphore
        self._held = False

    async def __aenter__(self) -> ConcurrencySlot:
        await self._semaphore.acquire()
        self._held = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._held:
            self._held = False
            self._semaphore.release()

    @staticmethod
    def given_back(slot: ConcurrencySlot | None) -> _GivenBack:
        """Without the slot for the body (a no-op for None, or a slot not held)."""
        return _GivenBack(slot)


class _GivenBack:
    """:meth:`ConcurrencySlot.given_back`: a class, not a generator-based context manager, as every sync
    of every target enters one."""

    __slots__ = ("_slot",)

    def __init__(self, slot: ConcurrencySlot | None) -> None:
        self._slot = slot if slot is not None and slot._held else None

    async def __aenter__(self) -> None:
        if self._slot is not None:
            self._slot._held = False
            self._slot._semaphore.release()

    async def __aexit__(self, *exc_info: object) -> None:
        if self._slot is not None:
            await self._slot._semaphore.acquire()
            self._slot._held = True
