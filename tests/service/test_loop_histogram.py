"""The loop's histogram serves what prometheus-client's Histogram serves for the same observations."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from autoscaler.service.telemetry.loop_histogram import LoopHistogram
from autoscaler.service.telemetry.metrics import FAST_BUCKETS, LAG_BUCKETS


def exposition(registry: CollectorRegistry) -> list[str]:
    return [line for line in generate_latest(registry).decode().splitlines() if "_created" not in line]


@given(
    buckets=st.sampled_from([FAST_BUCKETS, LAG_BUCKETS, (1.0,), (0.0, 2.0, float("inf"))]),
    values=st.lists(
        st.one_of(st.floats(0, 100, allow_nan=False), st.sampled_from([0.0, 0.0005, 0.001, 1.0, 2.0, 30.0, 31.0]))
    ),
)
def test_the_same_series_as_prometheus_clients_histogram(buckets: tuple[float, ...], values: list[float]) -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    histogram = Histogram("sync_seconds", "How long.", buckets=buckets, registry=theirs)
    loop_histogram = LoopHistogram("sync_seconds", "How long.", buckets)
    ours.register(loop_histogram)
    assert exposition(ours) == exposition(theirs)  # nothing observed yet
    for value in values:
        histogram.observe(value)
        loop_histogram.observe(value)
    assert exposition(ours) == exposition(theirs)


def test_a_value_on_a_bound_is_in_that_bounds_bucket() -> None:
    registry = CollectorRegistry()
    histogram = LoopHistogram("lag_seconds", "How late.", (0.5, 1.0))
    registry.register(histogram)
    for value in (0.5, 1.0, 1.5):
        histogram.observe(value)
    assert registry.get_sample_value("lag_seconds_bucket", {"le": "0.5"}) == 1.0
    assert registry.get_sample_value("lag_seconds_bucket", {"le": "1.0"}) == 2.0
    assert registry.get_sample_value("lag_seconds_bucket", {"le": "+Inf"}) == 3.0
    assert registry.get_sample_value("lag_seconds_count") == 3.0
    assert registry.get_sample_value("lag_seconds_sum") == 3.0
