"""The health of each Prometheus backend (prometheus.backends, and the default one), as the targets' syncs see it.

Each backend is judged on its own (:class:`~autoscaler.service.backends.health.BackendHealth`): a target counts
toward the health of each backend it read from, failed there only if a metric read from that backend failed
with the backend's errors. So a brownout of one tenant's Mimir makes that backend degraded, its Event and
``autoscaler_prometheus_backend_degraded{name="tenant-b"}`` say so, and the budget of writes its failures
cost is its own: the targets of the other backends are written as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from autoscaler.core.decision import Decision, Event
from autoscaler.core.results import MetricOutcome
from autoscaler.kube.api import KubeApi
from autoscaler.kube.events import EventRecorder
from autoscaler.prometheus.backends import DEFAULT_BACKEND, all_backends, backend_of
from autoscaler.service.backends.health import ALL_FAILED_REASON, BackendHealth, Key, ServiceEvents, service_object
from autoscaler.service.telemetry.metrics_backends import BackendCollector

if TYPE_CHECKING:
    from autoscaler.service.settings import ServiceSettings


def backend_name(outcome: MetricOutcome) -> str:
    """The backend a metric's outcome was read from."""
    return backend_of(outcome.spec.backend)


class BackendHealths:
    """Every backend's :class:`BackendHealth`, by name (the default one first). What a target's report asks of
    "the backend" goes to the backends its metrics were read from."""

    def __init__(self, healths: Mapping[str, BackendHealth]) -> None:
        assert DEFAULT_BACKEND in healths
        self.healths = dict(healths)

    @classmethod
    def for_service(cls, settings: ServiceSettings, registry: CollectorRegistry) -> BackendHealths:
        """One health per backend of ``settings``, all in the service's metrics (``registry``)."""
        period = settings.sync.period_seconds
        healths = {
            name: BackendHealth(backend.display_url, settings.backend_health, period, name=name)
            for name, backend in all_backends(settings.prometheus, settings.prometheus_backends).items()
        }
        group = cls(healths)
        registry.register(BackendCollector(group.states))
        return group

    @property
    def default(self) -> BackendHealth:
        return self.healths[DEFAULT_BACKEND]

    def states(self) -> list[Any]:
        return [health.state() for health in self.healths.values()]

    def documents(self) -> list[dict[str, Any]]:
        """What ``/api/backends`` lists: each backend's document."""
        return [health.document() for health in self.healths.values()]

    def post_events_to(self, api: KubeApi, identity: str, lease: tuple[str, str] | None) -> None:
        """Every backend's Events on the service's own object (one recorder: aggregated and spam-filtered as one)."""
        involved = service_object(lease)
        if involved is None:
            return
        events = ServiceEvents(EventRecorder(api, instance=identity), involved)
        for health in self.healths.values():
            health.post_events_with(events.post)

    async def observe_sync(self, key: Key, decision: Decision) -> bool:
        """Count one target's sync toward each backend it read from; whether a backend failed it."""
        if len(self.healths) == 1:
            return await self.default.observe_sync(key, decision)
        failed_at: dict[str, bool] = {}
        for outcome in decision.metrics:
            if not outcome.skipped:
                name = backend_name(outcome)
                failed_at[name] = failed_at.get(name, False) or outcome.backend_failure
        failed = False
        for name, backend_failed in failed_at.items():
            health = self.healths.get(name)
            if health is not None:  # an unknown backend's metric failed before anything was read
                failed = await health.observe_read(key, failed=backend_failed) or failed
        return failed

    def admit_event(self, event: Event, decision: Decision) -> bool:
        """Whether an Event that only says backends failed ``decision``'s metrics may be posted now: never
        while one of those backends is degraded (its own Event says it), else within the first one's budget."""
        healths = self._of(
            outcome
            for outcome in decision.metrics
            if outcome.backend_failure and (event.reason == ALL_FAILED_REASON or outcome.error == event.message)
        )
        degraded = [health for health in healths if health.degraded]
        return (degraded or healths)[0].admit_event()

    def admit_status(self, decision: Decision, *, failed: bool) -> bool:
        """Whether a status write that only says a backend failure (``failed``), or only takes one back, may go
        now: within the budget of the backend that failed (or of a degraded one the target reads from)."""
        if len(self.healths) == 1:
            return self.default.admit_status(failed=failed)
        read = [outcome for outcome in decision.metrics if not outcome.skipped]
        healths = self._of(outcome for outcome in read if outcome.backend_failure) if failed else self._of(read)
        degraded = [health for health in healths if health.degraded]
        return (degraded or healths)[0].admit_status(failed=failed)

    def _of(self, outcomes: Iterable[MetricOutcome]) -> list[BackendHealth]:
        """The healths of the backends ``outcomes`` were read from, in order (the default one if none)."""
        names = dict.fromkeys(backend_name(outcome) for outcome in outcomes)
        found = [self.healths[name] for name in names if name in self.healths]
        return found or [self.default]
