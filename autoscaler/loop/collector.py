"""How the service runs the interpreter's cyclic garbage collector: thresholds, freezes, full collections.

Reference counting frees nearly everything the service makes; the cyclic collector only has to find
cycles, and what it costs is the objects it walks. So:

* from the start until every target has synced once it does not run at all: the LIST pages' objects
  live until their page is trimmed, and walking them was a quarter of the caches' CPU (held off until the
  caches sync for two minutes at most); then the first syncs make the targets' first state, which lives
  on, and the young collections walked it again and again;
* start-up's objects (modules, the caches' records, then every target's state after its first sync) are
  frozen out of its sight (``gc.freeze``): they hold no garbage, and full collections walked them every
  time (docs/benchmarks-history.md, "The first service table: 1,000 targets, a 1 s scrape"). Objects freed
  later are still freed by reference counting; only a cycle among frozen objects would outlive its use;
* the young generation is collected every ``YOUNG_THRESHOLD`` allocations (the interpreter's 700 ran
  young collections several times a second, to find nothing in the syncs' short-lived containers),
  generation 1 every other young collection, and the interpreter never starts a full collection itself
  (at 10,000 targets it ran long ones every half minute);
* no collection starts inside a step of decoding a Prometheus answer (``loop/turns.py``): the
  step's objects are freed at its end, and a collection in the middle of one walked them all;
* this module runs the full collections, with a period that doubles from 5 minutes to an hour while they
  find nothing, and goes back to 5 minutes as soon as one finds cyclic garbage that only a full collection
  could find. A full collection walks every target's state (each sync replaces it, so it is never frozen),
  and at 10,000 targets it stopped the loop for a long pause every 5 minutes, finding nothing
  (docs/benchmarks-history.md, "Collector steering, the scrape's measure, where a sync's CPU goes").

Once every target has synced, the memory start-up freed is handed back to the system (glibc's
``malloc_trim``): the resident size otherwise stays at start-up's high-water mark.

Every ``gc`` call of the service is here: the service's run is wrapped in :func:`governed` (start-up's
thresholds, each pause timed, the interpreter's settings back at the end), and the decoding steps run
inside :func:`collector_paused`.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog

log = structlog.get_logger("autoscaler.service")

# The young generation's threshold during start-up and after it. Every object that outlives a young
# collection is walked about twice, whatever the threshold: a smaller one spreads that over shorter
# pauses. After start-up, 10,000 instead of 20,000 halved them at 10,000 targets for the same time in all;
# during start-up it cost more CPU to the first full pass, so start-up keeps 20,000 until every target has
# synced once (docs/benchmarks-history.md, "Start-up, `/metrics`, shorter pauses"). The collector now runs
# during start-up only when the caches take longer than QUIET_START_SECONDS to sync.
STARTUP_YOUNG_THRESHOLD = 20_000
YOUNG_THRESHOLD = 10_000
# Generation 1 is collected every other young collection (the interpreter: every eleventh). It holds what
# outlived a young collection: at 10,000 targets, the in-flight syncs' coroutines, futures and readings,
# walked in one long pause after ten young collections. Collected this often it holds a tenth of that:
# every survivor is still walked once before it is promoted, in short pauses. Never collecting it would
# spare them, but an outage's failed queries leave cyclic garbage only it finds (docs/benchmarks-history.md,
# "Loop lag at 10,000 targets: where it goes"; "Start-up, `/metrics`, shorter pauses": "Why generation 1
# is still collected").
MIDDLE_THRESHOLD = 1
NEVER = 2**30  # generation 2's threshold: the interpreter never starts a full collection itself
# The longest the collector is held off at start-up while the caches list (see quiet_until_synced).
QUIET_START_SECONDS = 120.0
FULL_SHORTEST_SECONDS = 300.0
FULL_LONGEST_SECONDS = 3600.0


PauseObserver = Callable[[int, float], None]  # told each collection's generation and how long it took


@contextmanager
def governed(observe_pause: PauseObserver) -> Iterator[None]:
    """The service's run: the collector with start-up's thresholds from the start, and every collection's
    pause told to ``observe_pause``; at the end, the collector running again with the thresholds it had.

    From the start: the first LIST pages decode into hundreds of thousands of objects that live until
    their page is trimmed into records, and with the interpreter's thresholds the collector walked them
    (and the growing caches) over and over; half the CPU of syncing 100,000 pods' caches."""
    thresholds = gc.get_threshold()
    untrack = track_pauses(observe_pause)
    try:
        gc.set_threshold(STARTUP_YOUNG_THRESHOLD, MIDDLE_THRESHOLD, NEVER)
        yield
    finally:
        untrack()
        gc.enable()
        gc.set_threshold(*thresholds)


