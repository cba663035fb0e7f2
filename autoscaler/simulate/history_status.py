"""A scenario's ``history`` (the decision history before the first step), and how a scenario's times are read.

Apart from :mod:`autoscaler.simulate.scenario` because it is the state a target starts from, not what its
steps observe.
"""

from __future__ import annotations

from autoscaler.core.history import DecisionHistory, Recommendation, ScaleEvent
from autoscaler.values.fields import Obj

MAX_TIME = 1e15  # seconds; anything larger is a typo, not a time


def scenario_time(obj: Obj, key: str, *, required: bool = False, default: float | None = None) -> float | None:
    """A time in seconds (relative to time 0), bounded by :data:`MAX_TIME`."""
    return obj.number(key, required=required, default=default, minimum=-MAX_TIME, maximum=MAX_TIME)


def read_history(obj: Obj | None) -> DecisionHistory | None:
    if obj is None:
        return None
    recs: list[Recommendation] = []
    for path, element in obj.items("recommendations"):
        rec = Obj.of(element, path, obj.errors)
        if rec is None:
            continue
        replicas = rec.integer("replicas", required=True, minimum=0)
        at = scenario_time(rec, "at", required=True)
        rec.finish()
        if replicas is not None and at is not None:
            recs.append(Recommendation(replicas, at))
    up = _events(obj, "scaleUpEvents")
    down = _events(obj, "scaleDownEvents")
    obj.finish()
    return DecisionHistory(tuple(recs), up, down)


def _events(obj: Obj, key: str) -> tuple[ScaleEvent, ...]:
    events: list[ScaleEvent] = []
    for path, element in obj.items(key):
        event = Obj.of(element, path, obj.errors)
        if event is None:
            continue
        change = event.integer("change", required=True, minimum=0)
        at = scenario_time(event, "at", required=True)
        outdated = event.boolean("outdated", default=False)
        event.finish()
        if change is not None and at is not None:
            events.append(ScaleEvent(change, at, bool(outdated)))
    return tuple(events)
