"""What the service writes: a target's scale, its status, Events about it, and its VPA's pins.

:class:`ClusterWriter` is the interface; :class:`ApiWriter` writes through the Kubernetes API.
:class:`TargetWrites` is one target's side of it, as its reconciler uses it: every write fenced on
leadership right before it is sent (an instance whose lease may have run out writes nothing) and on the
target being this instance's (one that moved to another shard is written by that shard only), and writes
that keep failing backing off (:class:`WriteBackoff`): the scale and the status
together (a sync waits), the VPA on its own (HVPA's vertical path fails in isolation, horizontal goes on).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from autoscaler.kube.api import VPAS, KubeApi, KubeError
from autoscaler.kube.events import EventRecorder, InvolvedObject
from autoscaler.kube.scale import DEFAULT_API_VERSIONS, Scale, ScaleError, StaleScale
from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.service.cluster.targets import API_VERSION, KIND, TARGETS, Target
from autoscaler.service.sync.scales import ClusterScales
from autoscaler.service.telemetry.metrics_sink import MetricsSink
from autoscaler.service.telemetry.redaction import redacted_status

log = structlog.get_logger("autoscaler.reconciler")
# How long a stopped reconciler lets a sync caught writing a scale finish that write and the status that
# records it (the shutdown's drain has its own budget besides: service/app.py).
SCALE_WRITE_GRACE_SECONDS = 5.0


class LeadershipLost(Exception):
    """This instance may no longer write: stop before touching anything."""


class TargetLeft(Exception):
    """This target is no longer this instance's to write (moved to another shard, deleted, or its watch
    broke): the sync stops before touching anything; the manager stops the reconciler when it sees why."""


class ClusterWriter(Protocol):
    """The service's writes to the cluster, for any target."""

    def may_write(self) -> bool:
        """Leadership fencing: False once leadership may be lost (or the service is shutting down)."""

    def may_finish(self) -> bool:
        """The fence of the writes that finish a scale write already sent (its status, its Events), which
        a shutdown lets through: False once leadership may be lost."""

    def target_problem(self, target: Target) -> str | None:
        """Shard fencing: why ``target`` is not this instance's to write now, or None (it is)."""

    async def write_scale(self, target: Target, replicas: int, decided_on: Scale) -> None:
        """Raises :class:`~autoscaler.kube.scale.StaleScale` when another writer changed the replicas
        since ``decided_on`` was read, :class:`~autoscaler.kube.scale.ScaleError` when the write fails."""

    async def write_status(
        self, target: Target, document: Mapping[str, Any], previous: Mapping[str, Any] | None
    ) -> None:
        """Raises :class:`KubeError` when the write fails; a target deleted meanwhile is no failure."""

    async def record_event(self, target: Target, type_: str, reason: str, message: str) -> None: ...

    async def write_vpa(self, target: Target, name: str, patch: Mapping[str, Any]) -> None:
        """Merge-patch the VPA ``name`` in the target's namespace; raises :class:`KubeError`."""


