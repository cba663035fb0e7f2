"""Properties of the HVPA engine that must hold for every configuration (hypothesis).

* the total → replicas mapping never decreases as the total grows (monotone), from any current count;
* per-pod requests always lie within the user's minAllowed/maxAllowed;
* a blocked decision changes nothing: same replicas, no write, the same state.

No ratchet in a rise and fall: test_ratchet_properties.py; the parsers: test_parser_properties.py.
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import event, given, settings
from hypothesis import strategies as st

from autoscaler.core.hvpa.decision import HvpaState
from autoscaler.core.hvpa.intervals import desired_for_total
from autoscaler.core.hvpa.spec import ChangeParams, HvpaSpec, MaintenanceWindow, ScaleType, UpdateMode
from autoscaler.core.spec import TargetSpec
from tests.core.hvpa.strategies import MILLI, hvpa_specs, intervals_of, run, totals


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
