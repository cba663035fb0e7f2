"""A target's status in the service: written from a decision, read back (:func:`restore`) into the
:class:`~autoscaler.core.sync.SyncState` the next sync starts from. Every section of it is here, both ways:
the HPA engine's (history, conditions, the last decision) here, the others (``pendingScale``,
``lastActiveTime``, ``metricHealth``, ``hvpa``) in :mod:`autoscaler.service.sync.status_sections`, each
written and read back side by side; core has the shapes ``simulate`` shares (:mod:`autoscaler.core.status`).

The status carries everything a restarted (or newly elected) service needs to decide exactly as the
old one would have — the decision history included, which upstream keeps only in memory — and it is
written only when something a reader or a restart needs has changed, never just because a sync ran
(:mod:`autoscaler.service.sync.status_digest` tells; the one other module of the status, as it is the
steady sync's whole share of it).

The history is kept compact without changing any decision. Stabilization only ever takes the highest or
lowest recommendation inside a window, so for each replica count only the latest time it was
recommended matters. The status therefore keeps one entry per count (the *closed* ones, whose times are
exact) plus the count being recommended right now (*ongoing*): its end moves every sync, so it is not
written each time; a restore treats it as recommended until the moment of the restore, which holds the
windows at least as long as they would have held (never shorter).

A scale write is recorded before it is sent: the status of the decision as made, with the write as
``pendingScale`` (:func:`scale_intent_document`); the status written once the write is done drops it. A
status read back with it tells the next sync a write whose outcome was never recorded
(:func:`~autoscaler.core.rescale.resolve_scale_intent` settles it against the workload's count).

A status read back may hold anything (edited by hand, written by an older version): a part that does not
read is left out, never an error (:mod:`autoscaler.values.loose_json`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.core import conditions as c
from autoscaler.core.conditions import Condition, set_condition
from autoscaler.core.decision import Decision, TargetState
from autoscaler.core.explain import explain_lines
from autoscaler.core.history import DecisionHistory, Recommendation, ScaleEvent, ScaleIntent
from autoscaler.core.pause_state import restore_pause
from autoscaler.core.status import condition_json, metric_status
from autoscaler.core.sync import SyncState
from autoscaler.service.cluster.targets import Target, error_text
from autoscaler.service.sync.status_sections import (
    HVPA,
    METRIC_HEALTH,
    PENDING_SCALE,
    decision_sections,
    replica_count,
    restore_hvpa_state,
    restore_last_active_time,
    restore_metric_health,
    restore_scale_intent,
    scale_intent_document,
)
from autoscaler.values.loose_json import as_mapping, mappings_in
from autoscaler.values.timestamps import parse_rfc3339, rfc3339

# Keep recommendations this long at least (the longest stabilization window allowed is 3600 s).
MAX_WINDOW_SECONDS = 3600.0


def seconds_time(value: float) -> str:
    """Condition times (``metav1.Time``) have whole-second precision."""
    return rfc3339(math.floor(value))


@dataclass(frozen=True, slots=True)
class CompactHistory:
    closed: tuple[Recommendation, ...]  # one per replica count: the latest time it was recommended
    ongoing: int | None  # the count recommended at the last sync
    ongoing_at: float | None
    scale_up_events: tuple[ScaleEvent, ...]
    scale_down_events: tuple[ScaleEvent, ...]


def _latest(history: DecisionHistory) -> Recommendation | None:
    """The recommendation of the last sync (the ongoing count); the first of equal times."""
    return max(history.recommendations, key=lambda r: r.at, default=None)


def recent_events(events: tuple[ScaleEvent, ...], now: float) -> tuple[ScaleEvent, ...]:
    """The scale events a status keeps (the longest policy period allowed is 1800 s)."""
    return tuple(e for e in events if e.at >= now - 1800)


def compact_history(history: DecisionHistory, now: float, retention: float = MAX_WINDOW_SECONDS) -> CompactHistory:
    """The decision-relevant content of ``history`` (see the module docstring)."""
    cutoff = now - retention
    latest = _latest(history)
    by_count: dict[int, float] = {}
    for rec in history.recommendations:
        if rec.at >= cutoff and (latest is None or rec.replicas != latest.replicas):
            by_count[rec.replicas] = max(rec.at, by_count.get(rec.replicas, rec.at))
    closed = tuple(sorted((Recommendation(r, at) for r, at in by_count.items()), key=lambda r: (r.at, r.replicas)))
    return CompactHistory(
        closed=closed,
        ongoing=latest.replicas if latest is not None else None,
        ongoing_at=latest.at if latest is not None else None,
        scale_up_events=recent_events(history.scale_up_events, now),
        scale_down_events=recent_events(history.scale_down_events, now),
    )


def history_document(compact: CompactHistory) -> dict[str, Any]:
    recs: list[dict[str, Any]] = [{"replicas": r.replicas, "at": rfc3339(r.at, fraction=True)} for r in compact.closed]
    if compact.ongoing is not None and compact.ongoing_at is not None:
        recs.append({"replicas": compact.ongoing, "at": rfc3339(compact.ongoing_at, fraction=True), "ongoing": True})

    def events(items: tuple[ScaleEvent, ...]) -> list[dict[str, Any]]:
        return [
            {"change": e.change, "at": rfc3339(e.at, fraction=True), **({"outdated": True} if e.outdated else {})}
            for e in items
        ]

    return {
        "recommendations": recs,
        "scaleUpEvents": events(compact.scale_up_events),
        "scaleDownEvents": events(compact.scale_down_events),
    }


def restore_history(document: object, now: float) -> DecisionHistory | None:
    """The history a sync starts from after a restart; None when the status has none (a new target)."""
    if not isinstance(document, Mapping):
        return None
    recs: list[Recommendation] = []
    for item in mappings_in(document.get("recommendations")):
        replicas, at = replica_count(item.get("replicas")), parse_rfc3339(item.get("at"))
        if replicas is not None and at is not None:
            # The ongoing count was still being recommended when the status was written: hold it until now.
            recs.append(Recommendation(replicas, max(now, at) if item.get("ongoing") else at))
    return DecisionHistory(
        tuple(recs), _events(document.get("scaleUpEvents")), _events(document.get("scaleDownEvents"))
    )


def _events(value: object) -> tuple[ScaleEvent, ...]:
    out = []
    for item in mappings_in(value):
        change, at = replica_count(item.get("change")), parse_rfc3339(item.get("at"))
        if change is not None and at is not None:
            out.append(ScaleEvent(change, at, bool(item.get("outdated", False))))
    return tuple(out)


def restore_conditions(value: object) -> tuple[Condition, ...]:
    out = []
    for item in mappings_in(value):
        type_, status = item.get("type"), item.get("status")
        if isinstance(type_, str) and isinstance(status, str):
            out.append(
                Condition(
                    type_,
                    status,
                    str(item.get("reason", "")),
                    str(item.get("message", "")),
                    parse_rfc3339(item.get("lastTransitionTime")),
                )
            )
    return tuple(out)


def restore(status: object, now: float) -> SyncState:
    """What the next sync starts from, read from the target's status: the HPA engine's state and HVPA's
    (a status that is not an object, or holds neither: a new target's)."""
    if not isinstance(status, Mapping):
        return SyncState()
    target = TargetState(
        history=restore_history(status.get("history"), now),
        conditions=restore_conditions(status.get("conditions")),
        desired_replicas=replica_count(status.get("desiredReplicas")),
        last_scale_time=parse_rfc3339(status.get("lastScaleTime")),
        scale_intent=restore_scale_intent(status.get(PENDING_SCALE)),
        last_active_time=restore_last_active_time(status, now),
        metric_health=restore_metric_health(status.get(METRIC_HEALTH)),
        pause=restore_pause(status.get("pause")),
    )
    return SyncState(target, restore_hvpa_state(as_mapping(status.get(HVPA)).get("state")))


def status_document(
    decision: Decision,
    *,
    generation: int | None,
    now: float,
    retention: float = MAX_WINDOW_SECONDS,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The status subresource's content after ``decision`` (whether it is worth writing:
    :mod:`autoscaler.service.sync.status_digest`)."""
    doc: dict[str, Any] = {
        "currentReplicas": decision.current_replicas,
        "desiredReplicas": decision.status_desired_replicas,
        "currentMetrics": [metric_status(o) for o in decision.metrics if not o.skipped],
        "conditions": [condition_json(c, seconds_time) for c in decision.conditions],
        "history": history_document(compact_history(decision.history, now, retention)),
        "lastDecision": last_decision_document(decision, now),
    }
    if generation is not None:
        doc["observedGeneration"] = generation
    if decision.last_scale_time is not None:
        doc["lastScaleTime"] = seconds_time(decision.last_scale_time)
    if extra:
        doc.update(extra)
    return doc


def scale_intent_status(
    decision: Decision,
    intent: ScaleIntent,
    *,
    generation: int | None,
    now: float,
    last: Mapping[str, Any] | None,
    shard: str | None,
) -> dict[str, Any]:
    """The status recorded before ``decision``'s scale write is sent: the decision as made, with the write as
    ``pendingScale``, HVPA's section as the ``last`` status had it (HVPA decides again once the scale is done)."""
    extra: dict[str, Any] = {HVPA: last[HVPA]} if last is not None and HVPA in last else {}
    if shard is not None:
        extra["shard"] = shard
    extra.update(decision_sections(decision))
    extra[PENDING_SCALE] = scale_intent_document(intent)
    return status_document(decision, generation=generation, now=now, extra=extra)


def unreadable_status(
    last: Mapping[str, Any] | None, conditions: Sequence[Condition], *, generation: int | None, shard: str | None
) -> dict[str, Any]:
    """The status of a sync that could not read the scale: the ``last`` one with ``conditions`` (everything else
    in it stays as it was), written by this instance's shard (the one that wrote ``last`` may be another)."""
    document = dict(last or {})
    document.pop("shard", None)
    if shard is not None:
        document["shard"] = shard
    document["conditions"] = [condition_json(x, seconds_time) for x in conditions]
    if generation is not None:
        document["observedGeneration"] = generation
    return document


def last_decision_document(decision: Decision, now: float) -> dict[str, Any]:
    return {
        "time": rfc3339(now),
        "currentReplicas": decision.current_replicas,
        "proposal": decision.desired_replicas,
        "replicas": decision.replicas,
        "scaled": decision.scale,
        "reason": decision.rescale_reason or None,
        "limitedBy": decision.limited_by,
        "error": decision.error,
        "explanation": explain_lines(decision, now),
    }


def invalid_status(target: Target, now: float, previous: Mapping[str, Any] | None) -> dict[str, Any]:
    """The status of a target whose spec is invalid: ScalingActive False / InvalidSpec with every error."""
    conditions: tuple[Condition, ...] = restore_conditions((previous or {}).get("conditions"))
    conditions = set_condition(
        conditions,
        c.SCALING_ACTIVE,
        c.FALSE,
        "InvalidSpec",
        f"the target's spec is invalid: {error_text(target.errors)}",
        now,
    )
    document = dict(previous or {})
    document["conditions"] = [condition_json(x, seconds_time) for x in conditions]
    if target.generation is not None:
        document["observedGeneration"] = target.generation
    return document