def status_patch(previous: Mapping[str, Any], document: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that makes ``previous`` (the status last written) ``document``: a key ``document``
    lacks is nulled, at any depth (a merge patch merges objects key by key, so a key dropped inside one —
    ``status.metricHealth``'s ``since`` once its metric answers — would otherwise stay)."""
    patch: dict[str, Any] = {key: None for key in previous if key not in document}
    for key, value in document.items():
        before = previous.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            patch[key] = status_patch(before, value)
        else:
            patch[key] = value
    return patch


class ApiWriter:
    """:class:`ClusterWriter` through the Kubernetes API. Targets from a file (``static``) have no
    object in the cluster: their status is not written, and their Events go to the scaled workload."""

    def __init__(
        self,
        api: KubeApi,
        scales: ClusterScales,
        events: EventRecorder,
        *,
        may_write: Callable[[], bool],
        static: bool,
        target_problem: Callable[[Target], str | None] = lambda target: None,
        may_finish: Callable[[], bool] | None = None,
    ) -> None:
        self._api = api
        self._scales = scales
        self._events = events
        self.may_write = may_write
        self.may_finish = may_finish if may_finish is not None else may_write
        self.target_problem = target_problem
        self._static = static
        self.redaction = KnownSecrets()  # the service's own, once it has one (service/telemetry/redaction.py)

    async def write_scale(self, target: Target, replicas: int, decided_on: Scale) -> None:
        await self._scales.write(target, replicas, decided_on)

    async def write_status(
        self, target: Target, document: Mapping[str, Any], previous: Mapping[str, Any] | None
    ) -> None:
        if self._static:
            return
        document = redacted_status(self.redaction, document)
        body = {"status": status_patch(previous or {}, document)}
        try:
            await self._api.merge_patch(
                TARGETS.item(target.namespace, target.name, "status"), body, resource="scalingtargets/status"
            )
        except KubeError as exc:
            if not exc.not_found:
                raise

    async def record_event(self, target: Target, type_: str, reason: str, message: str) -> None:
        await self._events.record(self.involved(target), type_, reason, self.redaction.redact(message))

    async def write_vpa(self, target: Target, name: str, patch: Mapping[str, Any]) -> None:
        await self._api.merge_patch(VPAS.item(target.namespace, name), patch, resource="verticalpodautoscalers")

    def involved(self, target: Target) -> InvolvedObject:
        """What the target's Events are about."""
        if self._static and target.spec is not None:
            ref = target.spec.scale_target_ref
            return InvolvedObject(
                ref.api_version or DEFAULT_API_VERSIONS.get(ref.kind, ""), ref.kind, target.namespace, ref.name
            )
        return InvolvedObject(API_VERSION, KIND, target.namespace, target.name, target.uid)


class TargetWrites:
    """One target's writes (see the module docstring). A sync calls :meth:`begin` first and :meth:`end`
    last: one failure per sync counts toward the backoff, and a sync whose writes all went through ends it."""

    def __init__(self, writer: ClusterWriter, period: float, metrics: MetricsSink) -> None:
        self._writer = writer
        self._metrics = metrics
        self.horizontal = WriteBackoff(period)
        self.vpa_backoff = WriteBackoff(period)
        self._failed = False  # a write of the current sync failed
        self._stopping = False  # see stop_scaling

    def stop_scaling(self) -> None:
        """The reconciler is stopping: no scale write is sent from now on. A sync whose scale write was
        sent still writes the status that records it (the reconciler waits for it, bounded), fenced on
        leadership alone (:meth:`ClusterWriter.may_finish`)."""
        self._stopping = True

    def may_write(self) -> bool:
        """Whether this target's next write may go: once its reconciler is stopping (:meth:`stop_scaling`),
        only the writes that finish a scale write already sent, which a shutdown lets through."""
        return self._writer.may_finish() if self._stopping else self._writer.may_write()

    def fence(self, target: Target) -> None:
        """Checked right before every write: this instance leads, and the target is still its own."""
        if not self.may_write():
            raise LeadershipLost
        problem = self._writer.target_problem(target)
        if problem is not None:
            raise TargetLeft(problem)

    def holding(self, clock: float) -> bool:
        """Whether a sync now must wait: its writes are backing off."""
        return self.horizontal.holding(clock)

    def begin(self) -> None:
        self._failed = False

    def end(self, target: Target) -> None:
        """After a sync whose writes all went through: a backoff in progress ends (recovery)."""
        if not self._failed and self.horizontal.succeeded():
            self._metrics.set_write_backoff(target.namespace, target.name, "horizontal", 0.0)
            log.info("writes succeed again: backoff over")

    async def scale(self, target: Target, replicas: int, current: int, decided_on: Scale) -> str | None:
        """Set the scale; None when it was written, else why not (as the AbleToScale condition says it)."""
        if self._stopping:
            raise LeadershipLost  # stopping: the sync ends here, its intent recorded, its write not sent
        self.fence(target)
        try:
            await self._writer.write_scale(target, replicas, decided_on)
        except StaleScale as exc:  # another writer changed the replicas: decide again, no backoff (F8)
            return str(exc)
        except ScaleError as exc:
            return f"{exc}; {self._failure(target, 'scale', str(exc))}"
        self._metrics.count_scale_event(target.namespace, target.name, "up" if replicas > current else "down")
        return None

    async def status(self, target: Target, document: Mapping[str, Any], previous: Mapping[str, Any] | None) -> bool:
        """Write the status; whether it was written (a failure backs off)."""
        self.fence(target)
        try:
            await self._writer.write_status(target, document, previous)
        except KubeError as exc:
            self._failure(target, "status", str(exc))
            return False
        return True

    async def status_before_scale(
        self, target: Target, document: Mapping[str, Any], previous: Mapping[str, Any] | None
    ) -> str | None:
        """Write the status that records a scale write before it is sent; None when written, else why not
        (a failure backs off, as a failed scale write does)."""
        self.fence(target)
        try:
            await self._writer.write_status(target, document, previous)
        except KubeError as exc:
            failure = self._failure(target, "status", str(exc))
            return f"the status could not record the scale before it was written: {exc}; {failure}"
        return None

    async def event(self, target: Target, type_: str, reason: str, message: str) -> None:
        self.fence(target)
        await self._writer.record_event(target, type_, reason, message)

    async def vpa(self, target: Target, name: str, patch: Mapping[str, Any]) -> bool:
        """Pin the VPA; whether it was written (held while its own backoff lasts)."""
        clock = time.monotonic()
        if self.vpa_backoff.holding(clock):
            return False
        self.fence(target)
        try:
            await self._writer.write_vpa(target, name, patch)
        except KubeError as exc:
            delay = self.vpa_backoff.failed(str(exc), clock)
            self._metrics.count_write_failure("vpa")
            self._metrics.set_write_backoff(target.namespace, target.name, "vpa", delay)
            log.warning(
                "could not pin the VPA",
                vpa=name,
                error=str(exc),
                failures=self.vpa_backoff.failures,
                retry_in=round(delay, 1),
            )
            await self.event(
                target, "Warning", "FailedUpdateVPA", f"could not pin VPA {name}: {exc}; next attempt in {delay:.0f}s"
            )
            return False
        if self.vpa_backoff.succeeded():
            self._metrics.set_write_backoff(target.namespace, target.name, "vpa", 0.0)
            log.info("the VPA can be pinned again", vpa=name)
        return True

    def _failure(self, target: Target, kind: str, error: str) -> str:
        """Count a failed write (once per sync) and back off; returns when the next attempt comes, as
        the AbleToScale message says it."""
        self._metrics.count_write_failure(kind)
        backoff = self.horizontal
        if not self._failed:
            self._failed = True
            delay = backoff.failed(error, time.monotonic())
            self._metrics.set_write_backoff(target.namespace, target.name, "horizontal", delay)
            log.warning(
                "write failed: backing off",
                write=kind,
                error=error,
                failures=backoff.failures,
                retry_in=round(delay, 1),
            )
        return (
            f"next attempt in {backoff.delay:.0f}s "
            f"({backoff.failures} failed write{'s' if backoff.failures > 1 else ''} in a row)"
        )


WRITE_BACKOFF_CAP = 300.0  # seconds
JITTER = 0.2  # each delay is shortened by up to this fraction
# One jitter source for every target's backoff: a Random of each (two per target) cost a Mersenne Twister
# state and an os.urandom seeding apiece (docs/benchmarks-history.md, "The collector's walk cut").
_JITTER_SOURCE = random.Random()


@dataclass
class WriteBackoff:
    """Per-target backoff of writes that keep failing (the scale and the status together, the VPA on its own).

    Upstream's HPA retries a failed write at its next sync, every period, for as long as the API server
    fails: with thousands of targets and a struggling server, that is a write storm aimed at the moment it
    hurts most. This is client-go's per-item exponential limiter instead (``ItemExponentialFailureRateLimiter``),
    starting at one sync period — so a single failure is retried at the next sync, as upstream does — and
    doubling per consecutive failure up to a cap of five minutes, well under the usual stabilization
    windows, so a recovered server is written to again soon. Each delay is jittered down by up to 20 %,
    so targets that failed together do not come back together. Any successful round of writes resets it.

    Pure bookkeeping on a monotonic clock passed in; :class:`TargetWrites` decides what counts as a failure."""

    base: float  # the first delay: one sync period
    cap: float = WRITE_BACKOFF_CAP
    failures: int = 0  # consecutive failed rounds of writes
    delay: float = 0.0  # the delay chosen after the last failure (0 while writes succeed)
    next_attempt: float | None = None  # monotonic: writes wait until then
    last_error: str = ""
    _random: random.Random = field(default=_JITTER_SOURCE, repr=False)

    def failed(self, error: str, now: float) -> float:
        """Record a failed round of writes at ``now``; returns the delay until the next attempt."""
        self.failures += 1
        ceiling = min(max(self.cap, self.base), self.base * 2.0 ** min(self.failures - 1, 40))
        self.delay = ceiling * (1 - JITTER * self._random.random())
        self.next_attempt = now + self.delay
        self.last_error = error
        return self.delay

    def succeeded(self) -> bool:
        """Writes work again: forget the failures. True when there were some (a recovery)."""
        recovered = self.failures > 0
        self.failures, self.delay, self.next_attempt, self.last_error = 0, 0.0, None, ""
        return recovered

    def holding(self, now: float) -> bool:
        """Whether a sync at ``now`` must not write yet. Syncs come a period apart on a grid, so a sync
        less than half a period before the next attempt goes ahead (the first retry is the next sync)."""
        return self.next_attempt is not None and now < self.next_attempt - self.base / 2

    def remaining(self, now: float) -> float:
        return max(0.0, (self.next_attempt or now) - now)
