"""One target's reconciler: on every tick, observe, decide, act, report.

The decision itself is the pure engine's (:func:`autoscaler.core.decision.decide`); this module only
gathers what the engine observes (the scale, the pods from the cache, the metrics from Prometheus),
applies what it decides (the scale subresource, Events, the status) and keeps the state the next sync
starts from. A failure of any step becomes a condition and an Event, never an exception that escapes:
one target's trouble never touches another. Writes that keep failing back off per target (see
:mod:`autoscaler.service.write_backoff`); every write is fenced on leadership right before it is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import math
import random
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from autoscaler.core import conditions as c
from autoscaler.core.conditions import Condition, set_condition
from autoscaler.core.decision import Decision, TargetState
from autoscaler.core.hvpa.decision import HvpaState
from autoscaler.core.observation import (
    ContainerInfo,
    MetricFailure,
    Observation,
    PodInfo,
    ScaleInfo,
    SelectorProblem,
)
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import TargetSpec
from autoscaler.core.status import condition_json
from autoscaler.core.sync import (
    NOTHING_WRITTEN,
    SyncInputs,
    SyncPlan,
    SyncState,
    WriteResults,
    plan_sync,
    reads_metrics,
    scale_unreadable,
    settle,
)
from autoscaler.kube.api import KubeError
from autoscaler.kube.events import InvolvedObject
from autoscaler.kube.labels import LabelSelector, SelectorError, parse_label_selector
from autoscaler.kube.records import PodRecord
from autoscaler.kube.scale import Scale, ScaleError, StaleScale
from autoscaler.prometheus.reader import TargetQuery
from autoscaler.service.clock import PROCESS_CLOCK
from autoscaler.service.hvpa import hvpa_status, restore_hvpa_state, vpa_observation
from autoscaler.service.status import restore_conditions, restore_state, seconds_time, status_document
from autoscaler.service.status_digest import StatusDigest
from autoscaler.service.targets import Target, error_text
from autoscaler.service.write_backoff import WriteBackoff

log = structlog.get_logger("autoscaler.reconciler")
_stdlib_log = logging.getLogger("autoscaler.reconciler")  # the level structlog's filter_by_level reads


class LeadershipLost(Exception):
    """This instance may no longer write: stop before touching anything."""


class MetricsSink(Protocol):
    """What a reconciler reports to the service's own /metrics."""

    def observe_reconcile(self, namespace: str, name: str, seconds: float, result: str,
                          error_reason: str | None = None) -> None: ...
    def observe_schedule_lag(self, seconds: float) -> None: ...
    def set_target(self, namespace: str, name: str, *, current: int | None, proposal: int | None,
                   final: int | None, limited_reason: str | None = None,
                   metrics: Sequence[tuple[str, float | None, float | None]] = ()) -> None: ...
    def set_target_conditions(self, namespace: str, name: str, conditions: Mapping[str, bool | None]) -> None: ...
    def count_scale_event(self, namespace: str, name: str, direction: str) -> None: ...
    def set_write_backoff(self, namespace: str, name: str, path: str, seconds: float) -> None: ...
    def count_write_failure(self, kind: str) -> None: ...


class NullMetrics:
    def observe_reconcile(self, namespace: str, name: str, seconds: float, result: str,
                          error_reason: str | None = None) -> None:
        pass

    def observe_schedule_lag(self, seconds: float) -> None:
        pass

    def set_target(self, namespace: str, name: str, *, current: int | None, proposal: int | None,
                   final: int | None, limited_reason: str | None = None,
                   metrics: Sequence[tuple[str, float | None, float | None]] = ()) -> None:
        pass

    def set_target_conditions(self, namespace: str, name: str, conditions: Mapping[str, bool | None]) -> None:
        pass

    def count_scale_event(self, namespace: str, name: str, direction: str) -> None:
        pass

    def set_write_backoff(self, namespace: str, name: str, path: str, seconds: float) -> None:
        pass

    def count_write_failure(self, kind: str) -> None:
        pass


def _condition_states(conditions: Sequence[Condition]) -> dict[str, bool | None]:
    """autoscaler_target_condition's values: True and False, None (no series) for Unknown."""
    return {x.type: (x.status == c.TRUE) if x.status in (c.TRUE, c.FALSE) else None for x in conditions}


def _fraction(text: str) -> float:
    """A stable pseudo-random number in [0, 1) for ``text``."""
    return zlib.crc32(text.encode()) / 2**32


