"""The per-target write backoff: one period first, doubling, jittered down by at most 20 %, capped, reset
by a success."""

from __future__ import annotations

import random
import tracemalloc

from autoscaler.service.sync.writes import WriteBackoff


def test_delays_double_from_one_period_to_the_cap_with_jitter() -> None:
    backoff = WriteBackoff(base=15.0, cap=300.0, _random=random.Random(7))
    delays = [backoff.failed("503", now=0.0) for _ in range(10)]
    ceilings = [15.0, 30.0, 60.0, 120.0, 240.0, 300.0, 300.0, 300.0, 300.0, 300.0]
    for delay, ceiling in zip(delays, ceilings, strict=True):
        assert 0.8 * ceiling <= delay <= ceiling
    assert len(set(delays)) == len(delays)  # jittered: targets that failed together spread out
    assert backoff.failures == 10 and backoff.last_error == "503"


def test_the_first_retry_is_the_next_sync_and_a_success_resets() -> None:
    backoff = WriteBackoff(base=15.0)
    assert not backoff.holding(0.0)
    delay = backoff.failed("reset", now=100.0)
    assert backoff.holding(100.0 + delay - 15.0 / 2 - 0.01)
    assert not backoff.holding(100.0 + 15.0)  # the next sync, a period later, goes ahead
    backoff.failed("reset", now=115.0)
    assert backoff.holding(115.0 + 15.0)  # the second retry waits (2 periods, minus jitter)
    assert backoff.succeeded()
    assert not backoff.holding(115.0) and backoff.failures == 0 and backoff.delay == 0.0
    assert not backoff.succeeded()  # nothing to recover from


def test_a_cap_below_the_period_never_shortens_the_first_delay() -> None:
    backoff = WriteBackoff(base=60.0, cap=30.0, _random=random.Random(1))
    assert 48.0 <= backoff.failed("x", now=0.0) <= 60.0


def test_a_backoff_is_small() -> None:
    """One per target and kind of write: 20,000 at 10,000 targets. A random generator of each was 2.9 KiB
    of Mersenne Twister state apiece (58 MiB); they share one."""
    tracemalloc.start()
    try:
        backoffs = [WriteBackoff(base=15.0) for _ in range(1000)]
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(backoffs) == 1000 and size < 400_000
    assert {round(b.failed("x", 0.0), 6) for b in backoffs[:50]} != {round(backoffs[0].delay, 6)}  # still jittered
