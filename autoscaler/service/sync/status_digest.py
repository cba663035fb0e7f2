"""Whether a target's status needs a write: the part of a status worth one, as one named value.

A :class:`StatusDigest` holds what a reader acts on and what a restart needs, exactly as the status
document holds it (times as the text written). It is built either from a decision (what the status
would become, without building the document: a steady sync does this and nothing more) or from a
status as stored (the last one written, or whatever the object carries). Both give the same value for
the same status — ``StatusDigest.of_decision(d, …) == StatusDigest.of_status(status_document(d, …))``,
a test checks it — and :meth:`StatusDigest.needs_write_after` is the one rule comparing two of them.

Left out, so that a steady sync writes nothing: the metric values, the explanation, and the moving end
of the count recommended right now (the ongoing one; see :mod:`autoscaler.service.sync.status`).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from autoscaler.core.decision import Decision
from autoscaler.core.history import ScaleEvent
from autoscaler.service.sync.status import MAX_WINDOW_SECONDS, recent_events, seconds_time
from autoscaler.values.loose_json import as_mapping, mappings_in
from autoscaler.values.timestamps import rfc3339

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


class StatusDigest(NamedTuple):
    """The significant part of a status. Values are as stored (a status read back from the API may
    hold anything, so the fields are frozen copies of whatever is there).

    A named tuple rather than a frozen dataclass, as :class:`~autoscaler.core.observation.Sample` is:
    every sync of every target makes one, and a named tuple is the quicker to make. Its fields are read
    by name, and two digests are compared only by :meth:`needs_write_after`."""

    generation: Any
    current_replicas: Any
    desired_replicas: Any
    last_scale_time: Any
    conditions: tuple[Any, ...]  # (type, status, reason, message, lastTransitionTime) each
    recommendations: frozenset[Any]  # the closed ones: (replicas, at)
    ongoing: frozenset[Any]  # the count(s) recommended at the last sync
    scale_up_events: Any
    scale_down_events: Any
    limited_by: Any
    error: Any
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
            frozenset([(count, _micro(at)) for count, at in closed.items()]) if closed else _NONE,
            _only(ongoing) if ongoing is not None else _NONE,
            _events(history.scale_up_events, now),
            _events(history.scale_down_events, now),
            decision.limited_by,
            decision.error,
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
            frozenset(closed),
            frozenset(ongoing),
            _freeze(history.get("scaleUpEvents")),
            _freeze(history.get("scaleDownEvents")),
            _freeze(last.get("limitedBy")),
            _freeze(last.get("error")),
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
        return (
            not self.recommendations <= previous.recommendations
            or self._replace(recommendations=previous.recommendations) != previous
        )

    def differs_only_in_scaling_activity(self, previous: StatusDigest | None) -> bool:
        """Whether this digest differs from ``previous`` only where a metric failure (or its end) shows:
        the ScalingActive condition, AbleToScale between two True reasons (SucceededGetScale while the
        metrics fail, ReadyForNewScale when they are read), and the sync's error. Such a write only says
        that the metrics could (not) be read; the backend's budget may hold it (service/backends/health.py)."""
        if previous is None or self._replace(conditions=(), error=None) != previous._replace(conditions=(), error=None):
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
