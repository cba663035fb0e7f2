"""Normalizing a metric proposal: stabilization windows, rate limits and min/max clamping.

Two paths, as upstream (``horizontal.go``):

* :func:`normalize_legacy` when the spec has no ``behavior`` — scale-down stabilization over the
  controller's window (``stabilizeRecommendation``), then ``convertDesiredReplicasWithRules``
  (scale-up capped at max(2 × current, 4));
* :func:`normalize_with_behavior` — stabilization in both directions
  (``stabilizeRecommendationWithBehaviors``), then the policies
  (``convertDesiredReplicasWithBehaviorRate``).

Both record the proposal in the history and say which window or policy bound the result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from autoscaler.core import conditions as c
from autoscaler.core.gomath import MAX_INT32, MIN_INT32, clamp_int32, trunc_to_int32
from autoscaler.core.history import DecisionHistory, Recommendation, ScaleEvent
from autoscaler.core.settings import ControllerSettings, Tolerances
from autoscaler.core.spec import Behavior, PolicyType, ScalingPolicy, ScalingRules, SelectPolicy, TargetSpec

LEGACY_SCALE_UP_FACTOR = 2.0
LEGACY_SCALE_UP_MINIMUM = 4.0


@dataclass(slots=True, init=False, unsafe_hash=True)
class PolicyLimit:
    """One policy's evaluation: replicas at the start of its period and the count it allows."""

    policy: Final[ScalingPolicy]
    period_start_replicas: Final[int]
    allowed: Final[int]

    def __init__(self, policy: ScalingPolicy, period_start_replicas: int, allowed: int) -> None:
        self.policy = policy
        self.period_start_replicas = period_start_replicas
        self.allowed = allowed


@dataclass(slots=True, init=False, unsafe_hash=True)
class RateLimit:
    """The bound the rate rules put on one direction, and how it was reached."""

    direction: Final[str]  # "up" or "down"
    bound: Final[int]  # the most (up) / fewest (down) replicas allowed
    select_policy: Final[SelectPolicy | None]  # None on the legacy path
    policies: Final[tuple[PolicyLimit, ...]]

    def __init__(
        self,
        direction: str,
        bound: int,
        select_policy: SelectPolicy | None,
        policies: tuple[PolicyLimit, ...] = (),
    ) -> None:
        self.direction = direction
        self.bound = bound
        self.select_policy = select_policy
        self.policies = policies


@dataclass(slots=True, init=False, unsafe_hash=True)
class Normalization:
    proposal: Final[int]
    stabilized: Final[int]
    final: Final[int]
    able_reason: Final[str]
    able_message: Final[str]
    limit_reason: Final[str]
    limit_message: Final[str]
    history: Final[DecisionHistory]
    up_window: Final[float | None]  # seconds; None on the legacy path (no up window)
    down_window: Final[float]
    binding_recommendation: Final[Recommendation | None]
    rate_limit: Final[RateLimit | None]

    def __init__(
        self,
        proposal: int,
        stabilized: int,
        final: int,
        able_reason: str,
        able_message: str,
        limit_reason: str,
        limit_message: str,
        history: DecisionHistory,
        up_window: float | None,
        down_window: float,
        binding_recommendation: Recommendation | None = None,
        rate_limit: RateLimit | None = None,
    ) -> None:
        self.proposal = proposal
        self.stabilized = stabilized
        self.final = final
        self.able_reason = able_reason
        self.able_message = able_message
        self.limit_reason = limit_reason
        self.limit_message = limit_message
        self.history = history
        self.up_window = up_window
        self.down_window = down_window
        self.binding_recommendation = binding_recommendation
        self.rate_limit = rate_limit

    @property
    def limited(self) -> bool:
        return self.final != self.stabilized


def legacy_scale_up_limit(current_replicas: int) -> int:
    """``calculateScaleUpLimit``: ``int32(max(2.0 × current, 4.0))``."""
    return trunc_to_int32(max(LEGACY_SCALE_UP_FACTOR * float(current_replicas), LEGACY_SCALE_UP_MINIMUM))


