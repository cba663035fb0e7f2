"""One target's reconciler: on every tick, observe, decide, write, report.

What one sync does is :mod:`autoscaler.core.sync` (the same step ``simulate`` and ``backtest`` run); this
module feeds it and carries it out. It reads only through a :class:`~autoscaler.service.sync.view.ClusterView`
(the scale, the pods from the cache, the metrics from Prometheus, the VPA) and writes only through
:class:`~autoscaler.service.sync.writes.TargetWrites` (the scale, the VPA, Events, the status: fenced on
leadership, backing off while they fail); it keeps the state the next sync starts from. A failure of
any step becomes a condition and an Event, never an exception that escapes: one target's trouble
never touches another.

The read half of a sync (selector, pods, metrics → an observation) is :mod:`autoscaler.service.sync.observe`;
the report half (Events, the status written only when it changed, the log line, the gauges) is
:mod:`autoscaler.service.sync.report`. This module runs the ticks and carries one sync from one to the other.

A scale write is never left unrecorded: before it is sent the status records it (``pendingScale``, one
more status write per scale), and a reconciler stopped while a sync writes a scale (shutdown, a spec
change) lets that sync finish the write and the status that records it, for
:data:`~autoscaler.service.sync.writes.SCALE_WRITE_GRACE_SECONDS` at most
(:mod:`autoscaler.service.sync.scale_grace`); a crash in between leaves the next sync the recorded intent to
settle against the workload's count (:func:`~autoscaler.core.rescale.resolve_scale_intent`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from autoscaler.core.decision import Decision
from autoscaler.core.observation import Observation
from autoscaler.core.other_autoscalers import held_for, hold
from autoscaler.core.rescale import scale_intent
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import TargetSpec
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
from autoscaler.kube.scale import Scale, ScaleError
from autoscaler.service.backends.healths import BackendHealths
from autoscaler.service.cluster.targets import Target
from autoscaler.service.sync.observe import TargetObserver
from autoscaler.service.sync.report import SyncReporter, reconcile_result
from autoscaler.service.sync.scale_grace import finish_scale_write
from autoscaler.service.sync.schedule import ConcurrencySlot, Schedule, TickTimers
from autoscaler.service.sync.status.restore import restore
from autoscaler.service.sync.status.sections import HVPA, decision_sections, hvpa_status
from autoscaler.service.sync.view import ClusterView, vpa_observation
from autoscaler.service.sync.writes import ClusterWriter, LeadershipLost, TargetLeft, TargetWrites
from autoscaler.service.telemetry.metrics_sink import MetricsSink
from autoscaler.service.telemetry.recorder import SyncRecorder
from autoscaler.values.loose_json import as_mapping

log = structlog.get_logger("autoscaler.reconciler")


@dataclass(frozen=True)
class SyncReports:
    """Where every sync reports besides its target's status."""

    metrics: MetricsSink
    recorder: SyncRecorder | None = None  # autoscaler run --record FILE
    shard: str | None = None  # the shard this instance serves (status.shard names it), None: unsharded
    backend: BackendHealths | None = None  # each Prometheus' health and its budget of writes (backend_healths.py)


@dataclass(frozen=True)
class SyncContext:
    """What every reconciler shares besides the cluster: the settings it decides with, when it syncs,
    how many syncs work at once, where it reports, and its clock.

    The one owner of the sync period: ``period`` is the service's (``sync.periodSeconds``: the grid of
    ``schedule``, stated once there), :meth:`period_of` a target's, :meth:`first_delay` when a new
    reconciler's first sync comes."""

    settings: ControllerSettings
    dry_run: bool
    schedule: Schedule
    semaphore: asyncio.Semaphore
    clock: Callable[[], float]  # decisions' "now": Unix time that never steps (loop/clock.py)
    timers: TickTimers  # one loop timer per tick, its waits done through the pacer (service/sync/schedule.py)
    reports: SyncReports

    @property
    def period(self) -> float:
        """The service's sync period (a target's own is :meth:`period_of`'s answer)."""
        return self.schedule.period

    def period_of(self, spec: TargetSpec) -> float:
        """How often a target syncs: its spec's ``syncPeriodSeconds`` (KEDA's pollingInterval), else the
        service's period."""
        own = spec.sync_period_seconds
        return float(own) if own is not None else self.period

    def first_delay(self, *, at_startup: bool, served_before: bool) -> float | None:
        """When a new reconciler syncs first: None, on its namespace's next tick (a target present at start-up:
        namespaces spread over one period); a period from now for a target that arrives with a status (it was
        served before, maybe by another shard, which stops writing it about when this one starts:
        docs/sharding.md); else within a second, then on its namespace's ticks."""
        if at_startup:
            return None
        return self.period if served_before else random.uniform(0, min(1.0, self.period))


