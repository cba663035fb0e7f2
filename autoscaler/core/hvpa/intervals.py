"""Effective scaling intervals (steps 1–2) and the total → replicas mapping with hysteresis (step 4).

An *effective interval* is one replica count r with the largest total it takes while scaling up,
MAX(r), and the smallest total it keeps while scaling down, MIN(r). Totals are per container and
resource (A26): one pod's request times the replicas.

* ``scalingIntervals[j]`` covers the counts from the previous ``maxReplicas + 1`` (the target's
  minReplicas for the first) up to its own ``maxReplicas``, inclusive (A2). Its ``maxResources`` are per
  pod (A1), defaulting to the container's maxAllowed (A24).
* ``linear`` splits the total range from the previous MAX (0 for the first interval) to
  ``maxReplicas × maxResources`` into equal steps, one per count (A3); ``horizontalOnly`` keeps the
  pods at ``maxResources``, so MAX(r) = r × maxResources (A29).
* MIN of the lowest count is ``minAllowed × r`` (or 0, A4); above it, MIN(r) = MAX(r−1) minus the
  overlap, the larger of ``value`` and ``percentage`` % of MAX(r−1), floored at 0 (A5).
* Counts above the target's maxReplicas are dropped (A25).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from autoscaler.core.hvpa.spec import ContainerPolicy, Extrapolation, HvpaSpec, amount_text


@dataclass(frozen=True, slots=True)
class EffectiveInterval:
    replicas: int
    max_total: Fraction
    min_total: Fraction
    per_pod_max: Fraction  # maxResources of the scalingIntervals entry it comes from
    horizontal_only: bool  # pods stay at per_pod_max (A29)
    index: int  # which scalingIntervals entry


@dataclass(frozen=True, slots=True)
class IntervalProblem:
    """Why no effective intervals can be built: ``field`` of ``scalingIntervals[index]``."""

    index: int
    field: str
    message: str


def _max_resource(spec: HvpaSpec, index: int, resource: str, policy: ContainerPolicy) -> Fraction | IntervalProblem:
    explicit = spec.scaling_intervals[index].max_resources.get(resource)
    if explicit is not None:
        return explicit
    fallback = policy.bound("max", resource)
    if fallback is not None:
        return fallback
    who = "the default container policy" if policy.name == "*" else f'container "{policy.name}"'
    return IntervalProblem(
        index,
        f"maxResources.{resource}",
        f"Required value: maxResources.{resource} is not set and {who} has no "
        f"maxAllowed.{resource} to default to (A24)",
    )


def effective_intervals(
    spec: HvpaSpec, resource: str, policy: ContainerPolicy, min_replicas: int, max_replicas: int
) -> tuple[EffectiveInterval, ...] | IntervalProblem:
    """The effective intervals of one (container, resource) pair, lowest count first."""
    built: list[tuple[int, Fraction, Fraction, bool, int]] = []  # (r, MAX, per-pod max, horizontalOnly, index)
    start = min_replicas
    previous_max = Fraction(0)
    for index, interval in enumerate(spec.scaling_intervals):
        top = interval.max_replicas if interval.max_replicas is not None else max_replicas
        if top < start:
            defaulted = (
                "" if interval.max_replicas is not None else f" (it defaults to the target's maxReplicas, {top})"
            )
            what = (
                f"must be at least the target's minReplicas ({start})"
                if index == 0
                else f"must be greater than scalingIntervals[{index - 1}].maxReplicas ({start - 1})"
            )
            return IntervalProblem(index, "maxReplicas", f"{what}{defaulted} (A28)")
        per_pod = _max_resource(spec, index, resource, policy)
        if isinstance(per_pod, IntervalProblem):
            return per_pod
        count = top - start + 1
        horizontal_only = interval.extrapolation is Extrapolation.HORIZONTAL_ONLY
        if horizontal_only:
            maxima = [r * per_pod for r in range(start, top + 1)]
        else:
            upper = top * per_pod
            maxima = [previous_max + k * (upper - previous_max) / count for k in range(1, count + 1)]
        if maxima[0] <= previous_max:
            replicas = start if horizontal_only else top
            return IntervalProblem(
                index,
                f"maxResources.{resource}",
                f"must make the maximum total grow: {replicas} × {amount_text(resource, per_pod)} = "
                f"{amount_text(resource, replicas * per_pod)} is not above "
                f"{amount_text(resource, previous_max)}, the maximum total below it (A28)",
            )
        built.extend((start + k, m, per_pod, horizontal_only, index) for k, m in enumerate(maxima))
        previous_max = maxima[-1]
        start = top + 1
    built = [b for b in built if b[0] <= max_replicas]  # A25
    overlap = spec.scaling_intervals_overlap.get(resource)
    result: list[EffectiveInterval] = []
    for position, (replicas, max_total, per_pod, horizontal_only, index) in enumerate(built):
        if position == 0:
            floor = policy.bound("min", resource)
            min_total = floor * replicas if floor is not None else Fraction(0)  # A4
        else:
            below = built[position - 1][1]
            amount = overlap.larger(below) if overlap is not None else Fraction(0)
            min_total = max(Fraction(0), below - amount)  # A5
        result.append(
            EffectiveInterval(
                replicas=replicas,
                max_total=max_total,
                min_total=min_total,
                per_pod_max=per_pod,
                horizontal_only=horizontal_only,
                index=index,
            )
        )
    return tuple(result)


def natural_replicas(intervals: Sequence[EffectiveInterval], total: Fraction) -> int:
    """N(T): the smallest count whose MAX holds ``total``; the last count above the last MAX (A9)."""
    for interval in intervals:
        if total <= interval.max_total:
            return interval.replicas
    return intervals[-1].replicas


def desired_for_total(intervals: Sequence[EffectiveInterval], current: int, total: Fraction) -> int:
    """Step 4 for one pair: up past MAX(c) ignoring the overlap; stay while MIN(c) ≤ T ≤ MAX(c) (A6);
    below MIN(c), the largest lower count whose MIN holds T (A7). Outside the intervals: N(T) (A8)."""
    here = interval_at(intervals, current)
    if here is None:
        return natural_replicas(intervals, total)
    if total > here.max_total:
        return natural_replicas(intervals, total)
    if total >= here.min_total:
        return current
    for interval in reversed(intervals):
        if interval.replicas < current and total >= interval.min_total:
            return interval.replicas
    return intervals[0].replicas


def interval_at(intervals: Sequence[EffectiveInterval], replicas: int) -> EffectiveInterval | None:
    first = intervals[0].replicas
    if first <= replicas < first + len(intervals):
        return intervals[replicas - first]
    return None
