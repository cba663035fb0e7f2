"""Per-pod requests (step 5) and limits (step 6) of one (container, resource) pair.

* Same count (d = c): pure vertical scaling, P = T / c; no base adjustment, no hysteresis.
* New count (d ≠ c): the *adjusted recommendation* A (A13): the base that the current pods carry is
  taken out of the total, the rest is shared among the d pods, and each new pod gets its base back:
  ``raw = T − base(req) × c``, ``A = raw/d + base(raw/d)`` with ``base(v) = max(value, percentage × v)``
  over the configured parts; A = T/d when the resource has no base or raw ≤ 0.
* Scale-out max rule (A15): while the pair's total is not falling, a scale-out never shrinks a pod:
  P = max(req, A). Scale-in postponement (A14) is decided across all pairs by the caller; a held pair
  gets P = max(req, T/c), i.e. no vertical shrink while the replicas are held.
* ``horizontalOnly`` intervals keep pods at their ``maxResources`` (A29).
* P is clamped to the user's bounds, then rounded up to 1m CPU / 1 byte of memory (A22).
* Limits (A20, hvpa-controller's rules otherwise): no limit stays no limit; a limit equal to the
  request (or no request) follows the new request; without gap parameters the limit keeps its
  ratio to the request; with them it is ``max(P + value/d, P × (1 + percentage/100))`` — the gap
  ``value`` is a total shared by the d pods. With ``controlledValues: RequestsOnly`` the limit is
  left alone and the request is capped at it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from autoscaler.core.hvpa.current import CurrentResource
from autoscaler.core.hvpa.intervals import EffectiveInterval
from autoscaler.core.hvpa.recommend import clamp_to_policy
from autoscaler.core.hvpa.spec import CPU, ChangeParams, ContainerPolicy, ControlledValues

# Rounding grids (A22): CPU to a millicore, memory to a byte.
GRID = {CPU: Fraction(1, 1000)}
BYTE = Fraction(1)

VERTICAL = "vertical"  # d = c: P = T/c
HORIZONTAL_ONLY = "horizontalOnly"  # the interval fixes the pod size
ADJUSTED = "adjusted"  # d ≠ c: P = A
KEPT = "max(current, adjusted)"  # scale-out max rule
HELD = "held"  # scale-in postponed: P = max(req, T/c)


def adjusted_recommendation(
    total: Fraction, request: Fraction, current: int, desired: int, base: ChangeParams | None
) -> Fraction:
    """A for ``desired`` pods (A13)."""
    if base is None:
        return total / desired
    raw = total - base.larger(request) * current
    if raw <= 0:
        return total / desired
    share = raw / desired
    return share + base.larger(share)


def proposed_value(
    interval: EffectiveInterval | None,
    total: Fraction,
    request: Fraction,
    current: int,
    desired: int,
    base: ChangeParams | None,
) -> tuple[Fraction, str]:
    """The per-pod value ``desired`` pods would get, before the max rule and the bounds."""
    if interval is not None and interval.horizontal_only:
        return interval.per_pod_max, HORIZONTAL_ONLY
    if desired == current:
        return total / current, VERTICAL
    return adjusted_recommendation(total, request, current, desired, base), ADJUSTED


@dataclass(frozen=True, slots=True)
class Sizing:
    per_pod: Fraction  # P: exact, within the user's bounds
    rule: str
    adjusted: Fraction | None = None  # A, when the count changes


def size_pair(
    total: Fraction,
    request: Fraction,
    policy: ContainerPolicy,
    resource: str,
    current: int,
    desired: int,
    interval: EffectiveInterval | None,
    base: ChangeParams | None,
    *,
    held: bool,
    max_rule: bool,
) -> Sizing:
    """P for one pair. ``interval`` is the effective interval of the count the pods will run at;
    ``max_rule`` says whether the scale-out max rule may apply (c is inside the intervals, A8)."""
    if held:
        value, rule = proposed_value(interval, total, request, current, current, base)
        return Sizing(clamp_to_policy(max(request, value), policy, resource), HELD)
    value, rule = proposed_value(interval, total, request, current, desired, base)
    adjusted = value if desired != current else None
    if desired > current and max_rule and total >= current * request and request > value:
        value, rule = request, KEPT
    return Sizing(clamp_to_policy(value, policy, resource), rule, adjusted)


def new_limit(
    per_pod: Fraction,
    current: CurrentResource,
    desired: int,
    gap: ChangeParams | None,
    controlled_values: ControlledValues,
) -> Fraction | None:
    limit = current.limit
    if limit is None:
        return None
    if controlled_values is ControlledValues.REQUESTS_ONLY:
        return limit
    if current.request == 0 or current.request == limit:
        return per_pod
    if gap is None:
        return limit * per_pod / current.request
    candidates = []
    if gap.value is not None:
        candidates.append(per_pod + gap.value / desired)
    if gap.percentage is not None:
        candidates.append(per_pod * (1 + Fraction(gap.percentage, 100)))
    return max(candidates)


def round_up(resource: str, value: Fraction) -> Fraction:
    grid = GRID.get(resource, BYTE)
    return math.ceil(value / grid) * grid


def round_request(resource: str, value: Fraction, policy: ContainerPolicy) -> Fraction:
    """Rounded up to the grid, but never past a maxAllowed that is itself off the grid."""
    rounded = round_up(resource, value)
    high = policy.bound("max", resource)
    if high is not None and rounded > high:
        grid = GRID.get(resource, BYTE)
        rounded = math.floor(high / grid) * grid
    return rounded
