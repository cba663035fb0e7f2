"""The Prometheus backend's health in the service's own metrics, read when /metrics is scraped."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

HELD_KINDS = ("status", "event")
# backend (its URL), its name (prometheus.backends, or default), degraded, writes held by kind
BackendState = tuple[str, str, bool, Mapping[str, int]]


class BackendCollector:
    """``autoscaler_prometheus_backend_degraded`` and ``autoscaler_prometheus_backend_held_writes_total``
    of each backend (:mod:`autoscaler.service.backends.health`), labelled with its URL (no credentials) and its
    name (two backends may share a URL: a Mimir's tenants, told apart by a header)."""

    def __init__(self, source: Callable[[], Iterable[BackendState]]) -> None:
        self._source = source

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        degraded_family = GaugeMetricFamily(
            "autoscaler_prometheus_backend_degraded",
            "1 while the backend fails most of the targets that read from it (backendHealth.degradedShare of "
            "them in a period): their status writes for it are held to backendHealth.writesPerPeriod a period.",
            labels=["backend", "name"],
        )
        held_family = CounterMetricFamily(
            "autoscaler_prometheus_backend_held_writes",
            "Per-target status writes and Events that only said the backend failed (or no longer fails) and "
            "were not made: past the budget, or an Event the backend's own Event stands for.",
            labels=["backend", "name", "kind"],
        )
        for backend, name, degraded, held in self._source():
            degraded_family.add_metric([backend, name], 1.0 if degraded else 0.0)
            for kind in HELD_KINDS:
                held_family.add_metric([backend, name, kind], held.get(kind, 0))
        yield from (degraded_family, held_family)


QUERY_OUTCOMES = ("answered", "error")
QueryCounts = tuple[str, Mapping[str, int]]  # a backend's name, its queries by outcome


class BackendQueriesCollector:
    """``autoscaler_prometheus_backend_queries_total{name, outcome}``: each backend's queries, answered or failed
    (``autoscaler_prometheus_queries_total`` and its duration histogram count every backend's together)."""

    def __init__(self, source: Callable[[], Iterable[QueryCounts]]) -> None:
        self._source = source

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "autoscaler_prometheus_backend_queries",
            "Queries sent to each Prometheus backend (name: default, or its name in prometheus.backends), by outcome.",
            labels=["name", "outcome"],
        )
        for name, counts in self._source():
            for outcome in QUERY_OUTCOMES:
                family.add_metric([name, outcome], counts.get(outcome, 0))
        yield family
