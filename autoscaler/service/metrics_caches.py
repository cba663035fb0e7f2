"""The watch caches' health in the service's own metrics, read when /metrics is scraped."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

CacheState = tuple[str, bool, float, int, int]  # resource, synced, stale seconds, incidents, relists


class CacheCollector:
    """The watch caches' health, read at scrape time. Several caches of one resource (one per watched
    namespace) are one series: synced only if all follow the server, the stalest one's staleness, summed
    counts."""

    def __init__(self, source: Callable[[], Iterable[CacheState]]) -> None:
        self._source = source

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        merged: dict[str, list[float]] = {}
        for resource, synced, stale, incidents, relists in self._source():
            now: list[float] = merged.setdefault(resource, [1.0, 0.0, 0.0, 0.0])
            now[0] = min(now[0], 1.0 if synced and stale == 0 else 0.0)
            now[1] = max(now[1], stale)
            now[2] += incidents
            now[3] += relists
        synced_family = GaugeMetricFamily(
            "autoscaler_cache_synced",
            "1 while the watch cache of a resource follows the API server (listed, and its watch not broken).",
            labels=["resource"],
        )
        stale_family = GaugeMetricFamily(
            "autoscaler_cache_stale_seconds",
            "Seconds since the watch cache of a resource last heard from the API server, while its watch is "
            "broken (0 while it follows the server).",
            labels=["resource"],
        )
        incidents_family = CounterMetricFamily(
            "autoscaler_cache_watch_failures",
            "Times the watch cache of a resource stopped following the server.",
            labels=["resource"],
        )
        relists_family = CounterMetricFamily(
            "autoscaler_cache_relists", "Relists after the first list.", labels=["resource"]
        )
        for resource, values in sorted(merged.items()):
            synced_family.add_metric([resource], values[0])
            stale_family.add_metric([resource], round(values[1], 3))
            incidents_family.add_metric([resource], values[2])
            relists_family.add_metric([resource], values[3])
        yield from (synced_family, stale_family, incidents_family, relists_family)
