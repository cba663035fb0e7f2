"""Samples stamped far from their query's evaluation time (issue 37, item 8): the bounds, the per-pod check
on both reading shapes, the reader failing the metric, the setting, and Prometheus' clock as the service
reads it."""

from __future__ import annotations

from typing import cast

import pytest

from autoscaler.core.observation import MetricFailure, PodsReading, PodUsage, ResourceReading, Sample
from autoscaler.core.pod_columns import SampleColumns, UsageColumns
from autoscaler.loop.clock import SkewMonitor
from autoscaler.prometheus import MetricsReader, PrometheusClient, PrometheusSettings
from autoscaler.prometheus.results import InstantResult, Series
from autoscaler.prometheus.sample_times import SampleTimes, rough_duration
from autoscaler.prometheus.settings import parse_prometheus_settings
from autoscaler.service.backends.timed_reads import PeerClock, sample_times
from autoscaler.service.settings import parse_service_settings
from autoscaler.values.fields import SpecError
from tests.prometheus import scenario as sc
from tests.prometheus.test_reader import FakeClient, target

YEAR = 365 * 86400.0
NOW = 1_750_000_000.0
TIMES = SampleTimes(300.0, 10.0, lambda: NOW)


def test_ages_are_rounded_to_the_largest_unit_held_twice() -> None:
    assert [rough_duration(s) for s in (0.4, 45, 119.6, 400, 7199, 7200, 2 * 86400 - 1, YEAR, YEAR + 1.7)] == [
        "0s",
        "45s",
        "120s",
        "7m",
        "120m",
        "2h",
        "48h",
        "365d",
        "365d",
    ]


def test_a_samples_bounds_are_its_age_and_how_far_ahead_it_may_be() -> None:
    assert TIMES.within(NOW - 300, NOW) and TIMES.within(NOW + 10, NOW) and TIMES.within(NOW, NOW)
    assert not TIMES.within(NOW - 300.5, NOW) and not TIMES.within(NOW + 10.5, NOW)
    assert TIMES.evaluated_at(None) == NOW and TIMES.evaluated_at(123.0) == 123.0


def test_columns_of_one_time_are_checked_by_that_time() -> None:
    fine = SampleColumns({"a": 1, "b": 2}, NOW - 20)
    assert TIMES.pods_failure(fine, NOW) is None
    stale = TIMES.pods_failure(SampleColumns({"b": 1, "a": 2}, NOW - YEAR), NOW)
    assert isinstance(stale, MetricFailure)
    assert stale.message.startswith(
        'the sample for pod "a" (and the samples of 1 other pod) is 365d old (limit 300s, '
        "prometheus.maxSampleAgeSeconds): "
    )
    ahead = TIMES.pods_failure(UsageColumns({"a": {"app": 1}}, NOW + YEAR), NOW)
    assert isinstance(ahead, MetricFailure)
    assert 'pod "a" is 365d ahead of Prometheus\' time (limit 10s, sync.clockSkewWarningSeconds)' in ahead.message


def test_a_pod_of_another_time_is_checked_by_its_own() -> None:
    # The answer's time is fine; pod "c" was stamped otherwise.
    columns = SampleColumns({"a": 1, "c": 2}, NOW, times={"c": NOW - 3600})
    failure = TIMES.pods_failure(columns, NOW)
    assert isinstance(failure, MetricFailure) and failure.message.startswith('the sample for pod "c" is 60m old')
    # Every pod has its own time: the answer's (stale) is nobody's.
    assert TIMES.pods_failure(SampleColumns({"a": 1}, NOW - YEAR, times={"a": NOW}), NOW) is None


