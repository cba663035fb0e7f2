"""Properties of the HVPA engine that must hold for every configuration (hypothesis).

* the total → replicas mapping never decreases as the total grows (monotone), from any current count;
* no ratchet: a rise followed by the same fall ends at no more replicas than the start, unless the overlap
  keeps the higher count (the end total is within its scale-down band) — exactly so for a one-step rise and
  fall, except for a fall onto a horizontalOnly count whose fixed size would grow the pods (A14); along any
  path, and again when the round is repeated from where it ended, a higher end count is held only by the
  overlap or by a postponed scale-in (A14) whose A13 numbers say a pod would grow; once the pods have settled
  at the start total, the start state is back. Repeating a round from an unsettled end state may end higher
  than the first round did: with a percentage base the scale-in leaves pods below the A14 threshold
  (docs/hvpa.md, "What a rise and fall guarantees");
* per-pod requests always lie within the user's minAllowed/maxAllowed;
* a blocked decision changes nothing: same replicas, no write, the same state;
* the hvpa section's parser and the scenario's HVPA keys never fail with anything but a validation error.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from autoscaler.core.hvpa.decision import HvpaDecision, HvpaObservation, HvpaState, VpaObservation, decide_hvpa
from autoscaler.core.hvpa.intervals import IntervalProblem, desired_for_total, effective_intervals, interval_at
from autoscaler.core.hvpa.recommend import clamp_to_policy
from autoscaler.core.hvpa.spec import (
    ChangeParams,
    ContainerPolicy,
    Extrapolation,
    HvpaSpec,
    MaintenanceWindow,
    ScaleType,
    ScalingInterval,
    Source,
    UpdateMode,
)
from autoscaler.core.hvpa.vpa import ContainerRecommendation, VpaCondition, VpaStatus
from autoscaler.core.observation import ContainerInfo, PodInfo
from autoscaler.core.spec import CrossVersionObjectReference, TargetSpec
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.simulate.scenario import parse_scenario
from autoscaler.values.fields import SpecError
from autoscaler.values.quantity import Quantity
from tests.core.test_properties import _mutate, _paths, json_values

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


def a14_hold(spec: TargetSpec, decision: HvpaDecision, *, fixed_size_only: bool = False) -> bool:
    """Whether ``decision`` held a scale-in because some pair's pods would grow (A14), re-derived from the
    working the decision exposes: the proposal below the current count, and a pair whose adjusted
    recommendation for it (A13; maxResources for a horizontalOnly count, A29), clamped to the user's
    bounds, is above the current request. ``fixed_size_only``: only a pair whose proposed count is
    horizontalOnly counts (its pods would get maxResources, whatever A13 says)."""
    if not decision.scale_in_postponed:
        return False
    assert spec.hvpa is not None
    c = decision.current_replicas
    proposal = min(max(max(decision.desired_by_pair.values()), spec.min_replicas), spec.max_replicas)
    assert proposal < c == decision.desired_replicas
    for outcome in decision.pairs:
        total, request = outcome.totals.total, outcome.totals.current.request
        band = interval_at(outcome.intervals, proposal)
        if total is None or band is None or (fixed_size_only and not band.horizontal_only):
            continue
        base = spec.hvpa.base_resources_per_replica.get(outcome.pair.resource)
        raw = total - base.larger(request) * c if base is not None else total
        if band.horizontal_only:
            adjusted = band.per_pod_max
        elif base is None or raw <= 0:
            adjusted = total / proposal
        else:
            adjusted = raw / proposal + base.larger(raw / proposal)
        if clamp_to_policy(adjusted, spec.hvpa.policy_for(outcome.pair.container), outcome.pair.resource) > request:
            return True
    return False


def after(decision: HvpaDecision, request: Fraction) -> tuple[int, Fraction]:
    """The replicas and the per-pod request once the decision has been applied (if it is)."""
    if not decision.applied:
        return decision.current_replicas, request
    return decision.replicas, decision.requests["main"]["cpu"]


totals = st.integers(1, 60_000).map(lambda m: m * MILLI)


@settings(max_examples=300, deadline=None)
@given(spec=hvpa_specs(), data=st.data())
def test_desired_replicas_never_decrease_as_the_total_grows(spec: TargetSpec, data: st.DataObject) -> None:
    intervals = intervals_of(spec)
    current = data.draw(st.integers(1, spec.max_replicas + 2))
    values = sorted(data.draw(st.lists(totals, min_size=2, max_size=8)))
    desired = [desired_for_total(intervals, current, t) for t in values]
    assert desired == sorted(desired)
    natural = [desired_for_total(intervals, 10_000, t) for t in values]  # outside: the natural mapping
    assert natural == sorted(natural)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(spec=hvpa_specs(), data=st.data())
def test_a_one_step_rise_and_the_same_fall_end_no_higher_unless_the_overlap_says_so(
    spec: TargetSpec, data: st.DataObject
) -> None:
    intervals = intervals_of(spec)
    start = data.draw(st.sampled_from(intervals))
    low = max(start.min_total, MILLI)
    # A settled start: the VPA's per-pod value (whole millicores) on the start count, within its band.
    per_pod = (
        data.draw(
            st.integers(int(low / start.replicas * 1000) + 1, max(int(start.max_total / start.replicas * 1000), 1))
        )
        * MILLI
    )
    c0 = start.replicas
    t0 = per_pod * c0
    assume(start.min_total <= t0 <= start.max_total)
    request0 = start.per_pod_max if start.horizontal_only else per_pod
    settled = run(spec, c0, request0, t0)
    assume(settled.direction is None and settled.inactive is None)
    t1 = t0 + data.draw(totals)
    c1, request1 = after(run(spec, c0, request0, t1), request0)
    fall = run(spec, c1, request1, t0)
    c2, _ = after(fall, request1)
    event("scaled out" if c1 > c0 else "stayed")
    held_by_overlap = interval_at(intervals, c2) is not None and t0 >= interval_at(intervals, c2).min_total
    # A14 cannot hold a linear count here: the pods were kept at least at their settled size, so A ≤ req on
    # the same fall. It can hold when the fall lands on a horizontalOnly count whose fixed maxResources are
    # above the pods, which the engine counts as growing them (docs/hvpa.md, A14 and A29).
    held_for_a_fixed_size = a14_hold(spec, fall, fixed_size_only=True)
    event("held for a fixed size" if held_for_a_fixed_size and c2 > c0 else "not held for a fixed size")
    assert c2 <= c0 or held_by_overlap or held_for_a_fixed_size, (c0, t0, c1, request1, c2)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(spec=hvpa_specs(), data=st.data())
def test_any_rise_and_fall_is_held_higher_only_by_the_overlap_or_a_postponed_scale_in(
    spec: TargetSpec, data: st.DataObject
) -> None:
    intervals = intervals_of(spec)
    start = intervals[0]
    c0 = start.replicas
    t0 = data.draw(st.integers(1, max(int(start.max_total * 1000), 1))) * MILLI
    request0 = start.per_pod_max if start.horizontal_only else t0 / c0
    assume(int(request0 * 1000) == request0 * 1000)
    rise = sorted(data.draw(st.lists(totals, min_size=1, max_size=6)))
    path = [t0 + t for t in rise]
    state = (c0, request0)

    def cycle(state: tuple[int, Fraction]) -> tuple[tuple[int, Fraction], HvpaDecision]:
        last = None
        for total in [*path, *reversed(path[:-1]), t0]:
            last = run(spec, state[0], state[1], total)
            state = after(last, state[1])
        assert last is not None
        return state, last

    def held_higher(count: int, last: HvpaDecision) -> bool:
        band = interval_at(intervals, count)
        return (band is not None and t0 >= band.min_total) or a14_hold(spec, last)

    state, last = cycle(state)
    end = state[0]
    event("ended higher" if end > c0 else "ended at the start")
    assert end <= c0 or held_higher(end, last), (c0, path, state)
    # Repeating the round from where it ended promises no more than the first round did; it may end higher
    # than the first round: a scale-in sizes the pods at A (A13), which with a percentage base lies below the
    # request at which the same scale-in would go ahead, so that one is postponed (A14): the pods would grow.
    again, again_last = cycle(state)
    event("repeat ended higher" if again[0] > end else "repeat ended no higher")
    assert again[0] <= c0 or held_higher(again[0], again_last), (c0, path, state, again)
    if end == c0:
        # The sync after the round sizes the pods to the total again (d = c, P = T/c: EP-0001's "adjusted
        # by subsequent scaling"): that is the start state, from which the round repeats exactly.
        settled = after(run(spec, *state, t0), state[1])
        assert settled == (c0, request0), (c0, path, state, settled)
        assert cycle(settled)[0] == state


@settings(max_examples=300, deadline=None)
@given(spec=hvpa_specs(bounds=True), data=st.data())
def test_per_pod_requests_stay_within_the_users_bounds(spec: TargetSpec, data: st.DataObject) -> None:
    assert spec.hvpa is not None
    policy = spec.hvpa.containers[0]
    low, high = policy.bound("min", "cpu"), policy.bound("max", "cpu")
    assert low is not None and high is not None
    replicas = data.draw(st.integers(1, spec.max_replicas + 1))
    request = data.draw(st.integers(0, 20_000)) * MILLI
    decision = run(spec, replicas, request, data.draw(totals))
    for outcome in decision.pairs:
        if outcome.sizing is not None:
            assert low <= outcome.request <= high


windows = st.one_of(
    st.none(), st.builds(lambda b, e: MaintenanceWindow(b, e, "b", "e"), st.integers(0, 86_399), st.integers(0, 86_399))
)
scale_types = st.builds(
    lambda mode, minimum, seconds: ScaleType(
        mode, {"cpu": ChangeParams(minimum * MILLI)} if minimum is not None else {}, Fraction(seconds), f"{seconds}s"
    ),
    st.sampled_from(UpdateMode),
    st.one_of(st.none(), st.integers(0, 3000)),
    st.integers(0, 600),
)


@settings(max_examples=300, deadline=None)
@given(spec=hvpa_specs(), up=scale_types, down=scale_types, window=windows, data=st.data())
def test_a_blocked_decision_changes_nothing(
    spec: TargetSpec, up: ScaleType, down: ScaleType, window: MaintenanceWindow | None, data: st.DataObject
) -> None:
    assert spec.hvpa is not None
    hvpa = HvpaSpec(
        spec.hvpa.scaling_intervals,
        spec.hvpa.scaling_intervals_overlap,
        spec.hvpa.base_resources_per_replica,
        {},
        up,
        down,
        window,
        None,
        spec.hvpa.containers,
        spec.hvpa.sources,
    )
    gated = TargetSpec(spec.scale_target_ref, spec.max_replicas, spec.min_replicas, hvpa=hvpa)
    state = HvpaState(data.draw(st.one_of(st.none(), st.integers(0, 1000).map(float))), {"main": {"cpu": Fraction(1)}})
    replicas = data.draw(st.integers(1, spec.max_replicas))
    request = data.draw(st.integers(1, 10_000)) * MILLI
    decision = run(
        gated,
        replicas,
        request,
        data.draw(totals),
        state=state,
        now=1000.0,
        clock=data.draw(st.one_of(st.none(), st.integers(0, 10**9).map(float))),
    )
    if not decision.applied:
        assert decision.replicas == replicas and not decision.scale and decision.vpa_patch is None
        assert decision.state == state
    if decision.blocked is not None:
        assert not decision.applied
        event(f"blocked: {decision.blocked.value}")


VALID_HVPA: dict[str, Any] = {
    "scaleTargetRef": {"kind": "Deployment", "name": "api"},
    "maxReplicas": 5,
    "hvpa": {
        "scalingIntervals": [
            {"maxReplicas": 2, "maxResources": {"cpu": "1", "memory": "2Gi"}},
            {
                "maxReplicas": 5,
                "maxResources": {"cpu": "4", "memory": "8Gi"},
                "effectiveIntervalExtrapolation": "linear",
            },
        ],
        "scalingIntervalsOverlap": {"cpu": {"value": "250m", "percentage": 30}},
        "baseResourcesPerReplica": {"memory": {"value": "200M"}},
        "limitsRequestsGapScaleParams": {"cpu": {"percentage": 20}},
        "scaleUp": {
            "updatePolicy": {"updateMode": "MaintenanceWindow"},
            "minChange": {"cpu": {"value": "100m"}},
            "stabilizationDuration": "3m",
        },
        "maintenanceTimeWindow": {"begin": "220000+0100", "end": "040000+0100"},
        "vpa": "api",
        "containers": [{"name": "main", "minAllowed": {"cpu": "100m"}, "mode": "Auto"}],
        "sources": ["hpa", "vpa"],
    },
}
HVPA_PATHS = [p for p in _paths(VALID_HVPA, []) if p[:1] == ["hvpa"]]


@settings(max_examples=400, deadline=None)
@given(path=st.sampled_from(HVPA_PATHS), replacement=json_values)
def test_the_hvpa_parser_only_raises_validation_errors(path: list[Any], replacement: Any) -> None:
    try:
        parse_target_spec(_mutate(VALID_HVPA, path, replacement))
    except SpecError as exc:
        assert all(e.path.startswith("spec") for e in exc.errors)


VALID_STEPS: dict[str, Any] = {
    "spec": VALID_HVPA,
    "steps": [
        {
            "at": 0,
            "replicas": 2,
            "clock": "2024-05-01T22:30:00Z",
            "lastScaleTime": -60,
            "vpa": {
                "recommendation": {
                    "containerRecommendations": [
                        {"containerName": "main", "target": {"cpu": "1"}, "uncappedTarget": {"cpu": "2"}}
                    ]
                },
                "conditions": [{"type": "RecommendationProvided", "status": "True"}],
            },
        }
    ],
}
STEP_PATHS = [p for p in _paths(VALID_STEPS, []) if p[:1] == ["steps"]]


@settings(max_examples=400, deadline=None)
@given(path=st.sampled_from(STEP_PATHS), replacement=json_values)
def test_the_scenario_hvpa_keys_only_raise_validation_errors(path: list[Any], replacement: Any) -> None:
    try:
        parse_scenario(_mutate(VALID_STEPS, path, replacement))
    except SpecError as exc:
        assert exc.errors