@functools.lru_cache(maxsize=4096)
def _phase(namespace: str) -> float:
    """A namespace's place in the period (asked at every tick of every target)."""
    return _fraction(namespace)


class Schedule:
    """When targets sync: once a period, every target of a namespace on the same tick.

    A batched Prometheus query covers whole namespaces (``namespace=~"a|b"``), so a batch is cheapest
    when it holds every target of the namespaces it reads. With each target on its own random phase, a
    0.2 s batch window held ~13 of 1,000 targets but read ~12 namespaces' pods: ~17× the series the
    targets needed, which made decoding Prometheus' answers most of the service's CPU. So the phase
    belongs to the namespace: namespaces spread over the period (a hash of the name) and each tick is
    jittered by up to ± ``jitter`` of the period (a hash of the namespace and the tick number), so
    namespaces still do not align, but a namespace's targets sync together and share one query per
    template. Ticks are a fixed grid, not a random walk, so the targets of a namespace stay together.
    """

    def __init__(self, period: float, jitter: float, origin: float | None = None) -> None:
        self.period = period
        self.jitter = jitter
        self.origin = time.monotonic() if origin is None else origin
        # A target that syncs off its grid (a new target, or one late behind an overload) waits at least
        # this long before the next grid tick, so it never syncs twice in quick succession.
        self.min_gap = period * max(0.1, 1 - 2 * jitter) / 2

    def tick(self, namespace: str, k: int) -> float:
        shift = self.jitter * (2 * _fraction(f"{namespace}#{k}") - 1) if self.jitter else 0.0
        return self.origin + (k + _phase(namespace) + shift) * self.period

    def next_tick(self, namespace: str, after: float) -> float:
        """The first tick of ``namespace`` later than ``after``."""
        k = math.floor((after - self.origin) / self.period - _phase(namespace) - self.jitter) - 1
        while (when := self.tick(namespace, k)) <= after:
            k += 1
        return when


class ConcurrencySlot:
    """One sync's place under the service's concurrency limit (``sync.concurrency``).

    The limit bounds the syncs doing work at once. A sync waiting for its batched metrics (up to
    ``sync.batchWindowSeconds``, then the query) does none, so it gives its slot back meanwhile:
    otherwise a thousand targets' waits alone would fill the limit and push syncs past their ticks.
    Cancellation-safe: a sync cancelled while waiting to get its slot back holds none and releases none.
    """

    def __init__(self, semaphore: asyncio.Semaphore) -> None:
        self._semaphore = semaphore
        self._held = False

    async def __aenter__(self) -> ConcurrencySlot:
        await self._semaphore.acquire()
        self._held = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._held:
            self._held = False
            self._semaphore.release()

    @staticmethod
    @contextlib.asynccontextmanager
    async def given_back(slot: ConcurrencySlot | None) -> AsyncIterator[None]:
        """Without the slot for the body (a no-op for None, or a slot not held)."""
        if slot is None or not slot._held:
            yield
            return
        slot._held = False
        slot._semaphore.release()
        try:
            yield
        finally:
            await slot._semaphore.acquire()
            slot._held = True


class ScaleSource(Protocol):
    async def read(self, target: Target) -> Scale: ...
    async def write(self, target: Target, replicas: int, decided_on: Scale) -> None: ...


@dataclass
class Services:
    """What reconcilers share (owned by the manager)."""

    settings: ControllerSettings
    period: float
    jitter: float
    dry_run: bool
    semaphore: asyncio.Semaphore
    scales: ScaleSource
    select_pods: Callable[[str, LabelSelector], list[PodRecord]]
    others_selecting: Callable[[Target, list[PodRecord]], list[str]]
    selector_changed: Callable[[Target], None]  # a reconciler's selector was (re)parsed or dropped
    involved: Callable[[Target], InvolvedObject]
    read_metrics: Callable[[TargetQuery], Awaitable[list[Any]]]
    record_event: Callable[[InvolvedObject, str, str, str], Awaitable[None]]
    # Raises KubeError when the write fails (the reconciler backs off); a deleted target is no failure.
    write_status: Callable[[Target, Mapping[str, Any], Mapping[str, Any] | None], Awaitable[None]]
    may_write: Callable[[], bool]          # leadership fencing: False once leadership may be lost
    metrics: MetricsSink
    find_vpa: Callable[[Target], Mapping[str, Any] | None] = lambda _target: None
    template_of: Callable[[Target], Sequence[ContainerInfo]] = lambda _target: ()
    write_vpa: Callable[[str, str, Mapping[str, Any]], Awaitable[None]] | None = None
    cache_problem: Callable[[Target], str | None] = lambda _target: None  # why cached state can't be trusted
    schedule: Schedule | None = None  # None: Schedule(period, jitter), made on first use
    clock: Callable[[], float] = PROCESS_CLOCK.now  # decisions' "now": Unix time that never steps

    def __post_init__(self) -> None:
        if self.schedule is None:
            self.schedule = Schedule(self.period, self.jitter)


