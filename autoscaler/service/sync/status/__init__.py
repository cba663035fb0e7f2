"""A target's status in the service: the document written from a decision, and whether it is worth a write
(:class:`StatusDigest`). The status's one home in the service is this package, by concept: this module; the
sections besides the HPA engine's (``pendingScale``, ``lastActiveTime``, ``metricHealth``, ``hvpa``), each
written and read back side by side (:mod:`autoscaler.service.sync.status.sections`); and the status read back
into the :class:`~autoscaler.core.sync.SyncState` the next sync starts from
(:func:`autoscaler.service.sync.status.restore.restore`). Core has the shapes ``simulate`` shares
(:mod:`autoscaler.core.status`).

The status carries everything a restarted (or newly elected) service needs to decide exactly as the
old one would have — the decision history included, which upstream keeps only in memory — and it is
written only when something a reader or a restart needs has changed, never just because a sync ran.

The history is kept compact without changing any decision. Stabilization only ever takes the highest or
lowest recommendation inside a window, so for each replica count only the latest time it was
recommended matters. The status therefore keeps one entry per count (the *closed* ones, whose times are
exact) plus the count being recommended right now (*ongoing*): its end moves every sync, so it is not
written each time; a restore treats it as recommended until the moment of the restore, which holds the
windows at least as long as they would have held (never shorter).

A scale write is recorded before it is sent: the status of the decision as made, with the write as
``pendingScale`` (:func:`scale_intent_status`); the status written once the write is done drops it. A
status read back with it tells the next sync a write whose outcome was never recorded
(:func:`~autoscaler.core.rescale.resolve_scale_intent` settles it against the workload's count).

Whether a status needs a write: :class:`StatusDigest` holds the part of a status worth one, what a reader acts
on and what a restart needs, exactly as the status document holds it (times as the text written). It is built
either from a decision (what the status would become, without building the document: a steady sync does this
and nothing more) or from a status as stored (the last one written, or whatever the object carries). Both give
the same value for the same status (a test checks it), and :meth:`StatusDigest.needs_write_after` is the one
rule comparing two of them. Left out, so that a steady sync writes nothing: the metric values, the
explanation, and the moving end of the ongoing recommendation.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from autoscaler.core import conditions as c
from autoscaler.core.conditions import Condition, set_condition
from autoscaler.core.decision import Decision
from autoscaler.core.explain import explain_lines
from autoscaler.core.history import DecisionHistory, Recommendation, ScaleEvent, ScaleIntent
from autoscaler.core.status import condition_json, metric_status
from autoscaler.service.cluster.targets import Target, error_text
from autoscaler.service.sync.status.restore import restore_conditions
from autoscaler.service.sync.status.sections import HVPA, PENDING_SCALE, decision_sections, scale_intent_document
from autoscaler.values.loose_json import as_mapping, mappings_in
from autoscaler.values.timestamps import rfc3339

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


def status_document(
    decision: Decision,
    *,
    generation: int | None,
    now: float,
    retention: float = MAX_WINDOW_SECONDS,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The status subresource's content after ``decision`` (whether it is worth writing: :class:`StatusDigest`)."""
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


# The status keys the digest reads one by one; every other key (``hvpa``, ``dryRun``…) is ``extra``.
_OWN_KEYS = frozenset(
    {
        "observedGeneration",
        "currentReplicas",
        "desiredReplicas",
        "lastScaleTime",
        "conditions",
        "history",
        "lastDecision",
        "currentMetrics",
    }
)
_ONGOING = "ongoing"
_SCALING_ACTIVE = "ScalingActive"
_ABLE_TO_SCALE = "AbleToScale"
_TRUE = "True"
_NONE: frozenset[Any] = frozenset()
_AT = operator.attrgetter("at")


class HistoryDigest(NamedTuple):
    """The significant part of a status's decision history."""

    recommendations: frozenset[Any]  # the closed ones: (replicas, at)
    ongoing: frozenset[Any]  # the count(s) recommended at the last sync
    scale_up_events: Any
    scale_down_events: Any


class LastDecisionDigest(NamedTuple):
    """The significant part of a status's ``lastDecision``."""

    limited_by: Any
    error: Any


