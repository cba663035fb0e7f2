"""The watch caches' health in the service's own metrics, read when /metrics is scraped."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import NamedTuple

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from autoscaler.kube.relists import REASONS


class CacheState(NamedTuple):
    """One watch cache, as the metrics show it."""

    resource: str
    synced: bool
    stale_seconds: float
    incidents: int
    relists: Mapping[str, int]  # by reason (:data:`autoscaler.kube.relists.REASONS`)
    relisting: bool = False  # it relists too often (``/readyz`` fails)


class _Merged:
    """The caches of one resource (one per watched namespace) as one series."""

    __slots__ = ("incidents", "relisting", "relists", "stale", "synced")

    def __init__(self) -> None:
        self.synced, self.stale, self.incidents, self.relisting = 1.0, 0.0, 0, 0.0
        self.relists: dict[str, int] = dict.fromkeys(REASONS, 0)


class CacheCollector:
    """The watch caches' health, read at scrape time. Several caches of one resource (one per watched
    namespace) are one series: synced only if all follow the server, the stalest one's staleness, summed
    counts, relisting if one does."""

    def __init__(self, source: Callable[[], Iterable[CacheState]]) -> None:
        self._source = source

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        merged: dict[str, _Merged] = {}
        for state in self._source():
            now = merged.setdefault(state.resource, _Merged())
            now.synced = min(now.synced, 1.0 if state.synced and state.stale_seconds == 0 else 0.0)
            now.stale = max(now.stale, state.stale_seconds)
            now.incidents += state.incidents
            now.relisting = max(now.relisting, 1.0 if state.relisting else 0.0)
            for reason, count in state.relists.items():
                now.relists[reason] = now.relists.get(reason, 0) + count
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
            "autoscaler_cache_relists",
            "Relists after the first list, by reason: expired (410 Gone), error (any other failure), "
            "discovered (a resource that was not served is).",
            labels=["resource", "reason"],
        )
        relisting_family = GaugeMetricFamily(
            "autoscaler_cache_relisting",
            "1 while the watch cache of a resource relists too often (more than 5 times in a minute, until "
            "it has followed the server for a minute; kubernetes.relists); /readyz fails meanwhile.",
            labels=["resource"],
        )
        for resource, values in sorted(merged.items()):
            synced_family.add_metric([resource], values.synced)
            stale_family.add_metric([resource], round(values.stale, 3))
            incidents_family.add_metric([resource], values.incidents)
            for reason, count in sorted(values.relists.items()):
                relists_family.add_metric([resource, reason], count)
            relisting_family.add_metric([resource], values.relisting)
        yield from (synced_family, stale_family, incidents_family, relists_family, relisting_family)