class TargetReconciler:
    def __init__(self, target: Target, services: Services, *, state: TargetState | None = None,
                 last_status: Mapping[str, Any] | None = None) -> None:
        assert target.spec is not None
        self.target = target
        self.spec: TargetSpec = target.spec
        self.services = services
        self.state = state
        self._last_status_packed: bytes | None = None  # see last_status
        self._written: StatusDigest | None = None        # the digest of last_status
        self._store(last_status if last_status is not None else target.status)
        self.hvpa_state: HvpaState | None = None
        self.selector: LabelSelector | None = None
        self._selector_text: str | None = None  # the scale's selector that self.selector was parsed from
        self.syncs = 0
        self._pods_seen: list[PodRecord] | None = None  # see _pod_lists
        self._pod_lists_seen: tuple[list[str], list[PodInfo]] = ([], [])
        # Writes that keep failing back off (see write_backoff): the scale and the status together (a
        # sync waits), the VPA on its own (HVPA's vertical path fails in isolation, horizontal goes on).
        self.writes = WriteBackoff(services.period)
        self.vpa_writes = WriteBackoff(services.period)
        self._sync_failed = False  # a write of the current sync failed (one failure per sync counts)

    @property
    def last_status(self) -> Mapping[str, Any] | None:
        """The status last written (or found on the object): a fresh copy on every access.

        Kept as compressed compact JSON, a fraction of the parsed document's memory (~0.7 KiB instead of
        ~1.6 KiB of text, and far less than the parsed document): a steady sync never reads it (it
        compares digests, see :mod:`~autoscaler.service.status_digest`), only writes, restarts and
        /api/targets do."""
        if self._last_status_packed is None:
            return None
        status: Mapping[str, Any] = json.loads(zlib.decompress(self._last_status_packed))
        return status

    def _store(self, document: Mapping[str, Any] | None, digest: StatusDigest | None = None) -> None:
        """``document`` is the last status now; ``digest`` its digest, when the caller has it."""
        self._last_status_packed = (None if document is None
                                    else zlib.compress(json.dumps(document, separators=(",", ":")).encode()))
        self._written = digest if digest is not None else StatusDigest.of_status(document)

    @property
    def involved(self) -> InvolvedObject:
        return self.services.involved(self.target)

    async def run(self, first_delay: float | None = None) -> None:
        """Sync on the namespace's ticks (see :class:`Schedule`) until cancelled; the first sync after
        ``first_delay`` seconds if given (a new target), else on the next tick."""
        schedule = self.services.schedule
        assert schedule is not None
        namespace = self.target.namespace
        now = time.monotonic()
        planned = now + first_delay if first_delay is not None else schedule.next_tick(namespace, now)
        while True:
            await asyncio.sleep(max(0.0, planned - time.monotonic()))
            self.services.metrics.observe_schedule_lag(max(0.0, time.monotonic() - planned))
            async with ConcurrencySlot(self.services.semaphore) as slot:
                try:
                    await self.sync_once(slot=slot)
                except LeadershipLost:
                    log.info("leadership lost: reconciler stops", namespace=self.target.namespace,
                             name=self.target.name)
                    return
            planned = schedule.next_tick(namespace, planned + schedule.min_gap)
            if planned < time.monotonic():  # overloaded: skip missed ticks instead of bursting
                planned = time.monotonic()

    async def sync_once(self, now: float | None = None, *, slot: ConcurrencySlot | None = None) -> Decision | None:
        """One sync. ``slot``: the concurrency slot this sync holds, given back while it waits for its
        metrics (see :class:`ConcurrencySlot`)."""
        started = time.monotonic()
        now = self.services.clock() if now is None else now
        target, spec = self.target, self.spec
        structlog.contextvars.bind_contextvars(namespace=target.namespace, name=target.name)
        try:
            stale = self.services.cache_problem(target)
            if stale is not None:
                # Deciding on state the cluster may have left behind could scale the wrong way: hold.
                # (The cache logs its incident once; a line per target and period would be a flood.)
                log.debug("sync held: cluster state is stale", reason=stale)
                self.services.metrics.observe_reconcile(target.namespace, target.name, time.monotonic() - started,
                                                        "error", "StaleCache")
                return None
            clock = time.monotonic()
            if self.writes.holding(clock):
                log.debug("sync held: writes are backing off", failures=self.writes.failures,
                          next_attempt_in=round(self.writes.remaining(clock), 1))
                return None
            self._sync_failed = False
            state = self.state if self.state is not None else restore_state(self.last_status, now)
            try:
                scale = await self.services.scales.read(target)
            except ScaleError as exc:
                await self._scale_unreadable(state, str(exc), now)
                self._settle_writes()
                self.services.metrics.observe_reconcile(target.namespace, target.name, time.monotonic() - started,
                                                        "error", "FailedGetScale")
                return None
            observation = await self._observe(scale, read_metrics=reads_metrics(spec), slot=slot)
            inputs = SyncInputs(observation)
            hvpa_state = HvpaState()
            if spec.hvpa is not None:
                if self.hvpa_state is not None:
                    hvpa_state = self.hvpa_state
                else:
                    saved = (self.last_status or {}).get("hvpa") or {}
                    hvpa_state = restore_hvpa_state(saved.get("state"))
                inputs = SyncInputs(observation, vpa_observation(self.services.find_vpa(target)),
                                    template=self.services.template_of(target), clock=now)
            plan = plan_sync(spec, inputs, SyncState(state, hvpa_state), self.services.settings, now)
            outcome = settle(plan, await self._write(plan, scale))
            decision = outcome.decision
            extra: dict[str, Any] = {}
            if outcome.hvpa is not None:
                self.hvpa_state = outcome.state.hvpa
                extra["hvpa"] = hvpa_status(outcome.hvpa, self.hvpa_state)
            await self._report(decision, now, extra)
            self._settle_writes()
            self.state = outcome.state.target
            self.syncs += 1
            result = ("dry_run" if decision.scale and decision.applied is None else
                      "scaled" if decision.applied else "error" if decision.error else "unchanged")
            self.services.metrics.observe_reconcile(target.namespace, target.name, time.monotonic() - started,
                                                    result, _error_reason(decision))
            return decision
        except (asyncio.CancelledError, LeadershipLost):
            raise
        except Exception:  # a bug must not kill the reconciler: report it and try again next tick
            log.exception("sync failed unexpectedly")
            self.services.metrics.observe_reconcile(target.namespace, target.name, time.monotonic() - started,
                                                    "error", "InternalError")
            return None
        finally:
            structlog.contextvars.unbind_contextvars("namespace", "name")

    async def _observe(self, scale: Scale, *, read_metrics: bool = True,
                       slot: ConcurrencySlot | None = None) -> Observation:
        target, spec = self.target, self.spec
        problem: SelectorProblem | None = None
        pods: list[PodRecord] = []
        if scale.selector:
            if scale.selector != self._selector_text or self.selector is None:
                # Parsed once per selector, and the same object kept: the manager's AmbiguousSelector
                # memo compares the selectors of a namespace's targets on every sync.
                try:
                    self.selector = parse_label_selector(scale.selector)
                    self._selector_text = scale.selector
                except SelectorError as exc:
                    self.selector, self._selector_text = None, None
                    problem = SelectorProblem("InvalidSelector", "couldn't convert selector into a "
                                                                 f"corresponding internal selector object: {exc}")
                self.services.selector_changed(target)
            if self.selector is not None:
                pods = self.services.select_pods(target.namespace, self.selector)
                others = self.services.others_selecting(target, pods)
                if others:
                    problem = SelectorProblem(
                        "AmbiguousSelector",
                        f"pods by selector {scale.selector} are controlled by more than one HPA "
                        f"(e.g. [{' '.join(others)}])")
        elif self.selector is not None:  # the scale no longer has a selector: this target selects nothing
            self.selector, self._selector_text = None, None
            self.services.selector_changed(target)
        readings: list[Any]
        if (read_metrics and problem is None and scale.selector
                and (scale.spec_replicas > 0 or spec.has_object_or_external_metric)):
            query = TargetQuery(namespace=target.namespace, name=target.name, scale_target=spec.scale_target_ref,
                                selector=scale.selector, pod_names=self._pod_lists(pods)[0], metrics=spec.metrics)
            async with ConcurrencySlot.given_back(slot):
                readings = await self.services.read_metrics(query)
        else:
            readings = [MetricFailure("not read") for _ in spec.metrics]
        return Observation(ScaleInfo(scale.spec_replicas, scale.status_replicas, scale.selector),
                           self._pod_lists(pods)[1], readings, problem)

    def _pod_lists(self, pods: list[PodRecord]) -> tuple[list[str], list[PodInfo]]:
        """The pods' names and infos, made again only when the selection is a new list (the pod index
        hands out the same list until the namespace's pods change)."""
        if pods is not self._pods_seen:
            self._pods_seen, self._pod_lists_seen = pods, ([p.name for p in pods], [p.info for p in pods])
        return self._pod_lists_seen

    async def _write(self, plan: SyncPlan, scale: Scale) -> WriteResults:
        """Make the plan's writes: the scale, then (only if that went through) the VPA."""
        if self.services.dry_run:
            return NOTHING_WRITTEN
        replicas = plan.scale_to
        if replicas is not None:
            self._fence()
            try:
                await self.services.scales.write(self.target, replicas, scale)
            except StaleScale as exc:  # another writer changed the replicas: decide again, no backoff (F8)
                return WriteResults(scale=False, scale_error=str(exc), vpa=False)
            except ScaleError as exc:
                return WriteResults(scale=False, scale_error=f"{exc}; {self._write_failed('scale', str(exc))}",
                                    vpa=False)
            current = plan.decision.current_replicas
            self.services.metrics.count_scale_event(self.target.namespace, self.target.name,
                                                    "up" if replicas > current else "down")
        patch = plan.vpa_patch
        return WriteResults(vpa=await self._write_vpa(patch) if patch is not None else True)

    async def _write_vpa(self, patch: Mapping[str, Any]) -> bool:
        """Pin the VPA as HVPA decided; False when it was not written (HVPA's state then stays)."""
        name = str(((self.services.find_vpa(self.target) or {}).get("metadata") or {}).get("name") or "")
        if not name or self.services.write_vpa is None:
            return False
        clock = time.monotonic()
        if self.vpa_writes.holding(clock):
            return False
        self._fence()
        try:
            await self.services.write_vpa(self.target.namespace, name, patch)
        except KubeError as exc:
            delay = self.vpa_writes.failed(str(exc), clock)
            self.services.metrics.count_write_failure("vpa")
            self.services.metrics.set_write_backoff(self.target.namespace, self.target.name, "vpa", delay)
            log.warning("could not pin the VPA", vpa=name, error=str(exc), failures=self.vpa_writes.failures,
                        retry_in=round(delay, 1))
            self._fence()
            await self.services.record_event(self.involved, "Warning", "FailedUpdateVPA",
                                             f"could not pin VPA {name}: {exc}; next attempt in {delay:.0f}s")
            return False
        if self.vpa_writes.succeeded():
            self.services.metrics.set_write_backoff(self.target.namespace, self.target.name, "vpa", 0.0)
            log.info("the VPA can be pinned again", vpa=name)
        return True

    def _fence(self) -> None:
        """Checked right before every write: an instance whose lease may have run out writes nothing."""
        if not self.services.may_write():
            raise LeadershipLost

    def _write_failed(self, kind: str, error: str) -> str:
        """Count a failed write (once per sync) and back off; returns when the next attempt comes, as
        the AbleToScale message says it."""
        self.services.metrics.count_write_failure(kind)
        if not self._sync_failed:
            self._sync_failed = True
            delay = self.writes.failed(error, time.monotonic())
            self.services.metrics.set_write_backoff(self.target.namespace, self.target.name, "horizontal", delay)
            log.warning("write failed: backing off", write=kind, error=error, failures=self.writes.failures,
                        retry_in=round(delay, 1))
        return (f"next attempt in {self.writes.delay:.0f}s "
                f"({self.writes.failures} failed write{'s' if self.writes.failures > 1 else ''} in a row)")

    def _settle_writes(self) -> None:
        """After a sync whose writes all went through: a backoff in progress ends (recovery)."""
        if not self._sync_failed and self.writes.succeeded():
            self.services.metrics.set_write_backoff(self.target.namespace, self.target.name, "horizontal", 0.0)
            log.info("writes succeed again: backoff over")

    async def _report(self, decision: Decision, now: float, extra: dict[str, Any] | None = None) -> None:
        target = self.target
        for event in decision.events:
            self._fence()
            await self.services.record_event(self.involved, event.type, event.reason, event.message)
        extra = dict(extra or {})
        if self.services.dry_run:
            extra["dryRun"] = True
        digest = StatusDigest.of_decision(decision, generation=target.generation, now=now, extra=extra)
        changed = digest.needs_write_after(self._written)
        if changed:
            document = status_document(decision, generation=target.generation, now=now, extra=extra)
            self._fence()
            try:
                await self.services.write_status(target, document, self.last_status)
                self._store(document, digest)
            except KubeError as exc:
                self._write_failed("status", str(exc))
        limited = decision.limited_by
        # info, but debug when nothing changed and nothing is limited (docs/operations.md): a steady
        # service would otherwise log every target every period.
        quiet = not (changed or decision.scale or decision.events or limited or decision.error
                     or decision.replicas != decision.current_replicas)
        if not quiet or _stdlib_log.isEnabledFor(logging.DEBUG):  # a dropped debug line still costs structlog's chain
            (log.debug if quiet else log.info)(
                "decision", current_replicas=decision.current_replicas, proposal=decision.desired_replicas,
                replicas=decision.replicas, scaled=decision.scale, applied=decision.applied,
                reason=decision.rescale_reason or None, limited_by=limited, error=decision.error,
                dry_run=self.services.dry_run or None)
        self.services.metrics.set_target(
            target.namespace, target.name, current=decision.current_replicas, proposal=decision.desired_replicas,
            final=decision.replicas, limited_reason=limited,
            metrics=[(o.spec.name, _current_value(o), _target_value(o)) for o in decision.metrics])
        self.services.metrics.set_target_conditions(
            target.namespace, target.name, _condition_states(decision.conditions))

    async def _scale_unreadable(self, state: TargetState, error: str, now: float) -> None:
        """AbleToScale False / FailedGetScale: the status keeps everything else as it was."""
        unreadable, event = scale_unreadable(SyncState(state), error, now)
        self.state = unreadable.target
        log.warning("scale unreadable", error=error)
        if not self.services.may_write():
            return
        await self.services.record_event(self.involved, event.type, event.reason, event.message)
        document = dict(self.last_status or {})
        document["conditions"] = [condition_json(x, seconds_time) for x in self.state.conditions]
        if self.target.generation is not None:
            document["observedGeneration"] = self.target.generation
        digest = StatusDigest.of_status(document)
        if digest is not None and digest.needs_write_after(self._written):
            self._fence()
            try:
                await self.services.write_status(self.target, document, self.last_status)
                self._store(document, digest)
            except KubeError as exc:
                self._write_failed("status", str(exc))


