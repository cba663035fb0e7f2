"""The Prometheus backend's health in the service's own metrics, read when /metrics is scraped."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

HELD_KINDS = ("status", "event")
BackendState = tuple[str, bool, Mapping[str, int]]  # backend (its URL), degraded, writes held by kind


class BackendCollector:
    """``autoscaler_prometheus_backend_degraded`` and ``autoscaler_prometheus_backend_held_writes_total``
    of each backend (:mod:`autoscaler.service.backend_health`), labelled with its URL (no credentials)."""

    def __init__(self, source: Callable[[], Iterable[BackendState]]) -> None:
        self._source = source

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        degraded_family = GaugeMetricFamily(
            "autoscaler_prometheus_backend_degraded",
            "1 while the backend fails most of the targets that read from it (backendHealth.degradedShare of "
            "them in a period): their status writes for it are held to backendHealth.writesPerPeriod a period.",
            labels=["backend"],
        )
        held_family = CounterMetricFamily(
            "autoscaler_prometheus_backend_held_writes",
            "Per-target status writes and Events that only said the backend failed (or no longer fails) and "
            "were not made: past the budget, or an Event the backend's own Event stands for.",
            labels=["backend", "kind"],
        )
        for backend, degraded, held in self._source():
            degraded_family.add_metric([backend], 1.0 if degraded else 0.0)
            for kind in HELD_KINDS:
                held_family.add_metric([backend, kind], held.get(kind, 0))
        yield from (degraded_family, held_family)
