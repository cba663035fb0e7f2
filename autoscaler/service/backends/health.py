"""A Prometheus backend's health as its targets see it, and a budget for the writes its failures cause.

Upstream keeps every target's conditions exact, sync after sync. When the backend itself fails for most of
the targets that read from it (it times out, cannot be reached, answers 5xx or 429, or answers partially),
that exactness costs each target a status write and Events whenever its ScalingActive flips: at 10,000
targets, a brownout that flipped them each way was ~6,500 API writes a period. So the service:

* reports the backend once. It is *degraded* when, within a period, at least ``degradedShare`` of the
  targets that read from it (and ``minimumTargets`` at least) failed with such errors; healthy again after
  ``recoveryPeriods`` periods in a row with less than half that share failing. Each change is one Event on
  the service's own object (its Pod, else its leader Lease), the ``PrometheusDegraded`` condition
  (``/readyz``'s detail, ``/api/backends``) and ``autoscaler_prometheus_backend_degraded``;
* holds the per-target churn to a budget of ``writesPerPeriod`` a period (a token bucket). A status write
  that only says a backend failure (ScalingActive False for it, AbleToScale between two True reasons, the
  sync's error) and the Events of that failure spend a token each; without one they wait (the status for
  the target's next sync, which tries again). While the backend is degraded, a write that only takes such
  a failure back spends one too, and the failure's per-target Events are replaced by the backend's Event.

A failing target among healthy ones spends a token now and then and is never held back; a bad query is
not the backend's failure and spends nothing. Decisions are never touched: a failed metric still never
scales, whatever is written. When the backend recovers, the status of each target is exact again from its
first sync after ``recoveryPeriods`` healthy periods (the writes that only take the failure back are free).
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import CollectorRegistry

from autoscaler.core.decision import Decision, Event
from autoscaler.core.metrics import FAILURE_REASONS
from autoscaler.kube.api import KubeApi
from autoscaler.kube.events import EventRecorder, InvolvedObject
from autoscaler.prometheus.backends import DEFAULT_BACKEND
from autoscaler.service.telemetry.metrics_backends import HELD_KINDS, BackendCollector, BackendState
from autoscaler.values.fields import Obj
from autoscaler.values.timestamps import rfc3339

if TYPE_CHECKING:
    from autoscaler.service.settings import ServiceSettings

log = structlog.get_logger("autoscaler.backend")

CONDITION = "PrometheusDegraded"
RECOVERED = "PrometheusRecovered"
_FAILED_EVENT_REASONS = frozenset(FAILURE_REASONS.values())
ALL_FAILED_REASON = _ALL_FAILED = "FailedComputeMetricsReplicas"  # every metric failed: the target's Event

Key = tuple[str, str]
EventPoster = Callable[[str, str, str], Awaitable[None]]  # (type, reason, message)


@dataclass(frozen=True, slots=True)
class BackendHealthSettings:
    """``backendHealth`` in the settings (docs/configuration.md)."""

    degraded_share: float = 0.5
    minimum_targets: int = 10
    writes_per_period: int = 100
    recovery_periods: int = 2


def read_backend_health_settings(obj: Obj | None) -> BackendHealthSettings | None:
    default = BackendHealthSettings()
    if obj is None:
        return default
    share = obj.number("degradedShare", default=default.degraded_share, minimum=0.01, maximum=1)
    minimum = obj.integer("minimumTargets", default=default.minimum_targets, minimum=1, maximum=1_000_000)
    writes = obj.integer("writesPerPeriod", default=default.writes_per_period, minimum=1, maximum=1_000_000)
    recovery = obj.integer("recoveryPeriods", default=default.recovery_periods, minimum=1, maximum=100)
    obj.finish()
    if share is None or minimum is None or writes is None or recovery is None:
        return None
    return BackendHealthSettings(share, minimum, writes, recovery)


@dataclass(frozen=True, slots=True)
class BackendChange:
    """The backend became degraded (or healthy again), and the period's counts that made it so."""

    degraded: bool
    failed: int
    read: int


