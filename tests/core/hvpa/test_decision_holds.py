"""decide_hvpa's holds: a scale-in postponed because a pod would grow (A13/A14, paradoxical scaling), and
the gates a change must pass (minChange, the stabilization window, the maintenance window).
"""

from fractions import Fraction

from autoscaler.core.hvpa.decision import HvpaState
from autoscaler.core.hvpa.gates import BlockReason, Direction
from autoscaler.core.hvpa.resources import adjusted_recommendation
from autoscaler.core.hvpa.spec import ChangeParams
from tests.core.hvpa.builders import (
    CPU_ONLY,
    DESIGN,
    NO_MIN_CHANGE,
    VPA_ONLY,
    decide,
    pods,
    q,
    target_spec,
    texts,
    vpa_status,
)


def test_scale_in_postponed_with_nothing_to_change_is_paradoxical_scaling() -> None:
    # The rise-and-fall round at t=1080: 5 × 2.4 at a total of 11 < MIN(5) = 11.2; 4 pods would need
    # 2.73 each (A13), more than the 2.4 they have → hold 5 × max(2.4, 11/5) = 5 × 2.4: nothing changes (A14).
    spec = target_spec(VPA_ONLY + DESIGN + CPU_ONLY)
    d = decide(spec, 5, pods(5, {"cpu": "2.4"}), vpa=vpa_status({"main": {"cpu": "2.2"}}))
    assert d.desired_by_pair == {"main/cpu": 4}
    assert d.scale_in_postponed and d.desired_replicas == 5 and d.replicas == 5 and not d.scale
    assert d.blocked is BlockReason.PARADOXICAL_SCALING and d.direction is None and d.vpa_patch is None
    assert "main/cpu" in d.block_detail
    assert texts(d.requests) == {"main": {"cpu": "2400m"}}


def test_a_held_scale_in_that_grows_a_pod_is_gated_like_any_change() -> None:
    # Pods at 2 with a total of 11: 4 pods would need 2.73 > 2 → hold 5, but 11/5 = 2.2 > 2: the pods grow.
    spec = target_spec(VPA_ONLY + DESIGN + CPU_ONLY + '  scaleUp: {updatePolicy: {updateMode: "Off"}}\n')
    d = decide(spec, 5, pods(5, {"cpu": "2"}), vpa=vpa_status({"main": {"cpu": "2.2"}}))
    assert d.scale_in_postponed and d.direction is Direction.UP and d.blocked is BlockReason.UPDATE_POLICY
    assert texts(d.requests) == {"main": {"cpu": "2200m"}} and d.replicas == 5 and d.vpa_patch is None
    applied = decide(
        target_spec(VPA_ONLY + DESIGN + CPU_ONLY), 5, pods(5, {"cpu": "2"}), vpa=vpa_status({"main": {"cpu": "2.2"}})
    )
    assert applied.applied and applied.replicas == 5 and texts(applied.requests) == {"main": {"cpu": "2200m"}}


def test_scale_in_goes_ahead_when_no_pod_would_grow() -> None:
    spec = target_spec(VPA_ONLY + DESIGN + CPU_ONLY)
    d = decide(spec, 5, pods(5, {"cpu": "2.4"}), vpa=vpa_status({"main": {"cpu": "1.8"}}))  # total 9
    assert not d.scale_in_postponed and (d.replicas, d.direction) == (4, Direction.DOWN)
    assert texts(d.requests) == {"main": {"cpu": "2205m"}}  # (9 − 5 × 120m)/4 + 5 % of it


