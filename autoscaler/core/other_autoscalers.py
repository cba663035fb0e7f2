"""Never two writers: a workload that another autoscaler scales (an HPA, a KEDA ScaledObject) is not
scaled by its ScalingTarget too (issue 43).

Pure: which other autoscaler scales a target's workload (matched as upstream matches a ``scaleTargetRef``:
the API group, the kind and the name, in the same namespace), and what a sync held for it records. Such a
sync still decides (its history and its proposal go on, ``explain`` shows what it would do: a shadow, as a
dry run is), but writes no scale: ScalingActive False, reason ``AnotherAutoscaler``, its message naming the
other object, and a Warning Event when the hold begins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from autoscaler.core import conditions as c
from autoscaler.core.conditions import Condition, find_condition, set_condition
from autoscaler.core.decision import WARNING, Decision, Event

ANOTHER_AUTOSCALER = "AnotherAutoscaler"  # ScalingActive's reason, the Event's reason, the metric's reason
MSG_ANOTHER_AUTOSCALER = "{} scales this workload: no scale is written while it does (a shadow until the cut-over)"


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


def held_for(decision: Decision, previous: tuple[Condition, ...], other: str, now: float) -> Decision:
    """``decision`` as a sync held for ``other`` records it: its proposal kept (not written), ScalingActive
    False with ``other`` named, and an Event when the hold begins or names another object (``previous``:
    the conditions the sync started from)."""
    message = MSG_ANOTHER_AUTOSCALER.format(other)
    conditions = set_condition(decision.conditions, c.SCALING_ACTIVE, c.FALSE, ANOTHER_AUTOSCALER, message, now)
    before = find_condition(previous, c.SCALING_ACTIVE)
    events = decision.events
    if before is None or before.reason != ANOTHER_AUTOSCALER or before.message != message:
        events = (*events, Event(WARNING, ANOTHER_AUTOSCALER, message))
    return replace(decision, conditions=conditions, events=events, error=message)


def is_held(decision: Decision) -> bool:
    """Whether ``decision`` was held for another autoscaler (:func:`held_for`)."""
    active = find_condition(decision.conditions, c.SCALING_ACTIVE)
    return active is not None and active.status == c.FALSE and active.reason == ANOTHER_AUTOSCALER