@dataclass(frozen=True)
class Handoff:
    """What a reconciler leaves the one that replaces it (the target's spec changed): this term's state
    and the status it last wrote."""

    state: SyncState | None
    last_status: Mapping[str, Any] | None


def held_plan(plan: SyncPlan, message: str) -> SyncPlan:
    """``plan`` held (another autoscaler scales the workload, or did and the cut-over is not agreed):
    see :func:`~autoscaler.core.other_autoscalers.held_for`."""
    decision = held_for(plan.decision, plan.state.target.conditions, message, plan.now)
    return SyncPlan(plan.spec, plan.now, plan.state, decision, plan.hvpa)


class TargetReconciler:
    def __init__(
        self,
        target: Target,
        view: ClusterView,
        writer: ClusterWriter,
        context: SyncContext,
        *,
        state: SyncState | None = None,
        last_status: Mapping[str, Any] | None = None,
    ) -> None:
        assert target.spec is not None
        self._target = target
        self._spec: TargetSpec = target.spec
        self._view = view
        self._context = context
        self.period = context.period_of(target.spec)  # how often this target syncs
        self._writes = TargetWrites(writer, self.period, context.reports.metrics)
        self._observer = TargetObserver(view)
        self._reporter = SyncReporter(
            self._writes,
            context.reports.metrics,
            dry_run=context.dry_run,
            shard=context.reports.shard,
            last_status=last_status if last_status is not None else target.status,
            backend=context.reports.backend,
            sync_period=self.period,
        )
        # What the next sync starts from; None: restored from the last status at the next sync (the first
        # one, or the one after a sync cut short).
        self._state = state
        self._syncs = 0

    @property
    def syncs(self) -> int:
        """How many syncs decided (held and failed ones not counted)."""
        return self._syncs

    @property
    def last_status(self) -> Mapping[str, Any] | None:
        """The status last written (or found on the object): a fresh copy on every access (see
        :mod:`~autoscaler.service.sync.report` for how it is kept)."""
        return self._reporter.last_status

    def retarget(self, target: Target) -> None:
        """The target changed but not its spec (its status or metadata): sync the new one from now on."""
        self._target = target

    def handoff(self) -> Handoff:
        return Handoff(self._state, self.last_status)

    async def run(self, first_delay: float | None = None) -> None:
        """Sync on the namespace's ticks (see :class:`~autoscaler.service.sync.schedule.Schedule`; of the target's
        own period if it has one) until cancelled; the first sync after ``first_delay`` seconds if given (a
        new target), else on the next tick."""
        schedule, metrics, period = self._context.schedule, self._context.reports.metrics, self.period
        namespace = self._target.namespace
        now = time.monotonic()
        planned = now + first_delay if first_delay is not None else schedule.next_tick(namespace, now, period)
        # Bound for the task's life (its context is its own): bound and unbound around every sync, each
        # sync made new context mappings that its sleep's timer then held for a period, for the cyclic
        # collector to walk (docs/benchmarks-history.md, "Start-up, `/metrics`, shorter pauses", "Fewer
        # objects per in-flight sync").
        structlog.contextvars.bind_contextvars(namespace=namespace, name=self._target.name)
        slot = ConcurrencySlot(self._context.semaphore)  # one sync at a time: the same slot for each
        while True:
            # A namespace's targets share this tick: the wait ends through the pacer, a few syncs per turn.
            await self._context.timers.at(planned)
            metrics.observe_schedule_lag(max(0.0, time.monotonic() - planned))
            async with slot:
                try:
                    await self._sync(time.monotonic(), self._context.clock(), slot)
                except LeadershipLost:
                    log.info("leadership lost: reconciler stops", namespace=namespace, name=self._target.name)
                    return
            planned = schedule.after_sync(namespace, planned, time.monotonic(), period)  # missed ticks are skipped

    async def sync_once(self, now: float | None = None, *, slot: ConcurrencySlot | None = None) -> Decision | None:
        """One sync, its log lines naming the target. ``slot``: the concurrency slot this sync holds, given
        back while it waits for its metrics (see :class:`~autoscaler.service.sync.schedule.ConcurrencySlot`)."""
        started = time.monotonic()
        structlog.contextvars.bind_contextvars(namespace=self._target.namespace, name=self._target.name)
        try:
            return await self._sync(started, self._context.clock() if now is None else now, slot)
        finally:
            structlog.contextvars.unbind_contextvars("namespace", "name")

    async def _sync(self, started: float, now: float, slot: ConcurrencySlot | None) -> Decision | None:
        """One sync (:meth:`sync_once` without binding the log context: :meth:`run` binds it once)."""
        target, spec, metrics = self._target, self._spec, self._context.reports.metrics
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
            state = self._state if self._state is not None else restore(self.last_status, now)
            try:
                scale = await self._view.read_scale(target)
            except ScaleError as exc:
                await self._scale_unreadable(state, str(exc), now)
                self._writes.end(target)
                metrics.observe_reconcile(
                    target.namespace, target.name, time.monotonic() - started, "error", "FailedGetScale"
                )
                return None
            # The target as it is now: retarget() may have replaced it while the scale was read.
            observation = await self._observer.observe(
                self._target, spec, scale, read_metrics=reads_metrics(spec), slot=slot
            )
            # spec.prediction: the forecasts last made, read from the view's cache (made in the background).
            forecasts = (
                self._view.forecasts(self._target, spec, scale.selector or "", self.period, now)
                if spec.prediction is not None
                else None
            )
            if spec.hvpa is None:
                inputs = SyncInputs(
                    observation=observation,
                    created=self._target.metadata.created,
                    annotations=self._target.metadata.pause_annotations,
                    forecasts=forecasts,
                )
            else:
                inputs = SyncInputs(
                    observation=observation,
                    vpa=vpa_observation(self._view.find_vpa(target)),
                    template=self._view.template_of(target),
                    clock=now,
                    created=self._target.metadata.created,
                    annotations=self._target.metadata.pause_annotations,
                    forecasts=forecasts,
                )
            plan = plan_sync(spec, inputs, state, self._context.settings, now)
            held = hold(
                self._view.other_autoscaler(self._target), state.target.conditions, self._target.metadata.take_over
            )
            if held is not None:  # never two writers: decided, reported, not written (issue 43)
                plan = held_plan(plan, held)
                return await self._carry_out(plan, scale, observation, started, held=True)
            if plan.scale_to is None or self._context.dry_run:
                return await self._carry_out(plan, scale, observation, started)
            # A scale to write: carried out in a task of its own, which a stop lets finish.
            writing = asyncio.ensure_future(self._carry_out(plan, scale, observation, started))
            return await finish_scale_write(writing, self._writes, self._forget_state)
        except (asyncio.CancelledError, LeadershipLost):
            raise
        except TargetLeft as left:  # moved to another shard (or deleted) mid-sync: nothing more is written
            log.info("sync stopped before writing: the target is not this instance's now", reason=str(left))
            return None
        except Exception:  # a bug must not kill the reconciler: report it and try again next tick
            log.exception("sync failed unexpectedly")
            metrics.observe_reconcile(
                target.namespace, target.name, time.monotonic() - started, "error", "InternalError"
            )
            return None

    async def _carry_out(
        self, plan: SyncPlan, scale: Scale, observation: Observation, started: float, *, held: bool = False
    ) -> Decision:
        """A sync decided: its writes, their outcome recorded, the report; the state the next sync starts from.
        ``held``: another autoscaler scales the workload, nothing is written but the report (a shadow)."""
        target, now = self._target, plan.now
        results = NOTHING_WRITTEN if held else await self._write(plan, scale)
        outcome = settle(plan, results)
        if self._context.reports.recorder is not None:
            self._context.reports.recorder.record(target, plan, observation, results, outcome)
        decision = outcome.decision
        extra = decision_sections(decision)
        if outcome.hvpa is not None:
            extra[HVPA] = hvpa_status(outcome.hvpa, outcome.state.hvpa)
        await self._reporter.report(self._target, decision, now, extra)
        self._writes.end(target)
        self._state = outcome.state
        self._syncs += 1
        result = ("held", None) if held else reconcile_result(decision)
        self._context.reports.metrics.observe_reconcile(
            target.namespace, target.name, time.monotonic() - started, *result
        )
        return decision

    def _forget_state(self) -> None:
        """The next sync restores its state from the status (a scale write's sync was cut short)."""
        self._state = None

    async def _write(self, plan: SyncPlan, scale: Scale) -> WriteResults:
        """Make the plan's writes: the status that records the scale write, the scale, then (only if that
        went through) the VPA."""
        if self._context.dry_run:
            return NOTHING_WRITTEN
        replicas = plan.scale_to
        if replicas is not None:
            decision = plan.decision
            intent = scale_intent(decision, plan.now)
            error = await self._reporter.record_scale_intent(self._target, decision, intent, plan.now)
            if error is None:
                error = await self._writes.scale(self._target, replicas, decision.current_replicas, scale)
            if error is not None:
                return WriteResults(scale=False, scale_error=error, vpa=False)
        patch = plan.vpa_patch
        if patch is None:
            return ALL_WRITTEN
        name = str(as_mapping(as_mapping(self._view.find_vpa(self._target)).get("metadata")).get("name") or "")
        return WriteResults(vpa=bool(name) and await self._writes.vpa(self._target, name, patch))

    async def _scale_unreadable(self, state: SyncState, error: str, now: float) -> None:
        """AbleToScale False / FailedGetScale: the status keeps everything else as it was."""
        self._state, event = scale_unreadable(state, error, now)
        log.warning("scale unreadable", error=error)
        await self._reporter.report_unreadable(self._target, self._state.target.conditions, event)
