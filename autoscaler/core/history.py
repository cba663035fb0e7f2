"""The decision history a target carries from one sync to the next.

Upstream keeps this in controller memory (and loses it on restart); here it is plain data in and
out of every decision, so the service can persist it in the target's status and a restart changes
nothing. ``None`` (no history at all) and an empty history are different, as upstream's tests
distinguish them: a target with no history gets the current replica count recorded as its first
recommendation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from autoscaler.core.spec import Behavior, ScalingRules


@dataclass(slots=True, init=False, unsafe_hash=True)
class Recommendation:
    replicas: Final[int]
    at: Final[float]

    def __init__(self, replicas: int, at: float) -> None:
        self.replicas = replicas
        self.at = at


@dataclass(slots=True, init=False, unsafe_hash=True)
class ScaleEvent:
    """A successful scale: ``change`` is the (positive) number of replicas added or removed.

    ``outdated`` marks an event older than the direction's longest policy period when the last
    event was stored; upstream reuses such slots. Counting uses only the timestamps.
    """

    change: Final[int]
    at: Final[float]
    outdated: Final[bool]

    def __init__(self, change: int, at: float, outdated: bool = False) -> None:
        self.change = change
        self.at = at
        self.outdated = outdated


@dataclass(slots=True, init=False, unsafe_hash=True)
class ScaleIntent:
    """A scale write decided and about to be sent: ``previous`` → ``replicas`` replicas, decided at ``at``
    (the time its scale event gets, should it land) for ``reason`` (the SuccessfulRescale Event's).

    The service records it in the status before it writes the scale (``status.pendingScale``), so that a
    crash at any point of the write leaves the rate limits a scale event to count: the count the workload
    has when the status is read back tells whether the write landed
    (:func:`~autoscaler.core.rescale.resolve_scale_intent`)."""

    previous: Final[int]
    replicas: Final[int]
    at: Final[float]
    reason: Final[str]

    def __init__(self, previous: int, replicas: int, at: float, reason: str = "") -> None:
        self.previous = previous
        self.replicas = replicas
        self.at = at
        self.reason = reason


@dataclass(slots=True, init=False, unsafe_hash=True)
class DecisionHistory:
    recommendations: Final[tuple[Recommendation, ...]]
    scale_up_events: Final[tuple[ScaleEvent, ...]]
    scale_down_events: Final[tuple[ScaleEvent, ...]]

    def __init__(
        self,
        recommendations: tuple[Recommendation, ...] = (),
        scale_up_events: tuple[ScaleEvent, ...] = (),
        scale_down_events: tuple[ScaleEvent, ...] = (),
    ) -> None:
        self.recommendations = recommendations
        self.scale_up_events = scale_up_events
        self.scale_down_events = scale_down_events


def with_initial_recommendation(history: DecisionHistory | None, current_replicas: int, now: float) -> DecisionHistory:
    """``recordInitialRecommendation``: a target seen for the first time remembers its current size."""
    if history is None:
        return DecisionHistory(recommendations=(Recommendation(current_replicas, now),))
    return history


def record_scale_event(
    history: DecisionHistory, behavior: Behavior | None, previous: int, new: int, now: float
) -> DecisionHistory:
    """``storeScaleEvent``: remember a successful scale for the rate limits (behavior path only)."""
    if behavior is None or new == previous:
        return history
    if new > previous:
        events = _store(history.scale_up_events, behavior.scale_up, new - previous, now)
        return replace(history, scale_up_events=events)
    events = _store(history.scale_down_events, behavior.scale_down, previous - new, now)
    return replace(history, scale_down_events=events)


def _store(events: tuple[ScaleEvent, ...], rules: ScalingRules, change: int, now: float) -> tuple[ScaleEvent, ...]:
    longest_period = max((p.period_seconds for p in rules.policies), default=0)
    cutoff = now - longest_period
    marked = [replace(e, outdated=True) if e.at < cutoff else e for e in events]
    slot = None
    for index, event in enumerate(marked):
        if event.outdated:
            slot = index  # the last outdated slot is reused, as upstream does
    new_event = ScaleEvent(change, now)
    if slot is None:
        marked.append(new_event)
    else:
        marked[slot] = new_event
    return tuple(marked)
