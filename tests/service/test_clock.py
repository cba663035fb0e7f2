"""The decisions' clock never steps, and a peer's skew is measured, reported once, and noted."""

from __future__ import annotations

import itertools

import pytest

from autoscaler.loop.clock import MAX_SLEW, ProcessClock, SkewMonitor


class Clocks:
    def __init__(self) -> None:
        self.wall = 1_700_000_000.0
        self.mono = 100.0

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


def test_a_wall_clock_step_does_not_move_the_process_clock() -> None:
    clocks = Clocks()
    clock = ProcessClock(wall=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    start = clock.now()
    clocks.advance(10)
    assert clock.now() == pytest.approx(start + 10)
    clocks.wall += 600  # NTP steps the wall clock 10 minutes forward
    clocks.advance(4)
    assert clock.now() == pytest.approx(start + 14, abs=4 * MAX_SLEW + 1e-6)
    clocks.wall -= 1200  # and back
    clocks.advance(4)
    assert clock.now() == pytest.approx(start + 18, abs=8 * MAX_SLEW + 1e-6)


def test_the_process_clock_slews_toward_a_corrected_wall_clock_and_never_goes_back() -> None:
    clocks = Clocks()
    clock = ProcessClock(wall=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    clocks.wall -= 1.0  # the wall clock was a second fast at start-up, then corrected
    readings, walls = [], []
    for _ in range(2400):
        clocks.advance(1)
        readings.append(clock.now())
        walls.append(clocks.wall)
    assert all(b > a for a, b in itertools.pairwise(readings))
    assert readings[999] - walls[999] == pytest.approx(1.0 - 1000 * MAX_SLEW, abs=1e-3)
    assert readings[-1] == pytest.approx(walls[-1], abs=1e-3)  # 1 s slewed away within 2,000 s


def test_skew_is_estimated_reported_once_and_resolved() -> None:
    reported: list[tuple[str, float]] = []
    monitor = SkewMonitor("prometheus", 10.0, lambda peer, seconds: reported.append((peer, seconds)))
    # The peer's Date says 1000 while our clock read 1400.2 → 1400.4 around the request: we are ahead.
    monitor.observe(1000.0, 1400.2, 1400.4)
    monitor.observe(1000.0, 1400.0, 1403.0)  # a slow answer: its estimate is not used
    assert monitor.skew == pytest.approx(399.8)
    assert reported[-1][0] == "prometheus" and reported[-1][1] == pytest.approx(399.8)
    note = monitor.note()
    assert note is not None and "clock is 400s ahead of prometheus's" in note
    for _ in range(8):
        monitor.observe(1000.0, 1000.4, 1000.6)
    assert monitor.skew == pytest.approx(0.0) and monitor.note() is None
    assert monitor.beyond is False


def test_a_large_step_is_reported_until_the_clocks_agree_again() -> None:
    clocks = Clocks()
    clock = ProcessClock(wall=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    clocks.wall += 600
    for _ in range(3):
        clocks.advance(1)
        clock.now()
    assert clock.stepped
    clocks.wall -= 600
    clocks.advance(1)
    clock.now()
    assert not clock.stepped
