"""The exporter's step of load (``change_rates``) and its record of renders: a benchmark steps counters at one
instant and asks which scrape first carried the step (bench/servicebench/reaction.py)."""

from __future__ import annotations

import re

import pytest

from autoscaler_sandbox.exporter import RENDERS_KEPT, MetricsExporter, continuous_origin


def counter_values(text: str, name: str) -> dict[str, tuple[float, int]]:
    """pod → (value, timestamp in ms) of ``name``'s samples."""
    values = {}
    for line in text.splitlines():
        match = re.fullmatch(rf'{name}{{pod="([^"]+)"}} (\S+) (\d+)', line)
        if match:
            values[match[1]] = (float(match[2]), int(match[3]))
    return values


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_changed_rate_keeps_the_counter_continuous_and_grows_at_the_new_slope() -> None:
    exporter = MetricsExporter()
    clock = Clock(1_000_000.0)
    exporter._clock = clock
    exporter.set_rate("requests_total", {"pod": "a"}, 10.0, origin=clock.now - 3600)
    exporter.set_rate("requests_total", {"pod": "b"}, 10.0, origin=clock.now - 3600)
    clock.now += 5.0
    before = counter_values(exporter.render(), "requests_total")
    assert before["a"][0] == pytest.approx(10.0 * 3605)
    step = exporter.change_rates("requests_total", [{"pod": "a"}], 20.0)
    assert step == clock.now
    assert counter_values(exporter.render(), "requests_total")["a"][0] == pytest.approx(before["a"][0])  # no jump
    clock.now += 3.0
    after = counter_values(exporter.render(), "requests_total")
    assert after["a"][0] - before["a"][0] == pytest.approx(20.0 * 3.0)  # the new slope from the step on
    assert after["b"][0] - before["b"][0] == pytest.approx(10.0 * 3.0)  # a counter not named is left alone
    # Back to the old rate, continuous again: the counter never goes back.
    exporter.change_rates("requests_total", [{"pod": "a"}], 10.0)
    clock.now += 1.0
    assert counter_values(exporter.render(), "requests_total")["a"][0] == pytest.approx(after["a"][0] + 10.0)


def test_continuous_origin_is_where_the_new_slope_meets_the_value_at_the_step() -> None:
    origin = continuous_origin(10.0, 0.0, 40.0, 100.0)  # 1,000 at t=100: the new line reaches it at 100 too
    assert 40.0 * (100.0 - origin) == pytest.approx(1000.0)
    assert origin == pytest.approx(75.0)


def test_renders_are_kept_at_their_samples_timestamps_and_bounded() -> None:
    exporter = MetricsExporter()
    clock = Clock(1_700_000_000.1234)
    exporter._clock = clock
    exporter.set_rate("requests_total", {"pod": "a"}, 1.0)
    text = exporter.render()
    assert list(exporter.renders) == [1_700_000_000.123]
    assert counter_values(text, "requests_total")["a"][1] == 1_700_000_000_123  # the same instant, in ms
    for _ in range(RENDERS_KEPT + 5):
        clock.now += 1.0
        exporter.render()
    assert len(exporter.renders) == RENDERS_KEPT
    assert exporter.renders[-1] == pytest.approx(clock.now, abs=1e-3)


def test_changing_a_counter_never_set_is_an_error() -> None:
    exporter = MetricsExporter()
    exporter.set_rate("requests_total", {"pod": "a"}, 1.0)
    with pytest.raises(KeyError):
        exporter.change_rates("requests_total", [{"pod": "missing"}], 2.0)
