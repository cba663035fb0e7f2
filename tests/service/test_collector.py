"""The service's steering of the cyclic collector (loop/collector.py): the freezes, the thresholds, and
full collections that back off while they find nothing."""

from __future__ import annotations

import asyncio
import gc
import platform
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from autoscaler.loop import collector
from autoscaler.loop.collector import next_full_collection, steer_collector
from tests.service.cluster import eventually

GLIBC = sys.platform == "linux" and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is glibc's")
def test_freed_memory_goes_back_to_the_system() -> None:
    blocks = [bytearray(1000) for _ in range(100_000)]  # ~100 MB from malloc (not Python's small-object pools)
    pinned = bytearray(1000)  # above them: their pages cannot go back by shrinking the heap's top
    grown = collector.resident_bytes()
    del blocks
    assert (collector.resident_bytes() or 0) > (grown or 0) - 20 * 2**20  # freed, but still the process's
    assert collector.release_free_memory()
    after = collector.resident_bytes()
    assert grown is not None and after is not None and after < grown - 60 * 2**20
    del pinned


def test_full_collections_back_off_to_an_hour_while_they_find_nothing() -> None:
    interval = collector.FULL_SHORTEST_SECONDS
    seen = [interval]
    for _ in range(6):
        interval = next_full_collection(interval, 0)
        seen.append(interval)
    assert seen == [300.0, 600.0, 1200.0, 2400.0, 3600.0, 3600.0, 3600.0]
    assert next_full_collection(3600.0, 1) == 300.0
    assert next_full_collection(600.0, 25) == 300.0


@pytest.fixture
def collector_restored() -> Iterator[None]:
    thresholds = gc.get_threshold()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()
        gc.set_threshold(*thresholds)


class _Node:
    other: Any = None


def _full_collections(logs: list[dict[str, Any]]) -> list[tuple[int, float]]:
    return [(e["found"], e["next_in_seconds"]) for e in logs if e["event"] == "full collection"]


@pytest.mark.usefixtures("collector_restored")
async def test_the_collector_is_held_off_through_the_first_pass_and_the_caches_list_within_a_limit() -> None:
    with capture_logs() as logs:
        # Synced in time: the steering takes over (the service ends the hold-off then) and keeps the
        # collector off through the first pass, past the hold-off's limit; then it runs again.
        quiet = asyncio.create_task(collector.quiet_until_synced(limit=0.05))
        await asyncio.sleep(0.01)
        assert not gc.isenabled()
        first_pass = asyncio.Event()
        steering = asyncio.create_task(steer_collector(first_pass.wait))
        quiet.cancel()
        await asyncio.sleep(0.1)
        assert not gc.isenabled()
        first_pass.set()
        await eventually(gc.isenabled, what="the collector running again")
        steering.cancel()
        await asyncio.gather(steering, quiet, return_exceptions=True)
        assert not [e for e in logs if e["event"].startswith("caches not synced yet")]
        # Stopped during the first pass: the collector runs again all the same.
        steering = asyncio.create_task(steer_collector(asyncio.Event().wait))
        await asyncio.sleep(0.01)
        assert not gc.isenabled()
        steering.cancel()
        await asyncio.gather(steering, return_exceptions=True)
        assert gc.isenabled()
        # Never synced: the limit runs the collector again, and says so.
        quiet = asyncio.create_task(collector.quiet_until_synced(limit=0.05))
        await asyncio.sleep(0.01)
        assert not gc.isenabled()
        await quiet
        assert gc.isenabled()
        assert [e["seconds"] for e in logs if e["event"].startswith("caches not synced yet")] == [0.05]


@pytest.mark.usefixtures("collector_restored")
async def test_the_collector_freezes_start_up_and_collects_fully_less_often_until_a_collection_finds_garbage() -> None:
    start_up = gc.get_threshold()
    first_pass = asyncio.Event()
    with capture_logs() as logs:
        task = asyncio.create_task(steer_collector(first_pass.wait, shortest=0.02, longest=0.08))
        try:
            await asyncio.sleep(0.05)
            assert gc.get_freeze_count() > 0  # start-up's objects frozen at once
            assert not gc.isenabled()  # and the collector held off through the first pass
            assert gc.get_threshold() == start_up  # the steady threshold waits for the first pass
            assert not _full_collections(logs)
            first_pass.set()
            steady = (collector.YOUNG_THRESHOLD, collector.MIDDLE_THRESHOLD, collector.NEVER)
            await eventually(lambda: gc.get_threshold() == steady, what="the steady threshold")
            if GLIBC:  # what start-up freed is handed back once, and said
                returned = [e for e in logs if e["event"] == "start-up's freed memory returned to the system"]
                assert len(returned) == 1 and returned[0]["resident_mib_after"] > 0
            # Nothing to find: each full collection waits twice as long as the last, up to the longest.
            await eventually(lambda: (0, 0.08) in _full_collections(logs), what="the longest period")
            quiet = [next_in for found, next_in in _full_collections(logs) if found == 0]
            assert {0.04, 0.08} <= set(quiet)
            # A cycle that outlived the younger generations' collections: only a full collection finds it,
            # and the next one comes after the shortest period again.
            a, b = _Node(), _Node()
            a.other, b.other = b, a
            gc.collect(1)  # the survivors of generation 1 move to the oldest generation
            del a, b
            await eventually(lambda: any(f >= 2 for f, _ in _full_collections(logs)), what="the cycle found")
            _, next_in = next((f, n) for f, n in _full_collections(logs) if f >= 2)
            assert next_in == 0.02
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


@pytest.mark.usefixtures("collector_restored")
def test_the_service_run_governs_the_collector_and_gives_it_back_as_it_was() -> None:
    before = gc.get_threshold()
    pauses: list[tuple[int, float]] = []
    with (
        pytest.raises(RuntimeError),
        collector.governed(lambda generation, seconds: pauses.append((generation, seconds))),
    ):
        assert gc.get_threshold() == (collector.STARTUP_YOUNG_THRESHOLD, collector.MIDDLE_THRESHOLD, collector.NEVER)
        gc.collect()
        gc.collect(0)
        gc.disable()  # as the service's quiet start-up leaves it when the run fails
        raise RuntimeError("the run failed")
    assert gc.get_threshold() == before and gc.isenabled()
    assert {generation for generation, _ in pauses} >= {0, 2} and all(seconds >= 0 for _, seconds in pauses)
    timed = len(pauses)
    gc.collect()
    assert len(pauses) == timed, "no pause is timed once the run is over"