class StatusDigest(NamedTuple):
    """The significant part of a status. Values are as stored (a status read back from the API may
    hold anything, so the fields are frozen copies of whatever is there).

    A named tuple rather than a frozen dataclass:
    every sync of every target makes one, and a named tuple is the quicker to make. Its fields are read
    by name, and two digests are compared only by :meth:`needs_write_after`."""

    generation: Any
    current_replicas: Any
    desired_replicas: Any
    last_scale_time: Any
    conditions: tuple[Any, ...]  # (type, status, reason, message, lastTransitionTime) each
    history: HistoryDigest
    last_decision: LastDecisionDigest
    extra: Any  # every other key of the status, frozen

    @classmethod
    def of_decision(
        cls,
        decision: Decision,
        *,
        generation: int | None,
        now: float,
        extra: Mapping[str, Any] | None = None,
        retention: float = MAX_WINDOW_SECONDS,
    ) -> StatusDigest:
        """The digest of ``status_document(decision, generation=…, now=…, extra=…)``."""
        # What compact_history keeps, without building it: every steady sync of every target comes here.
        history = decision.history
        latest = max(history.recommendations, key=_AT, default=None)
        ongoing = latest.replicas if latest is not None else None
        cutoff = now - retention
        closed: dict[int, float] = {}
        for rec in history.recommendations:
            if rec.replicas != ongoing and rec.at >= cutoff:
                at = closed.get(rec.replicas)
                if at is None or rec.at > at:
                    closed[rec.replicas] = rec.at
        return cls(
            generation,
            decision.current_replicas,
            decision.status_desired_replicas,
            _seconds(decision.last_scale_time) if decision.last_scale_time is not None else None,
            tuple(
                [
                    (
                        x.type,
                        x.status,
                        x.reason,
                        x.message,
                        _seconds(x.last_transition_time) if x.last_transition_time is not None else None,
                    )
                    for x in decision.conditions
                ]
            ),
            HistoryDigest(
                frozenset([(count, _micro(at)) for count, at in closed.items()]) if closed else _NONE,
                _only(ongoing) if ongoing is not None else _NONE,
                _events(history.scale_up_events, now),
                _events(history.scale_down_events, now),
            ),
            LastDecisionDigest(decision.limited_by, decision.error),
            _freeze(extra) if extra else (),
        )

    @classmethod
    def of_status(cls, status: Mapping[str, Any] | None) -> StatusDigest | None:
        """The digest of a stored status; None for none (a target never written)."""
        if not isinstance(status, Mapping) or not status:
            return None
        history = as_mapping(status.get("history"))
        closed, ongoing = set(), set()
        for item in mappings_in(history.get("recommendations")):
            if item.get(_ONGOING):
                ongoing.add(_freeze(item.get("replicas")))
            else:
                closed.add((_freeze(item.get("replicas")), _freeze(item.get("at"))))
        last = as_mapping(status.get("lastDecision"))
        return cls(
            _freeze(status.get("observedGeneration")),
            _freeze(status.get("currentReplicas")),
            _freeze(status.get("desiredReplicas")),
            _freeze(status.get("lastScaleTime")),
            tuple(
                tuple(_freeze(x.get(key)) for key in ("type", "status", "reason", "message", "lastTransitionTime"))
                for x in mappings_in(status.get("conditions"))
            ),
            HistoryDigest(
                frozenset(closed),
                frozenset(ongoing),
                _freeze(history.get("scaleUpEvents")),
                _freeze(history.get("scaleDownEvents")),
            ),
            LastDecisionDigest(_freeze(last.get("limitedBy")), _freeze(last.get("error"))),
            _freeze({k: v for k, v in status.items() if k not in _OWN_KEYS}),
        )

    def needs_write_after(self, previous: StatusDigest | None) -> bool:
        """Whether a status with this digest is worth writing over one with ``previous``: anything
        differs, except that a closed recommendation which merely aged out of the retention window is
        not worth a write (the next restore would drop it anyway)."""
        if previous is None:
            return True
        if self == previous:  # the steady state
            return False
        recommendations, before = self.history.recommendations, previous.history.recommendations
        return (
            not recommendations <= before
            or self._replace(history=self.history._replace(recommendations=before)) != previous
        )

    def differs_only_in_scaling_activity(self, previous: StatusDigest | None) -> bool:
        """Whether this digest differs from ``previous`` only where a metric failure (or its end) shows:
        the ScalingActive condition, AbleToScale between two True reasons (SucceededGetScale while the
        metrics fail, ReadyForNewScale when they are read), and the sync's error. Such a write only says
        that the metrics could (not) be read; the backend's budget may hold it (service/backends/health.py)."""
        if previous is None or _without_activity(self) != _without_activity(previous):
            return False
        mine, theirs = _by_type(self.conditions), _by_type(previous.conditions)
        if mine.keys() != theirs.keys():
            return False
        for kind, condition in mine.items():
            other = theirs[kind]
            if condition == other or kind == _SCALING_ACTIVE:
                continue
            if not (kind == _ABLE_TO_SCALE and condition[1] == other[1] == _TRUE):
                return False
        return True


def _without_activity(digest: StatusDigest) -> StatusDigest:
    """``digest`` without what a metric failure (or its end) changes: the conditions and the sync's error."""
    return digest._replace(conditions=(), last_decision=digest.last_decision._replace(error=None))


def _by_type(conditions: tuple[Any, ...]) -> dict[Any, Any]:
    return {condition[0]: condition for condition in conditions if isinstance(condition, tuple) and condition}


def needs_write(previous: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether the status ``new`` is worth writing over ``previous`` (both as stored)."""
    digest = StatusDigest.of_status(new)
    return (
        digest.needs_write_after(StatusDigest.of_status(previous))
        if digest is not None
        else (StatusDigest.of_status(previous) is not None)
    )


def _seconds(value: float) -> str:
    return _whole_seconds(math.floor(value))


# A target's times repeat from sync to sync (a condition's transition, a recommendation's time): each
# is formatted once, not at every sync of every target. Keyed by the whole second the text shows: each
# target's times are floats of their own (keyed by them, the cache missed at every sync of a large service:
# docs/benchmarks-history.md, "Cyclic garbage of the compiled build; …"), but they fall in the few seconds
# the targets' first syncs took.
@functools.lru_cache(maxsize=4096)
def _whole_seconds(whole: int) -> str:
    return seconds_time(whole)


@functools.lru_cache(maxsize=4096)
def _micro(value: float) -> str:
    return rfc3339(value, fraction=True)


@functools.lru_cache(maxsize=256)
def _only(count: int) -> frozenset[int]:
    """``{count}``: one set per count, shared by every target's digest, rather than a set of each digest's."""
    return frozenset((count,))


def _events(events: tuple[ScaleEvent, ...], now: float) -> tuple[Any, ...]:
    """``history.scale*Events`` as the status keeps them (:func:`recent_events`) and :func:`_freeze`
    leaves them (keys sorted)."""
    if not events:
        return ()
    return tuple(
        (("at", _micro(e.at)), ("change", e.change), ("outdated", True))
        if e.outdated
        else (("at", _micro(e.at)), ("change", e.change))
        for e in recent_events(events, now)
    )


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, Sequence) and not isinstance(value, str):
        return tuple(_freeze(v) for v in value)
    return value
