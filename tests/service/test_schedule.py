"""When targets sync: a grid of ticks per namespace (see ``Schedule``)."""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time

from hypothesis import given
from hypothesis import strategies as st

from autoscaler.loop.pacing import TurnPacer
from autoscaler.service.sync.schedule import Schedule, TickTimers

PERIOD = 15.0


@given(
    namespace=st.text(min_size=1, max_size=30),
    jitter=st.sampled_from([0.0, 0.1, 0.25, 0.4]),
    after=st.floats(-1e5, 1e6, allow_nan=False),
)
def test_next_tick_is_the_first_tick_after(namespace: str, jitter: float, after: float) -> None:
    schedule = Schedule(PERIOD, jitter, origin=1000.0)
    tick = schedule.next_tick(namespace, after)
    assert after < tick <= after + PERIOD * (1 + 2 * jitter) + 1e-6
    # the tick after it is the next one on the grid: a steady target syncs once a period
    following = schedule.next_tick(namespace, tick + schedule.min_gap)
    assert PERIOD * (1 - 2 * jitter) - 1e-6 <= following - tick <= PERIOD * (1 + 2 * jitter) + 1e-6


def test_a_namespace_ticks_once_a_period_on_average_and_namespaces_spread() -> None:
    schedule = Schedule(PERIOD, 0.1, origin=0.0)
    ticks = [schedule.next_tick("team-a", 0.0)]
    for _ in range(200):
        ticks.append(schedule.next_tick("team-a", ticks[-1] + schedule.min_gap))
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert abs(statistics.mean(gaps) - PERIOD) < 0.2
    assert min(gaps) < PERIOD - 0.5 < PERIOD + 0.5 < max(gaps)  # jittered, not a fixed beat
    phases = sorted(schedule.next_tick(f"team-{i:03d}", 0.0) for i in range(50))
    assert phases[-1] - phases[0] > 0.8 * PERIOD  # 50 namespaces cover the period


def test_without_jitter_the_ticks_are_exactly_a_period_apart() -> None:
    schedule = Schedule(PERIOD, 0.0, origin=0.0)
    first = schedule.next_tick("web", 0.0)
    assert schedule.next_tick("web", first + schedule.min_gap) == first + PERIOD
    assert schedule.next_tick("web", first - 1e-9) == first


@given(
    namespace=st.text(min_size=1, max_size=30),
    jitter=st.sampled_from([0.0, 0.1, 0.25, 0.4]),
    start=st.floats(0, 1e5, allow_nan=False),
    took=st.floats(0, 5 * PERIOD, allow_nan=False),
)
def test_after_a_sync_the_next_is_on_the_grid_once_per_tick_and_a_missed_tick_is_skipped(
    namespace: str, jitter: float, start: float, took: float
) -> None:
    schedule = Schedule(PERIOD, jitter, origin=1000.0)
    planned = schedule.next_tick(namespace, start)
    ended = planned + took
    following = schedule.after_sync(namespace, planned, ended)
    on_time = schedule.next_tick(namespace, planned + schedule.min_gap)  # the tick after the planned one
    assert following >= ended  # never in the past: no burst of syncs to catch up
    assert following == schedule.next_tick(namespace, following - 1e-9)  # a tick of the namespace's grid
    if ended <= on_time:
        assert following == on_time  # a sync that ends before its next tick keeps it
    else:
        assert following == schedule.next_tick(namespace, ended)  # the missed ticks skipped, none added


def test_a_late_sync_waits_for_its_namespaces_next_tick_instead_of_syncing_at_once() -> None:
    schedule = Schedule(PERIOD, 0.0, origin=0.0)
    first = schedule.next_tick("web", 0.0)
    assert schedule.after_sync("web", first, first + 2.0) == first + PERIOD
    assert schedule.after_sync("web", first, first + PERIOD + 3.0) == first + 2 * PERIOD


async def test_the_waits_for_one_tick_share_one_timer_and_end_at_the_tick() -> None:
    loop = asyncio.get_running_loop()
    timers = TickTimers()
    before = len(loop._scheduled)  # type: ignore[attr-defined]  # the asyncio loop's timer heap
    tick = time.monotonic() + 0.05
    waits = [timers.at(tick) for _ in range(200)]
    later = timers.at(tick + 0.05)
    assert len(loop._scheduled) == before + 2  # type: ignore[attr-defined]
    # When each ended, as its callbacks saw it: a busy machine may end both before this test looks.
    ended: dict[str, float] = {}
    waits[0].add_done_callback(lambda _: ended.setdefault("tick", time.monotonic()))
    later.add_done_callback(lambda _: ended.setdefault("later", time.monotonic()))
    await asyncio.wait_for(asyncio.gather(*waits), 10)
    await asyncio.wait_for(later, 10)
    assert ended["tick"] >= tick
    assert ended["later"] >= tick + 0.05  # the later tick's own timer: not ended with the first tick


async def test_a_wait_given_up_ends_no_other_and_a_past_tick_ends_at_once() -> None:
    timers = TickTimers()
    tick = time.monotonic() + 0.02
    given_up, kept = timers.at(tick), timers.at(tick)
    given_up.cancel()
    await asyncio.wait_for(kept, 1)
    assert given_up.cancelled()
    past = timers.at(time.monotonic() - 5)
    await asyncio.sleep(0.01)
    assert past.done()


async def test_with_a_pacer_a_ticks_waits_end_a_few_per_turn() -> None:
    """The syncs a tick starts pass the pacer in the same wait: no more than its bound begin in one turn."""
    timers = TickTimers(TurnPacer(4))
    tick = time.monotonic() + 0.02
    ended: list[int] = []

    async def wait(index: int) -> None:
        await timers.at(tick)
        ended.append(index)

    waits = [asyncio.ensure_future(wait(i)) for i in range(20)]
    await asyncio.sleep(max(0.0, tick - time.monotonic() - 0.005))  # then turn by turn, through the tick
    seen = [len(ended)]
    while len(ended) < 20:
        await asyncio.sleep(0)
        seen.append(len(ended))
    assert ended == list(range(20))
    assert max(after - before for before, after in itertools.pairwise(seen)) <= 4, seen
    await asyncio.gather(*waits)
