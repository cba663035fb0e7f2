"""A target's status read back: :func:`restore` gives the :class:`~autoscaler.core.sync.SyncState` a
reconciler's first sync (or the one after a sync cut short) starts from. What a status holds and why:
:mod:`autoscaler.service.sync.status`; the sections besides the HPA engine's, each read back beside the code
that writes it: :mod:`autoscaler.service.sync.status.sections`.

A status read back may hold anything (edited by hand, written by an older version): a part that does not
read is left out, never an error (:mod:`autoscaler.values.loose_json`). The ongoing recommendation (the
count recommended at the last sync) is taken as recommended until the moment of the restore, which holds
the stabilization windows at least as long as they would have held.
"""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.core.conditions import Condition
from autoscaler.core.decision import TargetState
from autoscaler.core.history import DecisionHistory, Recommendation, ScaleEvent
from autoscaler.core.pause_state import restore_pause
from autoscaler.core.sync import SyncState
from autoscaler.service.sync.status.sections import (
    HVPA,
    METRIC_HEALTH,
    PENDING_SCALE,
    replica_count,
    restore_hvpa_state,
    restore_last_active_time,
    restore_metric_health,
    restore_scale_intent,
)
from autoscaler.values.loose_json import as_mapping, mappings_in
from autoscaler.values.timestamps import parse_rfc3339


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
