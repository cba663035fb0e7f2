"""One target's reconciler: on every tick, observe, decide, write, report.

What one sync does is :mod:`autoscaler.core.sync` (the same step ``simulate`` and ``backtest`` run); this
module feeds it and carries it out. It reads only through a :class:`~autoscaler.service.view.ClusterView`
(the scale, the pods from the cache, the metrics from Prometheus, the VPA) and writes only through
:class:`~autoscaler.service.writes.TargetWrites` (the scale, the VPA, Events, the status: fenced on
leadership, backing off while they fail); it keeps the state the next sync starts from. A failure of
any step becomes a condition and an Event, never an exception that escapes: one target's trouble
never touches another.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from autoscaler.core import conditions as c
from autoscaler.core.conditions import Condition
from autoscaler.core.decision import Decision, TargetState
from autoscaler.core.hvpa.decision import HvpaState
from autoscaler.core.metrics import MetricOutcome
from autoscaler.core.observation import MetricFailure, MetricReading, Observation, PodInfo, ScaleInfo, SelectorProblem
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import TargetSpec
from autoscaler.core.status import condition_json
from autoscaler.core.sync import (
    ALL_WRITTEN,
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
from autoscaler.kube.labels import LabelSelector, SelectorError, parse_label_selector
from autoscaler.kube.records import PodRecord
from autoscaler.kube.scale import Scale, ScaleError
from autoscaler.prometheus.reader import TargetQuery
from autoscaler.service.hvpa import hvpa_status, restore_hvpa_state, vpa_observation
from autoscaler.service.metrics_sink import MetricsSink
from autoscaler.service.recorder import SyncRecorder
from autoscaler.service.schedule import ConcurrencySlot, Schedule
from autoscaler.service.status import restore_state, seconds_time, status_document
from autoscaler.service.status_digest import StatusDigest
from autoscaler.service.targets import Target
from autoscaler.service.view import NOTHING_SELECTED, ClusterView
from autoscaler.service.writes import ClusterWriter, LeadershipLost, TargetLeft, TargetWrites

log = structlog.get_logger("autoscaler.reconciler")
NO_HVPA = HvpaState()
_stdlib_log = logging.getLogger("autoscaler.reconciler")  # the level structlog's filter_by_level reads


@dataclass(frozen=True)
class SyncContext:
    """What every reconciler shares besides the cluster: the settings it decides with, when it syncs,
    how many syncs work at once, where it reports, and its clock."""

    settings: ControllerSettings
    period: float
    dry_run: bool
    schedule: Schedule
    semaphore: asyncio.Semaphore
    metrics: MetricsSink
    clock: Callable[[], float]  # decisions' "now": Unix time that never steps (service/clock.py)
    recorder: SyncRecorder | None = None  # autoscaler run --record FILE
    shard: str | None = None  # the shard this instance serves (status.shard names it), None: unsharded


@dataclass(frozen=True)
class Handoff:
    """What a reconciler leaves the one that replaces it (the target's spec changed): this term's state
    and the status it last wrote."""

    state: TargetState | None
    last_status: Mapping[str, Any] | None


class TargetReconciler:
    def __init__(
        self,
        target: Target,
        view: ClusterView,
        writer: ClusterWriter,
        context: SyncContext,
        *,
        state: TargetState | None = None,
        last_status: Mapping[str, Any] | None = None,
    ) -> None:
        assert target.spec is not None
        self._target = target
        self._spec: TargetSpec = target.spec
        self._view = view
        self._context = context
        self._writes = TargetWrites(writer, context.period, context.metrics)
        self._state = state
        self._hvpa_state: HvpaState | None = None
        self._last_status_packed: bytes | None = None  # see last_status
        self._written: StatusDigest | None = None  # the digest of last_status
        self._store(last_status if last_status is not None else target.status)
        self._selector: LabelSelector | None = None
        self._selector_text: str | None = None  # the scale's selector that _selector was parsed from
        self._syncs = 0
        self._pods_seen: list[PodRecord] | None = None  # see _pod_lists
        self._pod_lists_seen: tuple[list[str], list[PodInfo]] = ([], [])

    @property
    def syncs(self) -> int:
        """How many syncs decided (held and failed ones not counted)."""
        return self._syncs

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

    def retarget(self, target: Target) -> None:
        """The target changed but not its spec (its status or metadata): sync the new one from now on."""
        self._target = target

    def handoff(self) -> Handoff:
        return Handoff(self._state, self.last_status)

    def _store(self, document: Mapping[str, Any] | None, digest: StatusDigest | None = None) -> None:
        """``document`` is the last status now; ``digest`` its digest, when the caller has it."""
        self._last_status_packed = (
            None if document is None else zlib.compress(json.dumps(document, separators=(",", ":")).encode())
        )
        self._written = digest if digest is not None else StatusDigest.of_status(document)

    async def run(self, first_delay: float | None = None) -> None:
        """Sync on the namespace's ticks (see :class:`~autoscaler.service.schedule.Schedule`) until
        cancelled; the first sync after ``first_delay`` seconds if given (a new target), else on the next
        tick."""
        schedule, metrics = self._context.schedule, self._context.metrics
        namespace = self._target.namespace
        now = time.monotonic()
        planned = now + first_delay if first_delay is not None else schedule.next_tick(namespace, now)
        while True:
            await asyncio.sleep(max(0.0, planned - time.monotonic()))
            metrics.observe_schedule_lag(max(0.0, time.monotonic() - planned))
            async with ConcurrencySlot(self._context.semaphore) as slot:
                try:
                    await self.sync_once(slot=slot)
                except LeadershipLost:
                    log.info("leadership lost: reconciler stops", namespace=namespace, name=self._target.name)
                    return
            planned = schedule.next_tick(namespace, planned + schedule.min_gap)
            if planned < time.monotonic():  # overloaded: skip missed ticks instead of bursting
                planned = time.monotonic()

    async def sync_once(self, now: float | None = None, *, slot: ConcurrencySlot | None = None) -> Decision | None:
        """One sync. ``slot``: the concurrency slot this sync holds, given back while it waits for its
        metrics (see :class:`~autoscaler.service.schedule.ConcurrencySlot`)."""
        started = time.monotonic()
        now = self._context.clock() if now is None else now
        target, spec, metrics = self._target, self._spec, self._context.metrics
        structlog.contextvars.bind_contextvars(namespace=target.namespace, name=target.name)
        try:
            stale = self._view.cache_problem(target)
            if stale is not None:
                # Deciding on state the cluster may have left behind could scale the wrong way: hold.
                # (The cache logs its incident once; a line per target and period would be a flood.)
                log.debug("sync held: cluster state is stale", reason=stale)
                metrics.observe_reconcile(
                    target.namespace, target.name, time.monotonic() - started, "error", "StaleCache"
                )
                return None
            clock = time.monotonic()
            if self._writes.holding(clock):
                log.debug(
                    "sync held: writes are backing off",
                    failures=self._writes.horizontal.failures,
                    next_attempt_in=round(self._writes.horizontal.remaining(clock), 1),
                )
                return None
            self._writes.begin()
            state = self._state if self._state is not None else restore_state(self.last_status, now)
            try:
                scale = await self._view.read_scale(target)
            except ScaleError as exc:
                await self._scale_unreadable(state, str(exc), now)
                self._writes.end(target)
                metrics.observe_reconcile(
                    target.namespace, target.name, time.monotonic() - started, "error", "FailedGetScale"
                )
                return None
            observation = await self._observe(scale, read_metrics=reads_metrics(spec), slot=slot)
            if spec.hvpa is None:
                inputs, hvpa_state = SyncInputs(observation), NO_HVPA
            else:
                inputs = SyncInputs(
                    observation,
                    vpa_observation(self._view.find_vpa(target)),
                    template=self._view.template_of(target),
                    clock=now,
                )
                hvpa_state = self._hvpa_state if self._hvpa_state is not None else self._restored_hvpa_state()
            plan = plan_sync(spec, inputs, SyncState(state, hvpa_state), self._context.settings, now)
            results = await self._write(plan, scale)
            outcome = settle(plan, results)
            if self._context.recorder is not None:
                self._context.recorder.record(target, plan, observation, results, outcome)
            decision = outcome.decision
            extra: dict[str, Any] = {}
            if outcome.hvpa is not None:
                self._hvpa_state = outcome.state.hvpa
                extra["hvpa"] = hvpa_status(outcome.hvpa, self._hvpa_state)
            await self._report(decision, now, extra)
            self._writes.end(target)
            self._state = outcome.state.target
            self._syncs += 1
            metrics.observe_reconcile(
                target.namespace,
                target.name,
                time.monotonic() - started,
                "dry_run"
                if decision.scale and decision.applied is None
                else "scaled"
                if decision.applied
                else "error"
                if decision.error
                else "unchanged",
                _error_reason(decision),
            )
            return decision
        except (asyncio.CancelledError, LeadershipLost):
            raise
        except TargetLeft as exc:  # moved to another shard (or deleted) mid-sync: nothing more is written
            log.info("sync stopped before writing: the target is not this instance's now", reason=str(exc))
            return None
        except Exception:  # a bug must not kill the reconciler: report it and try again next tick
            log.exception("sync failed unexpectedly")
            metrics.observe_reconcile(
                target.namespace, target.name, time.monotonic() - started, "error", "InternalError"
            )
            return None
        finally:
            structlog.contextvars.unbind_contextvars("namespace", "name")

    def _restored_hvpa_state(self) -> HvpaState:
        """HVPA's state at this reconciler's first sync: what the last status kept."""
        saved = (self.last_status or {}).get("hvpa") or {}
        return restore_hvpa_state(saved.get("state"))

    async def _observe(self, scale: Scale, *, read_metrics: bool, slot: ConcurrencySlot | None) -> Observation:
        target, spec = self._target, self._spec
        problem: SelectorProblem | None = None
        selection = NOTHING_SELECTED
        if scale.selector:
            if scale.selector != self._selector_text or self._selector is None:
                # Parsed once per selector, and the same object kept: the view's AmbiguousSelector memo
                # compares the selectors of a namespace's targets on every sync.
                try:
                    self._selector = parse_label_selector(scale.selector)
                    self._selector_text = scale.selector
                except SelectorError as exc:
                    self._selector, self._selector_text = None, None
                    problem = SelectorProblem(
                        "InvalidSelector",
                        f"couldn't convert selector into a corresponding internal selector object: {exc}",
                    )
            selection = self._view.select(target, self._selector)
            if selection.others:
                problem = SelectorProblem(
                    "AmbiguousSelector",
                    f"pods by selector {scale.selector} are controlled by more than one HPA "
                    f"(e.g. [{' '.join(selection.others)}])",
                )
        else:  # the scale has no selector: this target selects nothing
            self._selector, self._selector_text = None, None
            selection = self._view.select(target, None)
        readings: Sequence[MetricReading]
        if (
            read_metrics
            and problem is None
            and scale.selector
            and (scale.spec_replicas > 0 or spec.has_object_or_external_metric)
        ):
            query = TargetQuery(
                namespace=target.namespace,
                name=target.name,
                scale_target=spec.scale_target_ref,
                selector=scale.selector,
                pod_names=self._pod_lists(selection.pods)[0],
                metrics=spec.metrics,
            )
            async with ConcurrencySlot.given_back(slot):
                readings = await self._view.read_metrics(query)
        else:
            readings = [MetricFailure("not read") for _ in spec.metrics]
        return Observation(
            ScaleInfo(scale.spec_replicas, scale.status_replicas, scale.selector),
            self._pod_lists(selection.pods)[1],
            readings,
            problem,
        )

    def _pod_lists(self, pods: list[PodRecord]) -> tuple[list[str], list[PodInfo]]:
        """The pods' names and infos, made again only when the selection is a new list (the pod index
        hands out the same list until the namespace's pods change)."""
        if pods is not self._pods_seen:
            self._pods_seen, self._pod_lists_seen = pods, ([p.name for p in pods], [p.info for p in pods])
        return self._pod_lists_seen

    async def _write(self, plan: SyncPlan, scale: Scale) -> WriteResults:
        """Make the plan's writes: the scale, then (only if that went through) the VPA."""
        if self._context.dry_run:
            return NOTHING_WRITTEN
        replicas = plan.scale_to
        if replicas is not None:
            error = await self._writes.scale(self._target, replicas, plan.decision.current_replicas, scale)
            if error is not None:
                return WriteResults(scale=False, scale_error=error, vpa=False)
        patch = plan.vpa_patch
        if patch is None:
            return ALL_WRITTEN
        name = str(((self._view.find_vpa(self._target) or {}).get("metadata") or {}).get("name") or "")
        return WriteResults(vpa=bool(name) and await self._writes.vpa(self._target, name, patch))

    async def _report(self, decision: Decision, now: float, extra: dict[str, Any]) -> None:
        target = self._target
        for event in decision.events:
            await self._writes.event(target, event.type, event.reason, event.message)
        if self._context.dry_run:
            extra["dryRun"] = True
        if self._context.shard is not None:
            extra["shard"] = self._context.shard
        digest = StatusDigest.of_decision(decision, generation=target.generation, now=now, extra=extra)
        changed = digest.needs_write_after(self._written)
        if changed:
            document = status_document(decision, generation=target.generation, now=now, extra=extra)
            if await self._writes.status(target, document, self.last_status):
                self._store(document, digest)
        limited = decision.limited_by
        # info, but debug when nothing changed and nothing is limited (docs/operations.md): a steady
        # service would otherwise log every target every period.
        quiet = not (
            changed
            or decision.scale
            or decision.events
            or limited
            or decision.error
            or decision.replicas != decision.current_replicas
        )
        if not quiet or _stdlib_log.isEnabledFor(logging.DEBUG):  # a dropped debug line still costs structlog's chain
            (log.debug if quiet else log.info)(
                "decision",
                current_replicas=decision.current_replicas,
                proposal=decision.desired_replicas,
                replicas=decision.replicas,
                scaled=decision.scale,
                applied=decision.applied,
                reason=decision.rescale_reason or None,
                limited_by=limited,
                error=decision.error,
                dry_run=self._context.dry_run or None,
            )
        metrics = self._context.metrics
        metrics.set_target(
            target.namespace,
            target.name,
            current=decision.current_replicas,
            proposal=decision.desired_replicas,
            final=decision.replicas,
            limited_reason=limited,
            metrics=[(o.spec.name, _current_value(o), _target_value(o)) for o in decision.metrics],
        )
        metrics.set_target_conditions(target.namespace, target.name, _condition_states(decision.conditions))

    async def _scale_unreadable(self, state: TargetState, error: str, now: float) -> None:
        """AbleToScale False / FailedGetScale: the status keeps everything else as it was."""
        unreadable, event = scale_unreadable(SyncState(state), error, now)
        self._state = unreadable.target
        log.warning("scale unreadable", error=error)
        if not self._writes.may_write():
            return
        await self._writes.event(self._target, event.type, event.reason, event.message)
        document = dict(self.last_status or {})
        document.pop("shard", None)  # the shard that wrote the last status may not be this one
        if self._context.shard is not None:
            document["shard"] = self._context.shard
        document["conditions"] = [condition_json(x, seconds_time) for x in self._state.conditions]
        if self._target.generation is not None:
            document["observedGeneration"] = self._target.generation
        digest = StatusDigest.of_status(document)
        if (
            digest is not None
            and digest.needs_write_after(self._written)
            and await self._writes.status(self._target, document, self.last_status)
        ):
            self._store(document, digest)


def _condition_states(conditions: Sequence[Condition]) -> dict[str, bool | None]:
    """autoscaler_target_condition's values: True and False, None (no series) for Unknown."""
    return {x.type: (x.status == c.TRUE) if x.status in (c.TRUE, c.FALSE) else None for x in conditions}


def _error_reason(decision: Decision) -> str | None:
    if decision.applied is False:
        return "FailedUpdateScale"
    if decision.error is None:
        return None
    for cond in decision.conditions:
        if cond.type == c.SCALING_ACTIVE and cond.status == c.FALSE:
            return cond.reason
    return "InvalidMetrics"


def _current_value(outcome: MetricOutcome) -> float | None:
    current = outcome.current
    if current is None:
        return None
    if current.average_utilization is not None:
        return float(current.average_utilization)
    milli = current.average_value if current.average_value is not None else current.value
    return milli / 1000 if milli is not None else None


def _target_value(outcome: MetricOutcome) -> float | None:
    target = outcome.spec.target
    if target.average_utilization is not None:
        return float(target.average_utilization)
    quantity = target.average_value or target.value
    return quantity.as_float() if quantity is not None else None
