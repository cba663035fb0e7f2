"""A target's own sync period (``spec.syncPeriodSeconds``) on its namespace's grid (``Schedule.next_tick`` with
``period``): it syncs once a period on average, never twice in quick succession, and its syncs fall on the
ticks of the namespace's other targets wherever the two periods allow, so that they share batches."""

from __future__ import annotations

import itertools
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.service.sync.schedule import Schedule

BASE = 15.0


def ticks(schedule: Schedule, namespace: str, period: float | None, count: int, start: float = 0.0) -> list[float]:
    """A steady target's syncs: each planned after the last one, as the reconciler plans them."""
    found = [schedule.next_tick(namespace, start, period)]
    for _ in range(count - 1):
        found.append(schedule.after_sync(namespace, found[-1], found[-1] + 0.01, period))
    return found


@pytest.mark.parametrize("period", [5.0, 7.5, 15.0, 20.0, 30.0, 45.0, 60.0, 3600.0])
@pytest.mark.parametrize("jitter", [0.0, 0.1, 0.4])
def test_a_target_syncs_once_its_period_on_average(period: float, jitter: float) -> None:
    schedule = Schedule(BASE, jitter, origin=100.0)
    found = ticks(schedule, "team-a", period, 120)
    gaps = [b - a for a, b in itertools.pairwise(found)]
    assert abs(statistics.mean(gaps) - period) < 0.02 * period + 2 * jitter * BASE / len(gaps), gaps
    assert min(gaps) >= schedule.gap_for(period) - 1e-9  # never two syncs in quick succession
    assert all(later > earlier for earlier, later in itertools.pairwise(found))


@pytest.mark.parametrize("multiple", [2, 4, 240])
def test_a_multiple_of_the_service_period_takes_every_nth_tick_of_the_namespace(multiple: int) -> None:
    schedule = Schedule(BASE, 0.1, origin=0.0)
    base = set(ticks(schedule, "shop", None, 3 * multiple + 1))
    own = ticks(schedule, "shop", BASE * multiple, 3)
    assert set(own) <= base  # the same instants: batched with the namespace's other targets
    assert abs(own[1] - own[0] - BASE * multiple) <= 2 * 0.1 * BASE + 1e-9


@pytest.mark.parametrize("parts", [2, 3, 15])
def test_a_divisor_of_the_service_period_takes_every_tick_and_more_between(parts: int) -> None:
    schedule = Schedule(BASE, 0.1, origin=0.0)
    base = ticks(schedule, "shop", None, 4)
    own = ticks(schedule, "shop", BASE / parts, 3 * parts + 1, start=base[0] - 1e-6)
    assert own[::parts] == base  # every n-th of its syncs is one of the namespace's ticks
    for a, b in itertools.pairwise(base):  # the others evenly between
        between = [t for t in own if a < t < b]
        assert len(between) == parts - 1
        assert all(abs(t - (a + (k + 1) * (b - a) / parts)) < 1e-6 for k, t in enumerate(between))


def test_another_period_has_a_grid_of_its_own_shared_by_the_namespace() -> None:
    schedule = Schedule(BASE, 0.1, origin=0.0)
    one, other = ticks(schedule, "shop", 20.0, 10), ticks(schedule, "shop", 20.0, 10)
    assert one == other  # two targets of the namespace with this period sync together
    assert ticks(schedule, "ops", 20.0, 3) != one[:3]  # another namespace elsewhere in the period


@given(
    namespace=st.text(min_size=1, max_size=20),
    jitter=st.sampled_from([0.0, 0.1, 0.25, 0.4]),
    period=st.sampled_from([1.0, 3.0, 5.0, 7.0, 15.0, 30.0, 40.0, 90.0, 600.0]),
    after=st.floats(-1e4, 1e6, allow_nan=False),
)
def test_the_next_tick_is_later_and_within_a_period_and_its_jitter(
    namespace: str, jitter: float, period: float, after: float
) -> None:
    schedule = Schedule(BASE, jitter, origin=1000.0)
    tick = schedule.next_tick(namespace, after, period)
    assert after < tick <= after + period + 2 * jitter * max(period, BASE) + 1e-6
