"""What a target's sync reports: its Events, its status, the decision's log line and the target's gauges.

The status is written only when what it says changed. The last status written (or found on the object)
is kept with its digest (:class:`~autoscaler.service.sync.status.StatusDigest`); a steady sync compares digests and
never builds the document. It is kept as compressed compact JSON, a fraction of the parsed document's
memory (~0.7 KiB instead of ~1.6 KiB of text, and far less than the parsed document): only writes,
restarts and /api/targets read it.

Apart from the reconciler because it is the report half of a sync, with the status memo as its state.
Every write goes through :class:`~autoscaler.service.sync.writes.TargetWrites` (fenced on leadership, backing
off while writes fail). Its log lines are the reconciler's (logger ``autoscaler.reconciler``).
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import structlog

from autoscaler.core import conditions as c
from autoscaler.core.conditions import Condition
from autoscaler.core.decision import Decision, Event
from autoscaler.core.history import ScaleIntent
from autoscaler.core.results import MetricOutcome
from autoscaler.service.backends.health import backend_event
from autoscaler.service.backends.healths import BackendHealths
from autoscaler.service.cluster.targets import Target, compact_json
from autoscaler.service.sync.status import StatusDigest, scale_intent_status, status_document, unreadable_status
from autoscaler.service.sync.writes import TargetWrites
from autoscaler.service.telemetry.metrics_sink import MetricsSink

log = structlog.get_logger("autoscaler.reconciler")
_stdlib_log = logging.getLogger("autoscaler.reconciler")  # the level structlog's filter_by_level reads


class SyncReporter:
    """One target's reports, sync after sync (the reconciler keeps one)."""

    def __init__(
        self,
        writes: TargetWrites,
        metrics: MetricsSink,
        *,
        dry_run: bool,
        shard: str | None,
        last_status: Mapping[str, Any] | None,
        backend: BackendHealths | None = None,
        sync_period: float | None = None,
    ) -> None:
        self._writes = writes
        self._metrics = metrics
        self._sync_period = sync_period  # how often the target syncs, for /metrics (the alert on a late sync)
        self._dry_run = dry_run
        self._shard = shard  # the shard this instance serves (status.shard names it), None: unsharded
        self._backend = backend  # the health of the Prometheus backends the target reads, and their budgets of writes
        # Whether what differs from the status last written is the backend's doing: it said the backend failed,
        # or a write was held since (the conditions moved on from it: a new transition time at least).
        self._backend_churn = False
        self._last_status_packed: bytes | None = None  # see last_status
        self._written: StatusDigest | None = None  # the digest of last_status
        self._store(last_status)

    @property
    def last_status(self) -> Mapping[str, Any] | None:
        """The status last written (or found on the object): a fresh copy on every access."""
        if self._last_status_packed is None:
            return None
        text = zlib.decompress(self._last_status_packed)
        try:
            status: Mapping[str, Any] = orjson.loads(text)
        except orjson.JSONDecodeError:  # the standard library's text (see compact_json), NaN in it
            status = json.loads(text)
        return status

    def _store(self, document: Mapping[str, Any] | None, digest: StatusDigest | None = None) -> None:
        """``document`` is the last status now; ``digest`` its digest, when the caller has it."""
        self._last_status_packed = None if document is None else zlib.compress(compact_json(document), 1)
        self._written = digest if digest is not None else StatusDigest.of_status(document)

    async def report(self, target: Target, decision: Decision, now: float, extra: dict[str, Any]) -> None:
        """A decision's Events, status (``extra``: its sections besides the HPA's), log line and gauges.
        What only says that the backend failed (or no longer fails) goes within its budget
        (:mod:`autoscaler.service.backends.health`)."""
        backend = self._backend
        backend_failed = await backend.observe_sync(target.key, decision) if backend is not None else False
        for event in decision.events:
            if (
                backend is not None
                and backend_failed
                and backend_event(event, decision)
                and not backend.admit_event(event, decision)
            ):
                continue
            await self._writes.event(target, event.type, event.reason, event.message)
        if self._dry_run:
            extra["dryRun"] = True
        if self._shard is not None:
            extra["shard"] = self._shard
        digest = StatusDigest.of_decision(decision, generation=target.generation, now=now, extra=extra)
        changed = digest.needs_write_after(self._written)
        if (
            changed
            and backend is not None
            and (backend_failed or self._backend_churn)
            and digest.differs_only_in_scaling_activity(self._written)
            and not backend.admit_status(decision, failed=backend_failed)
        ):
            changed = False  # held: the status stays as written, and the next sync asks again
            self._backend_churn = True
        if changed:
            document = status_document(decision, generation=target.generation, now=now, extra=extra)
            if await self._writes.status(target, document, self.last_status):
                self._store(document, digest)
                self._backend_churn = backend_failed
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
                dry_run=self._dry_run or None,
            )
        metrics = self._metrics
        metrics.set_target(
            target.namespace,
            target.name,
            current=decision.current_replicas,
            proposal=decision.desired_replicas,
            final=decision.replicas,
            limited_reason=limited,
            metrics=[(o.spec.name, _current_value(o), _target_value(o)) for o in decision.metrics],
            pause=(decision.pause.mode.value, decision.pause.since) if decision.pause is not None else None,
            sync_period=self._sync_period,
        )
        metrics.set_target_conditions(target.namespace, target.name, _condition_states(decision.conditions))

    async def record_scale_intent(
        self, target: Target, decision: Decision, intent: ScaleIntent, now: float
    ) -> str | None:
        """Before ``decision``'s scale write: the status of the decision as made, with the write as
        ``pendingScale`` (:func:`~autoscaler.service.sync.status.scale_intent_status`), HVPA's section as it was.
        None once written, else why not (the write is then not sent: a scale no status could record is not made)."""
        last = self.last_status
        document = scale_intent_status(
            decision, intent, generation=target.generation, now=now, last=last, shard=self._shard
        )
        error = await self._writes.status_before_scale(target, document, last)
        if error is None:
            self._store(document)  # the next status written drops pendingScale (write_status nulls what it lacks)
        return error

    async def report_unreadable(self, target: Target, conditions: Sequence[Condition], event: Event) -> None:
        """A sync that could not read the scale: its Event, and the last status with ``conditions``
        (everything else in it stays as it was)."""
        if not self._writes.may_write():
            return
        await self._writes.event(target, event.type, event.reason, event.message)
        last = self.last_status
        document = unreadable_status(last, conditions, generation=target.generation, shard=self._shard)
        digest = StatusDigest.of_status(document)
        if (
            digest is not None
            and digest.needs_write_after(self._written)
            and await self._writes.status(target, document, last)
        ):
            self._store(document, digest)


def reconcile_result(decision: Decision) -> tuple[str, str | None]:
    """The result and the error reason autoscaler_reconcile_total counts a sync that decided under."""
    result = (
        "dry_run"
        if decision.scale and decision.applied is None
        else "scaled"
        if decision.applied
        else "error"
        if decision.error
        else "unchanged"
    )
    return result, _error_reason(decision)


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
