"""When targets sync: a grid of ticks per namespace (see ``Schedule``)."""

from __future__ import annotations

import itertools
import statistics

from hypothesis import given
from hypothesis import strategies as st

from autoscaler.service.schedule import Schedule

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