def first_delay(period: float, *, at_startup: bool) -> float | None:
    """Targets present at start-up sync on their namespace's first tick (namespaces spread over one
    period); a new target syncs within a second, then joins its namespace's ticks."""
    return None if at_startup else random.uniform(0, min(1.0, period))


def _error_reason(decision: Decision) -> str | None:
    if decision.applied is False:
        return "FailedUpdateScale"
    if decision.error is None:
        return None
    for cond in decision.conditions:
        if cond.type == c.SCALING_ACTIVE and cond.status == c.FALSE:
            return cond.reason
    return "InvalidMetrics"


def _current_value(outcome: Any) -> float | None:
    current = outcome.current
    if current is None:
        return None
    if current.average_utilization is not None:
        return float(current.average_utilization)
    milli = current.average_value if current.average_value is not None else current.value
    return milli / 1000 if milli is not None else None


def _target_value(outcome: Any) -> float | None:
    target = outcome.spec.target
    if target.average_utilization is not None:
        return float(target.average_utilization)
    quantity = target.average_value or target.value
    return quantity.as_float() if quantity is not None else None


def invalid_status(target: Target, now: float, previous: Mapping[str, Any] | None) -> dict[str, Any]:
    """The status of a target whose spec is invalid: ScalingActive False / InvalidSpec with every error."""
    conditions: tuple[Condition, ...] = restore_conditions((previous or {}).get("conditions"))
    conditions = set_condition(conditions, c.SCALING_ACTIVE, c.FALSE, "InvalidSpec",
                               f"the target's spec is invalid: {error_text(target.errors)}", now)
    document = dict(previous or {})
    document["conditions"] = [condition_json(x, seconds_time) for x in conditions]
    if target.generation is not None:
        document["observedGeneration"] = target.generation
    return document