def test_a_percentage_base_holds_a_repeated_round_at_the_higher_count() -> None:
    # The property test's counterexample, step by step. MAX(1) = 338m, MIN(2) = MAX(2 − 1) = 338m (no overlap),
    # base = 2 % of the request; the VPA says 339m, then 337m again, twice. Specified, not a ratchet bug:
    # a scale-in sizes the pod at A (A13), below the total; the same scale-in then needs the pod to grow (A14).
    spec = target_spec(
        "  scalingIntervals:\n  - {maxReplicas: 1, maxResources: {cpu: 338m}}\n"
        "  - {maxReplicas: 2, maxResources: {cpu: 338m}}\n"
        "  baseResourcesPerReplica: {cpu: {percentage: 2}}\n" + VPA_ONLY + NO_MIN_CHANGE + CPU_ONLY,
        max_replicas=2,
    )
    vpa_339 = vpa_status({"main": {"cpu": "339m"}})  # on 1 pod: T = 339m > MAX(1)
    vpa_337 = vpa_status({"main": {"cpu": "168.5m"}})  # on 2 pods: T = 337m < MIN(2)
    # Round 1 from the settled 1 × 337m. Out: A(2) = (339 − 6.74)/2 × 1.02 = 169.4526m, kept at 337m (A15).
    up = decide(spec, 1, pods(1, {"cpu": "337m"}), vpa=vpa_339)
    assert (up.replicas, texts(up.requests)) == (2, {"main": {"cpu": "337m"}})
    # In: A(1) = (337 − 2 × 6.74) × 1.02 = 329.9904m < 337m → no hold; rounded up to 330m (A22).
    down = decide(spec, 2, pods(2, {"cpu": "337m"}), vpa=vpa_337)
    assert down.pairs[0].sizing is not None and down.pairs[0].sizing.adjusted == Fraction("0.3299904")
    assert (down.replicas, down.scale_in_postponed, texts(down.requests)) == (1, False, {"main": {"cpu": "330m"}})
    # Round 2 from 1 × 330m (not settled: the VPA's 337m would resize it). Out: kept at 330m again.
    up = decide(spec, 1, pods(1, {"cpu": "330m"}), vpa=vpa_339)
    assert (up.replicas, texts(up.requests)) == (2, {"main": {"cpu": "330m"}})
    # In: A(1) = (337 − 2 × 6.6) × 1.02 = 330.276m > 330m → held at 2 × max(330, 168.5) = 2 × 330m (A14).
    held = decide(spec, 2, pods(2, {"cpu": "330m"}), vpa=vpa_337)
    assert held.scale_in_postponed and held.blocked is BlockReason.PARADOXICAL_SCALING
    assert held.desired_by_pair == {"main/cpu": 1} and held.replicas == 2
    assert texts(held.requests) == {"main": {"cpu": "330m"}}
    # Not the rounding: the A14 threshold, where A(1) = req, is 337m × 1.02 / 1.0408 ≈ 330.265m; both the rounded
    # 330m and the exact 329.9904m lie below it (the exact one would be held at A(1) = 330.2764m).
    base, exact, threshold = ChangeParams(None, 2), Fraction("0.3299904"), Fraction(17187, 52040)
    assert adjusted_recommendation(q("337m"), threshold, 2, 1, base) == threshold > q("330m") > exact
    assert adjusted_recommendation(q("337m"), exact, 2, 1, base) == Fraction("0.33027639168") > exact
    # The sync after round 1 sizes the pod to the total (d = c: P = T), which restores the start of the round.
    settle = decide(spec, 1, pods(1, {"cpu": "330m"}), vpa=vpa_status({"main": {"cpu": "337m"}}))
    assert (settle.replicas, texts(settle.requests)) == (1, {"main": {"cpu": "337m"}})


