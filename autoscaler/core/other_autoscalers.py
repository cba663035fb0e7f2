"""Never two writers: a workload that another autoscaler scales (an HPA, a KEDA ScaledObject) is not
scaled by its ScalingTarget too (issue 43).

Pure: which other autoscaler scales a target's workload (matched as upstream matches a ``scaleTargetRef``:
the API group, the kind and the name, in the same namespace), and what a sync held for it records. Such a
sync still decides (its history and its proposal go on, ``explain`` shows what it would do: a shadow, as a
dry run is), but writes no scale: ScalingActive False, reason ``AnotherAutoscaler``, its message naming the
other object, and a Warning Event when the hold begins.

The cut-over is a deliberate step: a target held so stays held once the other object is gone, until its
annotation ``autoscaler.dev/take-over: "true"`` (which ``autoscaler convert`` writes) lets it scale; with
the annotation it scales at its first sync after the other object is gone. A target that no other
autoscaler ever held needs no annotation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from autoscaler.core import conditions as c
from autoscaler.core.conditions import Condition, find_condition, set_condition
from autoscaler.core.decision import WARNING, Decision, Event

ANOTHER_AUTOSCALER = "AnotherAutoscaler"  # ScalingActive's reason, the Event's reason, the metric's reason
MSG_ANOTHER_AUTOSCALER = "{} scales this workload: no scale is written while it does (a shadow until the cut-over)"
TAKE_OVER_ANNOTATION = "autoscaler.dev/take-over"  # "true": the cut-over is agreed (docs/migrating.md)
MSG_AWAITING_CUT_OVER = (
    f'the other autoscaler is gone; no scale is written until the annotation {TAKE_OVER_ANNOTATION}: "true" '
    "on this target agrees to the cut-over"
)


@dataclass(frozen=True, slots=True)
class OtherAutoscaler:
    """Another autoscaler's object and the workload it scales. ``owner``: the object that answers for it
    (a KEDA ScaledObject for the HPA it created, ``"ScaledObject shop/web"``), or "" (itself)."""

    kind: str  # HorizontalPodAutoscaler, ScaledObject
    namespace: str
    name: str
    target_group: str  # the API group of its scaleTargetRef's apiVersion ("" for the core group)
    target_kind: str
    target_name: str
    owner: str = ""

    @property
    def description(self) -> str:
        """How conditions and Events name it: ``HorizontalPodAutoscaler shop/web``, or its owner."""
        return self.owner or f"{self.kind} {self.namespace}/{self.name}"


def api_group(api_version: str) -> str:
    """The group of an ``apiVersion`` (``apps/v1`` → ``apps``; ``v1`` → the core group, "")."""
    return api_version.rpartition("/")[0]


def scaled_by(namespace: str, group: str, kind: str, name: str, others: Iterable[OtherAutoscaler]) -> str | None:
    """The other autoscaler that scales the workload (``group``, ``kind``, ``name`` in ``namespace``), by
    its description; the first in name order when several do (a stable message from sync to sync)."""
    found = sorted(
        other.description
        for other in others
        if other.namespace == namespace
        and other.target_name == name
        and other.target_kind == kind
        and other.target_group == group
    )
    return found[0] if found else None


def hold(other: str | None, previous: tuple[Condition, ...], take_over: bool) -> str | None:
    """Why a sync writes no scale, or None (it may): ``other`` scales the workload now (its description,
    None: none does), or one did (``previous``, the conditions the sync started from, say the target was
    held) and ``take_over`` (the annotation) does not agree to the cut-over yet."""
    if other is not None:
        return MSG_ANOTHER_AUTOSCALER.format(other)
    before = find_condition(previous, c.SCALING_ACTIVE)
    if not take_over and before is not None and before.status == c.FALSE and before.reason == ANOTHER_AUTOSCALER:
        return MSG_AWAITING_CUT_OVER
    return None


def held_for(decision: Decision, previous: tuple[Condition, ...], message: str, now: float) -> Decision:
    """``decision`` as a sync held (:func:`hold`'s ``message``) records it: its proposal kept (not written),
    ScalingActive False saying why, and an Event when the hold begins or its reason changes (``previous``:
    the conditions the sync started from)."""
    conditions = set_condition(decision.conditions, c.SCALING_ACTIVE, c.FALSE, ANOTHER_AUTOSCALER, message, now)
    before = find_condition(previous, c.SCALING_ACTIVE)
    events = decision.events
    if before is None or before.reason != ANOTHER_AUTOSCALER or before.message != message:
        events = (*events, Event(WARNING, ANOTHER_AUTOSCALER, message))
    return replace(decision, conditions=conditions, events=events, error=message)


def held_because(decision: Decision) -> str | None:
    """Why ``decision`` was held (:func:`held_for`), or None: it was not."""
    active = find_condition(decision.conditions, c.SCALING_ACTIVE)
    held = active is not None and active.status == c.FALSE and active.reason == ANOTHER_AUTOSCALER
    return active.message if held and active is not None else None