class BackendHealth:
    """One backend's health (see the module docstring). Every reconciler of the backend's targets reports
    its syncs here (:meth:`observe_sync`) and asks before a write its failure causes (:meth:`admit_status`,
    :meth:`admit_event`). ``clock``: monotonic seconds; ``wall_clock``: for the condition's time."""

    def __init__(
        self,
        backend: str,
        settings: BackendHealthSettings,
        period: float,
        *,
        name: str = DEFAULT_BACKEND,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        """``backend``: its URL; ``name``: its name in the settings (prometheus.backends, or default)."""
        self.backend = backend
        self.name = name
        self.settings = settings
        self.period = period
        self.degraded = False
        self.held = dict.fromkeys(HELD_KINDS, 0)  # writes not made: no token, or replaced by the backend's Event
        self.failed = self.read = 0  # the counts of the last period looked at (the last closed, or at entry)
        self._clock = clock
        self._wall_clock = wall_clock
        self._since = wall_clock()  # when the state last changed
        self._window: dict[Key, bool] = {}  # this period's targets: whether the backend failed them
        self._window_end = clock() + period
        self._healthy_periods = 0
        self._tokens = float(settings.writes_per_period)
        self._refilled = clock()
        self._post: EventPoster | None = None

    @classmethod
    def for_service(cls, settings: ServiceSettings, registry: CollectorRegistry) -> BackendHealth:
        """The health of the service's default Prometheus, in the service's metrics (``registry``); each
        backend's: :class:`autoscaler.service.backends.healths.BackendHealths`."""
        health = cls(settings.prometheus.display_url, settings.backend_health, settings.sync.period_seconds)
        registry.register(BackendCollector(lambda: [health.state()]))
        return health

    def post_events_with(self, post: EventPoster) -> None:
        """Where the backend's own Events go (the service's Pod or Lease: :func:`service_object`)."""
        self._post = post

    def post_events_to(self, api: KubeApi, identity: str, lease: tuple[str, str] | None) -> None:
        """Post the backend's Events on the service's own object (:func:`service_object`), if it has one."""
        involved = service_object(lease)
        if involved is not None:
            self.post_events_with(ServiceEvents(EventRecorder(api, instance=identity), involved).post)

    # -- the syncs -----------------------------------------------------------------------------------

    async def observe_sync(self, key: Key, decision: Decision) -> bool:
        """Count one target's sync; whether the backend failed it. A change of the backend's state is
        logged and posted as its Event before this returns."""
        if not any(not outcome.skipped for outcome in decision.metrics):
            return False  # nothing was read: says nothing of the backend
        return await self.observe_read(key, failed=any(outcome.backend_failure for outcome in decision.metrics))

    async def observe_read(self, key: Key, *, failed: bool) -> bool:
        """Count one target's sync that read from the backend (``failed``: the backend failed it), announcing
        a change of the backend's state; ``failed``."""
        change = self.observe(key, failed=failed)
        if change is not None:
            await self._announce(change)
        return failed

    def observe(self, key: Key, *, failed: bool) -> BackendChange | None:
        """Count one target's sync that read from the backend; the change of state it makes, if any."""
        now = self._clock()
        change = self._close_period(now) if now >= self._window_end else None
        self._window[key] = failed
        if change is None and not self.degraded:
            failing, read = self._counts(self._window)
            if self._failing(failing, read):  # at once, not at the period's end: the budget holds meanwhile
                change = self._change(True, failing, read)
        return change

    def _close_period(self, now: float) -> BackendChange | None:
        failed, read = self._counts(self._window)
        self.failed, self.read = failed, read
        self._window = {}
        self._window_end = now + self.period
        if not self.degraded:
            return self._change(True, failed, read) if self._failing(failed, read) else None
        # Healthy again only well below the share (half of it): a brownout that fails about that share of the
        # targets must not turn the backend degraded and healthy again every other period, an Event each time.
        still = self._failing(failed, read, self.settings.degraded_share / 2)
        self._healthy_periods = 0 if still else self._healthy_periods + 1
        if self._healthy_periods >= self.settings.recovery_periods:
            return self._change(False, failed, read)
        return None

    def _failing(self, failed: int, read: int, share: float | None = None) -> bool:
        share = self.settings.degraded_share if share is None else share
        return failed >= self.settings.minimum_targets and failed >= share * read

    def _change(self, degraded: bool, failed: int, read: int) -> BackendChange:
        self.degraded = degraded
        self.failed, self.read = failed, read
        self._healthy_periods = 0
        self._since = self._wall_clock()
        return BackendChange(degraded, failed, read)

    @staticmethod
    def _counts(window: Mapping[Key, bool]) -> tuple[int, int]:
        return sum(window.values()), len(window)

    # -- the budget ----------------------------------------------------------------------------------

    def admit_status(self, *, failed: bool) -> bool:
        """Whether a target's status write that only says a backend failure (``failed``) or only takes one
        back may go now. Taking one back is free unless the backend is degraded."""
        if not failed and not self.degraded:
            return True
        return self._take("status")

    def admit_event(self) -> bool:
        """Whether an Event of a target's backend failure may be posted now: never while the backend is
        degraded (its own Event says it for every target), else within the budget."""
        if self.degraded:
            self.held["event"] += 1
            return False
        return self._take("event")

    def _take(self, kind: str) -> bool:
        now = self._clock()
        size = float(self.settings.writes_per_period)
        self._tokens = min(size, self._tokens + (now - self._refilled) * size / self.period)
        self._refilled = now
        if self._tokens < 1:
            self.held[kind] += 1
            return False
        self._tokens -= 1
        return True

    # -- what it says ----------------------------------------------------------------------------------

    def state(self) -> BackendState:
        """What the service's metrics say of the backend (:mod:`autoscaler.service.telemetry.metrics_backends`)."""
        return self.backend, self.name, self.degraded, dict(self.held)

    def document(self) -> dict[str, Any]:
        """What ``/api/backends`` shows of the backend: its condition, the last period's counts, the writes held."""
        return {
            "backend": self.backend,
            "name": self.name,
            "conditions": [self.condition()],
            "targetsFailed": self.failed,
            "targetsRead": self.read,
            "heldWrites": dict(self.held),
        }

    def condition(self) -> dict[str, Any]:
        """The backend's ``PrometheusDegraded`` condition."""
        return {
            "type": CONDITION,
            "status": "True" if self.degraded else "False",
            "reason": "BackendFailing" if self.degraded else "BackendAnswers",
            "message": self._message(),
            "lastTransitionTime": rfc3339(self._since),
        }

    def readiness_note(self) -> str | None:
        """What ``/readyz``'s Prometheus check adds while the backend is degraded."""
        return f"{CONDITION}: {self._message()}" if self.degraded else None

    @property
    def described(self) -> str:
        """How messages name the backend: by its URL, and its name when it is a named one."""
        if self.name == DEFAULT_BACKEND:
            return f"Prometheus at {self.backend}"
        return f"Prometheus backend {self.name} at {self.backend}"

    def _message(self) -> str:
        if not self.degraded:
            return (
                f"{self.described} answers its targets ({self.failed} of the {self.read} that read "
                "from it in the last period failed with its errors)"
            )
        return (
            f"{self.failed} of the {self.read} targets that read from {self.described} in a period "
            "failed with its errors (no answer in time, no connection, 5xx, partial answers): their status "
            f"writes for it are limited to {self.settings.writes_per_period} a period and their Events replaced "
            "by this one until it answers again"
        )

    async def _announce(self, change: BackendChange) -> None:
        if change.degraded:
            log.warning(
                "Prometheus degraded", backend=self.backend, name=self.name, failed=change.failed, targets=change.read
            )
            event = ("Warning", CONDITION, self._message())
        else:
            log.info(
                "Prometheus recovered", backend=self.backend, name=self.name, failed=change.failed, targets=change.read
            )
            event = (
                "Normal",
                RECOVERED,
                f"{self.described} answers again: each target's status is written as it is from its next sync",
            )
        if self._post is not None:
            await self._post(*event)


def backend_event(event: Event, decision: Decision) -> bool:
    """Whether ``event`` only says that the backend failed ``decision``'s metrics: a metric's failure
    Event for a backend failure, or "all metrics failed" when every failed one failed so."""
    if event.reason == _ALL_FAILED:
        failed = [outcome for outcome in decision.metrics if outcome.error is not None]
        return bool(failed) and all(outcome.backend_failure for outcome in failed)
    return event.reason in _FAILED_EVENT_REASONS and any(
        outcome.backend_failure and outcome.error == event.message for outcome in decision.metrics
    )


class ServiceEvents:
    """Posts the service's own Events on its object (:func:`service_object`), aggregated and spam-filtered as
    the targets' are."""

    def __init__(self, recorder: EventRecorder, involved: InvolvedObject) -> None:
        self._recorder = recorder
        self._involved = involved

    async def post(self, type_: str, reason: str, message: str) -> None:
        await self._recorder.record(self._involved, type_, reason, message)


def service_object(lease: tuple[str, str] | None, environ: Mapping[str, str] | None = None) -> InvolvedObject | None:
    """What the service's own Events are about: its Pod (``POD_NAME``, ``POD_NAMESPACE`` and ``POD_UID`` from
    the downward API, manifests/controller/deployment.yaml), else its leader Lease ((namespace, name)), else
    nothing (only the log says it)."""
    environ = os.environ if environ is None else environ
    name, namespace = environ.get("POD_NAME"), environ.get("POD_NAMESPACE")
    if name and namespace:
        return InvolvedObject("v1", "Pod", namespace, name, environ.get("POD_UID", ""))
    if lease is not None:
        return InvolvedObject("coordination.k8s.io/v1", "Lease", lease[0], lease[1])
    return None