def test_a_scale_in_onto_a_horizontal_only_count_is_held_while_its_fixed_size_is_above_the_pods() -> None:
    # MAX(1) = 60m; count 2 is horizontalOnly at 61m (MAX(2) = 122m); MAX(3) = 183m; no overlap: MIN(2) = 60m.
    # 1 × 60m → 123m: 3 pods kept at 60m (A15). Back to 60m: step 4 says 2 (T = MIN(2), A6/A7), and A13's
    # A(2) = 30m, but 2 pods would be fixed at 61m (A29) > 60m: the pods would grow, so the scale-in is held.
    only = "effectiveIntervalExtrapolation: horizontalOnly"
    spec = target_spec(
        "  scalingIntervals:\n  - {maxReplicas: 1, maxResources: {cpu: 60m}}\n"
        f"  - {{maxReplicas: 2, maxResources: {{cpu: 61m}}, {only}}}\n"
        "  - {maxReplicas: 3, maxResources: {cpu: 61m}}\n" + VPA_ONLY + NO_MIN_CHANGE + CPU_ONLY,
        max_replicas=3,
    )
    up = decide(spec, 1, pods(1, {"cpu": "60m"}), vpa=vpa_status({"main": {"cpu": "123m"}}))
    assert (up.replicas, texts(up.requests)) == (3, {"main": {"cpu": "60m"}})
    held = decide(spec, 3, pods(3, {"cpu": "60m"}), vpa=vpa_status({"main": {"cpu": "20m"}}))  # T = 60m
    assert held.desired_by_pair == {"main/cpu": 2} and held.scale_in_postponed
    assert (held.replicas, held.blocked, texts(held.requests)) == (
        3,
        BlockReason.PARADOXICAL_SCALING,
        {"main": {"cpu": "60m"}},
    )
    # Pods already at 61m would not grow at 2 × 61m: the same fall scales in.
    down = decide(spec, 3, pods(3, {"cpu": "61m"}), vpa=vpa_status({"main": {"cpu": "20m"}}))
    assert (down.replicas, down.scale_in_postponed, texts(down.requests)) == (2, False, {"main": {"cpu": "61m"}})


def test_min_change_defaults_block_small_moves() -> None:
    # A17: 2 × 1 CPU, recommendation total 2.3 (delta 300m ≥ 200m) passes; 2.2 (delta 200m) passes; 2.1 blocks.
    spec = target_spec(VPA_ONLY + CPU_ONLY)
    small = decide(spec, 2, pods(2, {"cpu": "1"}), vpa=vpa_status({"main": {"cpu": "1.05"}}))
    assert small.blocked is BlockReason.MIN_CHANGE and small.replicas == 2 and small.vpa_patch is None
    assert small.state == HvpaState()
    edge = decide(spec, 2, pods(2, {"cpu": "1"}), vpa=vpa_status({"main": {"cpu": "1.1"}}))
    assert edge.applied


def test_stabilization_uses_the_last_applied_time() -> None:
    spec = target_spec(VPA_ONLY + CPU_ONLY + "  scaleDown: {stabilizationDuration: 5m}\n")
    state = HvpaState(last_applied=1000.0 - 299)
    d = decide(spec, 2, pods(2, {"cpu": "1"}), vpa=vpa_status({"main": {"cpu": "500m"}}), state=state)
    assert d.blocked is BlockReason.STABILIZATION_WINDOW and d.state == state
    up = decide(spec, 2, pods(2, {"cpu": "1"}), vpa=vpa_status({"main": {"cpu": "2"}}), state=state)
    assert up.applied  # scaleUp has no stabilization
    later = decide(
        spec,
        2,
        pods(2, {"cpu": "1"}),
        vpa=vpa_status({"main": {"cpu": "500m"}}),
        state=HvpaState(last_applied=1000.0 - 300),
    )
    assert later.applied and later.state.last_applied == 1000.0


def test_maintenance_window_gate() -> None:
    spec = target_spec(
        VPA_ONLY + CPU_ONLY + "  scaleUp: {updatePolicy: {updateMode: MaintenanceWindow}}\n"
        "  maintenanceTimeWindow: {begin: '230000+0100', end: '050000+0100'}\n"
    )
    midnight = 1_714_521_600
    outside = decide(spec, 2, pods(2, {"cpu": "1"}), vpa=vpa_status({"main": {"cpu": "2"}}), clock=midnight + 5 * 3600)
    assert outside.blocked is BlockReason.MAINTENANCE_WINDOW
    inside = decide(spec, 2, pods(2, {"cpu": "1"}), vpa=vpa_status({"main": {"cpu": "2"}}), clock=midnight + 3600)
    assert inside.applied