def track_pauses(observe_pause: PauseObserver) -> Callable[[], None]:
    """Time every cyclic collection into ``observe_pause(generation, seconds)`` until the returned function
    is called (the interpreter's ``gc.callbacks`` are process-wide)."""
    started = 0.0

    def callback(phase: str, info: dict[str, int]) -> None:
        nonlocal started
        if phase == "start":
            started = time.perf_counter()
        elif (generation := info.get("generation", -1)) >= 0:
            observe_pause(generation, time.perf_counter() - started)

    gc.callbacks.append(callback)
    return lambda: gc.callbacks.remove(callback)


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block (synchronous work only: nothing else runs meanwhile). The
    objects it allocates still count towards the next collection, and those it frees count off again, so
    a block whose objects are gone at its end leaves the collector as if it had not run; one that keeps
    them has them walked at the next collection, as always. A collector already off stays off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def quiet_until_synced(limit: float = QUIET_START_SECONDS) -> None:
    """Hold the collector off from the service's start until :func:`steer_collector` takes over (the caches
    synced), or ``limit`` seconds at most: the caches' LIST pages decode into tens of thousands of objects
    each, alive until the page is trimmed, and a young collection in the middle of a page walked them all
    (docs/benchmarks-history.md, "Pods in groups of equal labels, start-up's freed memory, the collector's
    share"). Reference counting frees everything else meanwhile; only cyclic garbage waits,
    and the bound keeps that small when the caches cannot sync (an API server down at start-up)."""
    gc.disable()
    await asyncio.sleep(limit)  # cancelled when the service stops, which runs the collector again itself
    if not gc.isenabled():
        log.warning("caches not synced yet: the cyclic collector runs again", seconds=limit)
        gc.enable()


def next_full_collection(
    interval: float, found: int, *, shortest: float = FULL_SHORTEST_SECONDS, longest: float = FULL_LONGEST_SECONDS
) -> float:
    """Seconds until the next full collection, after one ``interval`` seconds after the last that found
    ``found`` objects only it could find: twice as long (at most ``longest``) when it found none,
    ``shortest`` again when it found some (whatever made them may go on making them)."""
    if found:
        return shortest
    return min(longest, interval * 2)


async def steer_collector(
    first_pass: Callable[[], Awaitable[None]],
    *,
    shortest: float = FULL_SHORTEST_SECONDS,
    longest: float = FULL_LONGEST_SECONDS,
) -> None:
    """Run until cancelled, from the moment the caches are synced (the caller then ends
    :func:`quiet_until_synced`): freeze what start-up built, hold the collector off until ``first_pass``
    returns (every target synced once, or as long as the caller bounds it), collect and freeze again, run
    the collector with the steady threshold, then run the full collections (:func:`next_full_collection`).

    Why not collect during the first pass: its objects are the targets' first state, which lives on, and
    the young collections walked them again and again, the pass being CPU-bound (docs/benchmarks-history.md,
    "Collector steering, the scrape's measure, where a sync's CPU goes"). The collection before the second
    freeze walks them once; it walked them
    all before too, so the pause there is no longer than it was."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        await first_pass()
        gc.collect()
        gc.freeze()
    finally:
        gc.enable()  # cancelled during the first pass too (the service stops): the collector runs again
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, NEVER)
    before, started = resident_bytes(), time.monotonic()
    if release_free_memory():
        log.info(
            "start-up's freed memory returned to the system",
            resident_mib_before=_mib(before),
            resident_mib_after=_mib(resident_bytes()),
            seconds=round(time.monotonic() - started, 3),
        )
    interval = shortest
    while True:
        await asyncio.sleep(interval)
        # The younger generations first: their cyclic garbage (a failed query's) is theirs to find, and
        # would otherwise count as the full collection's.
        gc.collect(1)
        found = gc.collect()
        interval = next_full_collection(interval, found, shortest=shortest, longest=longest)
        log.debug("full collection", found=found, next_in_seconds=interval)


def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's ``malloc_trim`` (glibc's), or None where there is none (musl, macOS)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def release_free_memory() -> bool:
    """Hand the C allocator's free memory back to the system; False where the C library cannot.

    Start-up decodes every LIST page and every first sync's answers into objects that are freed soon
    after, but glibc keeps what they freed inside the process: the resident size stayed at start-up's
    high-water mark for good. Objects still alive are not touched; only whole free pages go back
    (docs/benchmarks-history.md, "Pods in groups of equal labels, start-up's freed memory, the collector's
    share")."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


def resident_bytes() -> int | None:
    """The process's resident size from /proc (None elsewhere): a page count, read in microseconds."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _mib(size: int | None) -> float | None:
    return None if size is None else round(size / 2**20, 1)
