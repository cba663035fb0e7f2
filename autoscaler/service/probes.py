"""The service's probes: ``/readyz``'s checks (the caches follow the API server, this instance leads or
knows who does, each Prometheus backend answers) and ``/healthz``'s (no watch ended).

They ask the running service each time: the HTTP server answers them before the clients and the caches exist
(``starting``), and through shutdown."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from autoscaler.prometheus.backends import DEFAULT_BACKEND
from autoscaler.service.cluster.cache_health import cache_readiness
from autoscaler.service.http import ReadinessCheck

if TYPE_CHECKING:
    from autoscaler.service.app import Service


class Probes:
    def __init__(self, service: Service, *, stale_cache_limit: float) -> None:
        """``stale_cache_limit``: how long a watch cache may not follow the API server before ``/readyz``
        fails (decisions of the targets it serves pause at once; readiness tolerates a reconnect's blip)."""
        self._service = service
        self._stale_cache_limit = stale_cache_limit

    def readiness(self) -> list[ReadinessCheck]:
        return [
            ReadinessCheck("caches", self._caches),
            ReadinessCheck("leadership", self._leadership),
            # One check a backend: "prometheus" the default one, "prometheus:<name>" each of prometheus.backends.
            *(
                ReadinessCheck("prometheus" if name == DEFAULT_BACKEND else f"prometheus:{name}", self._backend(name))
                for name in self._service.reporting.backends.healths
            ),
        ]

    def liveness(self) -> list[ReadinessCheck]:
        return [ReadinessCheck("watches", self._watches)]

    def _caches(self) -> tuple[bool, str]:
        parts = self._service.parts
        if parts is None:
            return False, "starting"
        return cache_readiness(parts.sync.cluster.all, self._stale_cache_limit)

    def _leadership(self) -> tuple[bool, str]:
        elector = self._service.elector
        if elector is None:
            if self._service.settings.serving.leader_election.enabled:
                return False, "starting"
            return True, "leader election disabled"
        holder = elector.leader_identity
        if elector.is_leader:
            return True, "leading"
        return (holder is not None, f"standby (leader: {holder})" if holder else "no leader known yet")

    def _backend(self, name: str) -> Callable[[], Awaitable[tuple[bool, str]]]:
        """The check of the backend ``name``: it answers (within the last minute, or now), and whether it is
        degraded (answering some targets, failing most)."""

        async def check() -> tuple[bool, str]:
            parts = self._service.parts
            backend = parts.router.backends.get(name) if parts is not None else None
            if backend is None:
                return False, "starting"
            ok, detail = await backend.readiness()
            degraded = self._service.reporting.backends.healths[name].readiness_note() if ok else None
            return ok, detail + (f"; {degraded}" if degraded else "")

        return check

    def _watches(self) -> tuple[bool, str]:
        # A cache's task runs until shutdown, whatever fails (it relists); one that ended is a bug, and a
        # restart of the process is the cure.
        parts = self._service.parts
        stopped = parts.sync.cluster.stopped() if parts is not None and not self._service.stopping else []
        return (not stopped, "running" if not stopped else f"ended: {', '.join(stopped)}")