def normalize_legacy(
    history: DecisionHistory,
    current: int,
    proposal: int,
    min_replicas: int,
    max_replicas: int,
    window: float,
    now: float,
) -> Normalization:
    """``normalizeDesiredReplicas``: the path taken when ``behavior`` is absent."""
    cutoff = now - window
    stabilized = proposal
    binding: Recommendation | None = None
    old_index: int | None = None
    for index, rec in enumerate(history.recommendations):
        if rec.at < cutoff:
            old_index = index
        elif rec.replicas > stabilized:
            stabilized = rec.replicas
            binding = rec
    history = _record(history, old_index, Recommendation(proposal, now))
    if stabilized != proposal:
        able = ("ScaleDownStabilized", c.MSG_SCALE_DOWN_STABILIZED)
    else:
        able = ("ReadyForNewScale", c.MSG_READY_FOR_NEW_SCALE)

    scale_up_limit = legacy_scale_up_limit(current)
    if max_replicas > scale_up_limit:
        upper, upper_reason = scale_up_limit, "ScaleUpLimit"
    else:
        upper, upper_reason = max_replicas, "TooManyReplicas"
    if stabilized < min_replicas:
        final, reason = min_replicas, "TooFewReplicas"
    elif stabilized > upper:
        final, reason = upper, upper_reason
    else:
        final, reason = stabilized, "DesiredWithinRange"
    rate = RateLimit("up", scale_up_limit, None) if reason == "ScaleUpLimit" else None
    return Normalization(
        proposal=proposal,
        stabilized=stabilized,
        final=final,
        able_reason=able[0],
        able_message=able[1],
        limit_reason=reason,
        limit_message=c.LIMIT_MESSAGES[reason],
        history=history,
        up_window=None,
        down_window=window,
        binding_recommendation=binding,
        rate_limit=rate,
    )


def normalize_with_behavior(
    history: DecisionHistory,
    behavior: Behavior,
    current: int,
    proposal: int,
    min_replicas: int,
    max_replicas: int,
    default_down_window: float,
    now: float,
) -> Normalization:
    """``normalizeDesiredReplicasWithBehaviors``."""
    up_window = float(behavior.scale_up.stabilization_window_seconds or 0)
    down_seconds = behavior.scale_down.stabilization_window_seconds
    down_window = float(down_seconds) if down_seconds is not None else default_down_window
    stabilized, binding, history = _stabilize_both(history, current, proposal, up_window, down_window, now)
    if stabilized != proposal:
        if proposal >= current:
            able = ("ScaleUpStabilized", c.MSG_SCALE_UP_STABILIZED)
        else:
            able = ("ScaleDownStabilized", c.MSG_SCALE_DOWN_STABILIZED)
    else:
        able = ("ReadyForNewScale", c.MSG_READY_FOR_NEW_SCALE)
    final, reason, rate = _apply_rate_limits(history, behavior, current, stabilized, min_replicas, max_replicas, now)
    return Normalization(
        proposal=proposal,
        stabilized=stabilized,
        final=final,
        able_reason=able[0],
        able_message=able[1],
        limit_reason=reason,
        limit_message=c.LIMIT_MESSAGES[reason],
        history=history,
        up_window=up_window,
        down_window=down_window,
        binding_recommendation=binding,
        rate_limit=rate,
    )


def _stabilize_both(
    history: DecisionHistory, current: int, proposal: int, up_window: float, down_window: float, now: float
) -> tuple[int, Recommendation | None, DecisionHistory]:
    """``stabilizeRecommendationWithBehaviors``: scale up only to the lowest recommendation of the up
    window, down only to the highest of the down window; both cutoffs are exclusive."""
    up_cutoff = now - up_window
    down_cutoff = now - down_window
    up_bound, up_binding = proposal, None
    down_bound, down_binding = proposal, None
    old_index: int | None = None
    for index, rec in enumerate(history.recommendations):
        if rec.at > up_cutoff and rec.replicas < up_bound:
            up_bound, up_binding = rec.replicas, rec
        if rec.at > down_cutoff and rec.replicas > down_bound:
            down_bound, down_binding = rec.replicas, rec
        if rec.at < up_cutoff and rec.at < down_cutoff:
            old_index = index
    result = min(max(current, up_bound), down_bound)
    # The recommendation that held the result back: the highest one when it stays above the
    # proposal, the lowest one when it stays below.
    binding = down_binding if result > proposal else up_binding if result < proposal else None
    return result, binding, _record(history, old_index, Recommendation(proposal, now))


