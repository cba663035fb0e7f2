"""Hypothesis strategies and one-call runs for the HVPA engine's property tests (test_*properties.py here):
random specs with growing intervals, overlaps and bases, and a decision from pods of one request and a VPA total.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from autoscaler.core.hvpa.decision import HvpaDecision, HvpaObservation, HvpaState, VpaObservation, decide_hvpa
from autoscaler.core.hvpa.intervals import IntervalProblem, effective_intervals
from autoscaler.core.hvpa.spec import (
    ChangeParams,
    ContainerPolicy,
    Extrapolation,
    HvpaSpec,
    ScaleType,
    ScalingInterval,
    Source,
)
from autoscaler.core.hvpa.vpa import ContainerRecommendation, VpaCondition, VpaStatus
from autoscaler.core.observation import ContainerInfo, PodInfo
from autoscaler.core.spec import CrossVersionObjectReference, TargetSpec
from autoscaler.values.quantity import Quantity

FREE = ScaleType(min_change={"cpu": ChangeParams(Fraction(0))})  # Auto, no stabilization, no minChange


MILLI = Fraction(1, 1000)


@st.composite
def interval_lists(draw: st.DrawFn) -> tuple[ScalingInterval, ...]:
    """1–4 intervals with growing maxReplicas and non-decreasing per-pod CPU (so every MAX grows)."""
    count = draw(st.integers(1, 4))
    top, per_pod = 0, 0
    result = []
    for index in range(count):
        top += draw(st.integers(1, 3))
        per_pod += draw(st.integers(0 if index else 50, 2000))
        horizontal = index > 0 and draw(st.integers(0, 4)) == 0
        result.append(
            ScalingInterval(
                top, {"cpu": per_pod * MILLI}, Extrapolation.HORIZONTAL_ONLY if horizontal else Extrapolation.LINEAR
            )
        )
    return tuple(result)


change_params = st.one_of(
    st.none(),
    st.builds(ChangeParams, st.integers(0, 500).map(lambda m: m * MILLI), st.none()),
    st.builds(ChangeParams, st.none(), st.integers(0, 60)),
    st.builds(ChangeParams, st.integers(0, 500).map(lambda m: m * MILLI), st.integers(0, 60)),
)


@st.composite
def hvpa_specs(draw: st.DrawFn, *, bounds: bool = False, gates: ScaleType | None = FREE) -> TargetSpec:
    intervals = draw(interval_lists())
    overlap, base = draw(change_params), draw(change_params)
    policy = ContainerPolicy("main", controlled_resources=("cpu",))
    if bounds:
        low = draw(st.integers(1, 500))
        high = low + draw(st.integers(0, 8000))
        policy = ContainerPolicy(
            "main",
            controlled_resources=("cpu",),
            min_allowed={"cpu": Quantity.from_milli(low)},
            max_allowed={"cpu": Quantity.from_milli(high)},
        )
    scale = gates if gates is not None else FREE
    hvpa = HvpaSpec(
        intervals,
        {"cpu": overlap} if overlap else {},
        {"cpu": base} if base else {},
        {},
        scale,
        scale,
        None,
        None,
        (policy,),
        (Source.VPA,),
    )
    max_replicas = (intervals[-1].max_replicas or 1) + draw(st.integers(0, 2))
    return TargetSpec(CrossVersionObjectReference("Deployment", "api"), max_replicas, 1, hvpa=hvpa)


def intervals_of(spec: TargetSpec) -> Any:
    assert spec.hvpa is not None
    result = effective_intervals(spec.hvpa, "cpu", spec.hvpa.containers[0], spec.min_replicas, spec.max_replicas)
    assert not isinstance(result, IntervalProblem)
    return result


PROVIDED = (VpaCondition("RecommendationProvided", "True"),)


def run(
    spec: TargetSpec,
    replicas: int,
    request: Fraction,
    total: Fraction,
    *,
    state: HvpaState | None = None,
    now: float = 0.0,
    clock: float | None = None,
) -> HvpaDecision:
    """One decision with ``replicas`` pods of ``request`` CPU and a VPA whose total is ``total``."""
    milli = int(request * 1000)
    assume(milli * MILLI == request)
    pod_list = [PodInfo(f"p{i}", containers=(ContainerInfo("main", {"cpu": milli}),)) for i in range(replicas)]
    status = VpaStatus((ContainerRecommendation("main", {"cpu": total / replicas}),), PROVIDED)
    return decide_hvpa(
        spec, HvpaObservation(replicas, pod_list, VpaObservation(status), clock=clock), None, state or HvpaState(), now
    )


totals = st.integers(1, 60_000).map(lambda m: m * MILLI)
