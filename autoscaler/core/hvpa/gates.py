"""Which way an action goes and whether its ScaleType lets it through (step 7).

One direction for the whole action (A16): *up* if the count rises or any pair's total d × P rises
above c × req; otherwise *down* if the count falls or any total falls; otherwise there is nothing to
do. The direction's ScaleType (``scaleUp`` or ``scaleDown``) gates the entire action, in this order:

1. ``updatePolicy.updateMode: Off`` → ``UpdatePolicy``;
2. less than ``stabilizationDuration`` since the last applied scaling (one timestamp for both
   directions, A27) → ``StabilizationWindow``; only in ``stabilizationMode: SinceLastScaling`` — a
   ``WindowMax`` direction has its window instead (:mod:`autoscaler.core.hvpa.recommendation_window`), and
   the caller passes no ``last_applied``;
3. ``updateMode: MaintenanceWindow`` while the clock is outside ``maintenanceTimeWindow`` (A19)
   → ``MaintenanceWindow``;
4. every pair's recommendation T within its threshold of the current total c × req (A17): the
   threshold is the *smaller* of ``value`` and ``percentage`` % of c × req, 200m CPU / 200M memory
   when the resource has no minChange; equality passes → ``MinChange``.

``ParadoxicalScaling`` is not a gate: it is reported when the scale-in postponement (step 5) leaves
nothing to change.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from autoscaler.core.hvpa.spec import DEFAULT_MIN_CHANGE, MaintenanceWindow, ScaleType, UpdateMode, amount_text
from autoscaler.core.hvpa.windows import in_window


class BlockReason(enum.StrEnum):
    UPDATE_POLICY = "UpdatePolicy"
    STABILIZATION_WINDOW = "StabilizationWindow"
    MAINTENANCE_WINDOW = "MaintenanceWindow"
    MIN_CHANGE = "MinChange"
    PARADOXICAL_SCALING = "ParadoxicalScaling"


class Direction(enum.StrEnum):
    UP = "up"
    DOWN = "down"


@dataclass(frozen=True, slots=True)
class PairChange:
    """One pair's totals for the direction and minChange: now, proposed, and the recommendation."""

    label: str
    resource: str
    current_total: Fraction  # c × req
    new_total: Fraction  # d × P (P as applied, i.e. rounded)
    recommendation: Fraction  # T


def direction(current: int, desired: int, changes: Sequence[PairChange]) -> Direction | None:
    if desired > current or any(c.new_total > c.current_total for c in changes):
        return Direction.UP
    if desired < current or any(c.new_total < c.current_total for c in changes):
        return Direction.DOWN
    return None


@dataclass(frozen=True, slots=True)
class Gate:
    reason: BlockReason | None
    detail: str = ""


def min_change_threshold(scale_type: ScaleType, resource: str, current_total: Fraction) -> Fraction:
    params = scale_type.min_change.get(resource)
    if params is None:
        return DEFAULT_MIN_CHANGE.get(resource, Fraction(0))
    return params.smaller(current_total)


def check_gates(
    scale_type: ScaleType,
    key: str,
    changes: Sequence[PairChange],
    *,
    now: float,
    last_applied: float | None,
    clock: Fraction | float | None,
    window: MaintenanceWindow | None,
) -> Gate:
    """The first gate of ``scale_type`` (the ScaleType at ``hvpa.<key>``) that blocks, if any."""
    mode = scale_type.update_mode
    if mode is UpdateMode.OFF:
        return Gate(BlockReason.UPDATE_POLICY, f"{key}.updatePolicy.updateMode is Off")
    if last_applied is not None and now - last_applied < scale_type.stabilization_seconds:
        return Gate(
            BlockReason.STABILIZATION_WINDOW,
            f"the last scaling was {now - last_applied:g}s ago, {key}.stabilizationDuration is "
            f"{scale_type.stabilization_text}",
        )
    if mode is UpdateMode.MAINTENANCE_WINDOW:
        if window is None or clock is None:
            return Gate(
                BlockReason.MAINTENANCE_WINDOW,
                "the time of day is unknown, so the maintenance window cannot be confirmed",
            )
        if not in_window(window, clock):
            return Gate(
                BlockReason.MAINTENANCE_WINDOW, f"outside the maintenance window {window.begin_text}–{window.end_text}"
            )
    small = []
    for change in changes:
        threshold = min_change_threshold(scale_type, change.resource, change.current_total)
        delta = abs(change.recommendation - change.current_total)
        if delta >= threshold:
            return Gate(None)
        small.append(
            f"{change.label} {amount_text(change.resource, delta)} < {amount_text(change.resource, threshold)}"
        )
    if small:
        return Gate(BlockReason.MIN_CHANGE, f"every total is within {key}.minChange: " + ", ".join(small))
    return Gate(None)
