"""How the service reads Prometheus: every query timed into its own metrics (and Prometheus' last answer
remembered for /readyz), the clock-skew note added to the failures a disagreement of clocks can explain, and
Prometheus' clock as the service reads it (what a sample's time is checked against)."""

from __future__ import annotations

import time
from collections.abc import Callable

from autoscaler.core.observation import MetricFailure, MetricReading
from autoscaler.loop.clock import SkewMonitor
from autoscaler.prometheus.client import PrometheusClient
from autoscaler.prometheus.errors import PrometheusError
from autoscaler.prometheus.partial import other_warnings
from autoscaler.prometheus.results import InstantResult, SeriesFilter
from autoscaler.prometheus.sample_times import SampleTimes
from autoscaler.prometheus.slicing import SeriesSink
from autoscaler.service.settings import ServiceSettings
from autoscaler.service.telemetry.metrics import ServiceMetrics


class TimedQuerier:
    """Times every Prometheus query for /metrics, and remembers whether Prometheus last answered."""

    def __init__(self, client: PrometheusClient, metrics: ServiceMetrics) -> None:
        self.client = client
        self.metrics = metrics
        self.last_success: float | None = None
        self.last_error: str | None = None

    async def query(
        self,
        promql: str,
        at: float | None,
        *,
        deadline: float | None = None,
        keep: SeriesFilter | None = None,
        sink: SeriesSink | None = None,
    ) -> InstantResult:
        started = time.monotonic()
        large_before = self.client.stats.large_answers
        try:
            result = await self.client.query(promql, at, deadline=deadline, keep=keep, sink=sink)
        except PrometheusError as exc:
            self.metrics.observe_prometheus_query(time.monotonic() - started, "error", exc.kind)
            self.last_error = str(exc)
            raise
        finally:
            if self.client.stats.large_answers != large_before:
                self.metrics.large_answers.inc()
        outcome = "ok" if result.vector or result.sunk or result.scalar is not None or result.left_out else "empty"
        if result.partial or result.warnings:
            others = len(other_warnings(result))
            partial = int(result.partial) + len(result.warnings) - others
            self.metrics.count_prometheus_warnings(partial, others)
            if partial:
                outcome = "partial"
        self.metrics.observe_prometheus_query(time.monotonic() - started, outcome)
        self.last_success = time.monotonic()
        self.last_error = None
        return result


# Failures that say data was absent: the ones a disagreement of clocks can explain.
_ABSENT_DATA = ("returned no series", "no usable sample")


def with_clock_note(row: list[MetricReading], skew: SkewMonitor) -> list[MetricReading]:
    """``row`` with the clock-skew note on every failure for absent data, while the skew is beyond its
    bound: ScalingActive then says the clock may be why."""
    note = skew.note()
    if note is None:
        return row
    return [
        MetricFailure(f"{r.message}; {note}")
        if isinstance(r, MetricFailure) and any(text in r.message for text in _ABSENT_DATA)
        else r
        for r in row
    ]


class PeerClock:
    """A peer's clock as this service reads it: its own clock (``own``) less the skew the peer's answers'
    ``Date`` headers showed (none measured yet: its own)."""

    __slots__ = ("_own", "_skew")

    def __init__(self, own: Callable[[], float], skew: SkewMonitor) -> None:
        self._own = own
        self._skew = skew

    def now(self) -> float:
        skew = self._skew.skew
        return self._own() - (skew if skew is not None else 0.0)


def sample_times(settings: ServiceSettings, own: Callable[[], float], skew: SkewMonitor) -> SampleTimes:
    """What the reader checks a sample's time against (see :mod:`autoscaler.prometheus.sample_times`): at most
    ``prometheus.maxSampleAgeSeconds`` old and the clock-skew bound ahead of Prometheus' clock, read as this
    service's clock (``own``) less the skew measured to Prometheus (``skew``)."""
    return SampleTimes(
        settings.prometheus.max_sample_age_seconds, settings.sync.clock_skew_warning_seconds, PeerClock(own, skew).now
    )