def _record(history: DecisionHistory, old_index: int | None, rec: Recommendation) -> DecisionHistory:
    """Store a recommendation, reusing the slot of an expired one as upstream does."""
    recs = list(history.recommendations)
    if old_index is None:
        recs.append(rec)
    else:
        recs[old_index] = rec
    return DecisionHistory(tuple(recs), history.scale_up_events, history.scale_down_events)


def _changed_in_period(events: Sequence[ScaleEvent], period_seconds: int, now: float) -> int:
    """``getReplicasChangePerPeriod``: events strictly inside the last ``period_seconds``."""
    cutoff = now - period_seconds
    return sum(e.change for e in events if e.at > cutoff)


def _policy_limits(
    history: DecisionHistory, rules: ScalingRules, current: int, direction: str, now: float
) -> tuple[int, tuple[PolicyLimit, ...]]:
    """``calculateScaleUpLimitWithScalingRules`` / ``calculateScaleDownLimitWithBehaviors``."""
    if rules.select_policy is SelectPolicy.DISABLED:
        return current, ()
    up = direction == "up"
    # Max (the default) allows the largest change: the highest bound up, the lowest bound down.
    take_max = (rules.select_policy is SelectPolicy.MAX) == up
    result = MIN_INT32 if take_max else MAX_INT32
    limits: list[PolicyLimit] = []
    for policy in rules.policies:
        added = _changed_in_period(history.scale_up_events, policy.period_seconds, now)
        removed = _changed_in_period(history.scale_down_events, policy.period_seconds, now)
        start = current - added + removed
        if policy.type is PolicyType.PODS:
            proposed = clamp_int32(start + policy.value if up else start - policy.value)
        elif up:
            # Rounded up, or a small target could never grow (float64 as upstream: 100 × 1.1 → 111).
            proposed = clamp_int32(math.ceil(float(start) * (1 + float(policy.value) / 100)))
        else:
            proposed = trunc_to_int32(float(start) * (1 - float(policy.value) / 100))
        limits.append(PolicyLimit(policy, start, proposed))
        result = max(result, proposed) if take_max else min(result, proposed)
    return result, tuple(limits)


def _apply_rate_limits(
    history: DecisionHistory,
    behavior: Behavior,
    current: int,
    desired: int,
    min_replicas: int,
    max_replicas: int,
    now: float,
) -> tuple[int, str, RateLimit | None]:
    """``convertDesiredReplicasWithBehaviorRate``. No clamping at all when desired == current."""
    if desired > current:
        limit, policies = _policy_limits(history, behavior.scale_up, current, "up", now)
        limit = max(limit, current)  # old scale-downs never force a scale-up to shrink
        rate = RateLimit("up", limit, behavior.scale_up.select_policy, policies)
        if max_replicas > limit:
            bound, reason = limit, "ScaleUpLimit"
        else:
            bound, reason = max_replicas, "TooManyReplicas"
        if desired > bound:
            return bound, reason, rate
        return desired, "DesiredWithinRange", rate
    if desired < current:
        limit, policies = _policy_limits(history, behavior.scale_down, current, "down", now)
        limit = min(limit, current)
        rate = RateLimit("down", limit, behavior.scale_down.select_policy, policies)
        if min_replicas < limit:
            bound, reason = limit, "ScaleDownLimit"
        else:
            bound, reason = min_replicas, "TooFewReplicas"
        if desired < bound:
            return bound, reason, rate
        return desired, "DesiredWithinRange", rate
    return desired, "DesiredWithinRange", None


def tolerances_for(spec: TargetSpec, settings: ControllerSettings) -> Tolerances:
    """``tolerancesForHpa``: the controller's tolerances, overridden per direction by ``behavior``."""
    tolerances = settings.tolerances
    if spec.behavior is None:
        return tolerances
    up = spec.behavior.scale_up.tolerance
    down = spec.behavior.scale_down.tolerance
    if up is None and down is None:
        return tolerances  # the common case: no new record a sync
    return Tolerances(
        scale_down=down.as_float() if down is not None else tolerances.scale_down,
        scale_up=up.as_float() if up is not None else tolerances.scale_up,
    )
