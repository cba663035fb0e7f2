"""The watch caches' health as ``/readyz`` and ``/metrics`` read it.

The readiness check fails while a cache has not listed yet, while one has not followed the API server for
longer than the service allows (two sync periods), and while one relists too often (more than 5 times in a
minute, :mod:`autoscaler.kube.relists`). Its detail names each such cache and why, each error cut to a few
hundred characters: a server's error can be megabytes, and a probe repeats it every few seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autoscaler.kube.watch import WatchCache
from autoscaler.service.telemetry.metrics_caches import CacheState
from autoscaler.values.clipping import clip

__all__ = ["ERROR_IN_DETAIL", "cache_readiness", "cache_states"]

ERROR_IN_DETAIL = 300  # characters of a cache's error in the readiness detail


def cache_readiness(caches: Sequence[WatchCache[Any]], stale_limit: float) -> tuple[bool, str]:
    """``/readyz``'s ``caches`` check: ok, and a detail naming each cache that is not ready and why."""
    pending = [_with_error(cache.name, cache.last_error) for cache in caches if not cache.synced.is_set()]
    if pending:
        return False, f"waiting for {', '.join(pending)}"
    problems = []
    stale = [
        f"{cache.name} for {cache.stale_for():.0f}s ({clip(cache.last_error or '', ERROR_IN_DETAIL)})"
        for cache in caches
        if cache.stale_for() > stale_limit
    ]
    if stale:
        problems.append(f"not following the API server: {'; '.join(stale)}")
    relisting = [found for cache in caches if (found := cache.relisting(ERROR_IN_DETAIL)) is not None]
    if relisting:
        problems.append(f"relisting too often: {'; '.join(relisting)}")
    return (False, "; ".join(problems)) if problems else (True, "synced")


def cache_states(caches: Sequence[WatchCache[Any]]) -> list[CacheState]:
    """What ``/metrics`` shows of each cache (:class:`~autoscaler.service.telemetry.metrics_caches.CacheCollector`)."""
    return [
        CacheState(
            cache.resource.label,
            cache.synced.is_set(),
            cache.stale_for(),
            cache.incidents,
            dict(cache.relist_counts.counts),
            cache.relisting() is not None,
        )
        for cache in caches
    ]


def _with_error(name: str, error: str | None) -> str:
    return f"{name} ({clip(error, ERROR_IN_DETAIL)})" if error else name