def test_dict_readings_are_checked_pod_by_pod() -> None:
    samples = {"x": Sample(1, NOW), "w": Sample(1, NOW - 1000), "v": Sample(1, NOW - 999)}
    failure = TIMES.pods_failure(samples, NOW)
    assert isinstance(failure, MetricFailure) and failure.message.startswith('the sample for pod "v" (and the samples')
    assert TIMES.pods_failure({"x": PodUsage({"app": 1}, NOW + 5)}, NOW) is None
    assert TIMES.pods_failure({}, NOW) is None


def answering(timestamp: float) -> FakeClient:
    """Every query answered with pod p's and pod q's series and one External series, stamped ``timestamp``."""

    def answer(promql: str) -> InstantResult:
        if "pod" in promql or "container" in promql:
            labels = [{"namespace": "a", "pod": p, "container": "app"} for p in ("p", "q")]
            return InstantResult("vector", vector=tuple(Series(labels_, timestamp, "1") for labels_ in labels))
        return InstantResult("vector", vector=(Series({"queue": "jobs"}, timestamp, "0"),))

    return FakeClient(answer)


@pytest.mark.parametrize("batch", [True, False])
async def test_the_reader_fails_a_metric_read_from_samples_out_of_bounds(batch: bool) -> None:
    metrics = [sc.cpu_metric(), sc.pods_metric(sc.rps_query("m")), sc.external_metric("sum(queue)")]
    targets = [target("a", "x", ("p", "q"), metrics)]
    settings = PrometheusSettings(url="http://prom")
    for stamped, words in ((NOW - YEAR, "365d old"), (NOW + YEAR, "365d ahead")):
        reader = MetricsReader(cast(PrometheusClient, answering(stamped)), settings, batch=batch, sample_times=TIMES)
        [row] = await reader.read(targets, None)
        assert all(isinstance(r, MetricFailure) and words in r.message for r in row), row
        assert row[0].message.startswith('Resource metric "cpu": the sample for pod "p" (and the samples of 1 other')
        assert 'External metric "' in row[2].message and 'the sample of series {queue="jobs"}' in row[2].message
    reader = MetricsReader(cast(PrometheusClient, answering(NOW - 60)), settings, batch=batch, sample_times=TIMES)
    [row] = await reader.read(targets, None)
    assert isinstance(row[0], ResourceReading) and isinstance(row[1], PodsReading), row
    # A query at a given time is checked against that time (a backtest's history), not against the clock.
    reader = MetricsReader(cast(PrometheusClient, answering(1000.0)), settings, batch=batch, sample_times=TIMES)
    [row] = await reader.read(targets, 1000.0 + 299)
    assert not any(isinstance(r, MetricFailure) for r in row), row


def test_the_setting_is_parsed_and_checked() -> None:
    assert parse_prometheus_settings({"url": "http://p"}).max_sample_age_seconds == 300.0
    assert parse_prometheus_settings({"url": "http://p", "maxSampleAgeSeconds": 90}).max_sample_age_seconds == 90.0
    with pytest.raises(SpecError) as raised:
        parse_prometheus_settings({"url": "http://p", "maxSampleAgeSeconds": 0})
    assert [str(e) for e in raised.value.errors] == ["prometheus.maxSampleAgeSeconds: must be between 1 and 31536000"]


def test_prometheus_time_is_the_service_clock_less_the_measured_skew() -> None:
    skew = SkewMonitor("prometheus", 10.0)
    clock = PeerClock(lambda: NOW, skew)
    assert clock.now() == NOW  # nothing measured yet
    skew.observe(NOW - 400.5, NOW, NOW)  # its Date says 400 s behind this service's clock
    assert abs(clock.now() - (NOW - 400)) < 1e-6
    settings = parse_service_settings(
        {"prometheus": {"url": "http://p", "maxSampleAgeSeconds": 60}, "sync": {"clockSkewWarningSeconds": 20}}
    )
    times = sample_times(settings, lambda: NOW, skew)
    assert (times.max_age, times.max_ahead) == (60.0, 20.0)
    assert abs(times.evaluated_at(None) - (NOW - 400)) < 1e-6
