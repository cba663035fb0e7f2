"""What the activation step of a sync found and did (:mod:`autoscaler.core.activation`), as a
:class:`~autoscaler.core.decision.Decision` carries it: for the explanation, the Events and the state the
next sync starts from (``last_active_time``, persisted as ``status.lastActiveTime``).

A module of its own, with no import of the decision, because the decision refers to it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Action(enum.StrEnum):
    """What activation did with the HPA engine's decision."""

    WAKE = "wake"  # active below max(minReplicas, 1): scaled up to it, whoever set the count
    IDLE = "idle"  # inactive past the cooldown: scaled to idleReplicas
    COOLING_DOWN = "cooling-down"  # inactive, the cooldown not over: the HPA engine's decision stands
    STAY_IDLE = "stay-idle"  # at or below idleReplicas and not active: stays there
    NONE = "none"  # active with enough replicas, or activity unknown above idle: the decision stands


@dataclass(frozen=True, slots=True)
class ActivityReading:
    """One Object/External metric as activation read it: its value (milli; None when it failed, with
    ``error`` saying why) against its activation threshold (milli)."""

    name: str
    value: int | None
    threshold: int
    error: str | None = None

    @property
    def active(self) -> bool:
        """KEDA's rule: strictly greater than the threshold."""
        return self.value is not None and self.value > self.threshold


@dataclass(frozen=True, slots=True)
class ActivationOutcome:
    """``active``: True when a metric is above its threshold, False when every one was read and none is,
    None when none is above and one failed (a failed metric never makes a target inactive).
    ``cooldown_ends``: while inactive, when the target may go idle (None: at once)."""

    active: bool | None
    action: Action
    readings: tuple[ActivityReading, ...]
    last_active_time: float | None
    cooldown_ends: float | None = None
    floor: int = 1  # max(minReplicas, 1)
    idle_replicas: int = 0

    @property
    def triggers(self) -> tuple[str, ...]:
        """The metrics above their thresholds (KEDA's active triggers)."""
        return tuple(r.name for r in self.readings if r.active)

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.readings if r.value is None)
