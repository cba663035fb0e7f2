"""decide_hvpa end to end: steps 3–8 and the resolutions they rest on, one behaviour per test."""

from fractions import Fraction
from typing import Any

from autoscaler.core.hvpa.decision import HvpaObservation, HvpaState, VpaObservation, decide_hvpa
from autoscaler.core.hvpa.gates import BlockReason, Direction
from autoscaler.core.hvpa.resources import adjusted_recommendation
from autoscaler.core.hvpa.spec import ChangeParams
from autoscaler.core.hvpa.vpa import VpaCondition
from autoscaler.core.observation import ContainerInfo, PodInfo, PodPhase
from tests.core.hvpa.builders import GI, decide, pods, q, target_spec, texts, vpa_status

VPA_ONLY = "  sources: [vpa]\n"
NO_MIN_CHANGE = (
    "  scaleUp: {minChange: {cpu: {value: 0}, memory: {value: 0}}}\n"
    "  scaleDown: {minChange: {cpu: {value: 0}, memory: {value: 0}}}\n"
)
DESIGN = (
    "  baseResourcesPerReplica: {cpu: {value: 50m, percentage: 5}, memory: {value: 200M, percentage: 10}}\n"
    "  scalingIntervalsOverlap: {cpu: {value: 250m, percentage: 30}, memory: {value: 1.5Gi, percentage: 30}}\n"
)
CPU_ONLY = "  containers: [{name: main, controlledResources: [cpu]}]\n"


def test_the_document_conflict_cpu_3_memory_4_choose_4() -> None:
    spec = target_spec(VPA_ONLY + "  containers: [{name: main}]\n")
    d = decide(
        spec, 2, pods(2, {"cpu": "1", "memory": "4Gi"}), vpa=vpa_status({"main": {"cpu": "2", "memory": "13Gi"}})
    )
    assert d.desired_by_pair == {"main/cpu": 3, "main/memory": 4}
    assert (d.desired_replicas, d.replicas, d.scale, d.direction, d.blocked) == (4, 4, True, Direction.UP, None)
    assert texts(d.requests) == {"main": {"cpu": "1", "memory": "6656Mi"}}  # 26Gi / 4 = 6.5Gi
    assert d.vpa_patch == {
        "spec": {
            "resourcePolicy": {
                "containerPolicies": [
                    {
                        "containerName": "main",
                        "minAllowed": {"cpu": "1", "memory": "6656Mi"},
                        "maxAllowed": {"cpu": "1", "memory": "6656Mi"},
                    }
                ]
            }
        }
    }
    assert d.state.last_applied == 1000.0 and d.state.pins == {"main": {"cpu": 1, "memory": q("6.5Gi")}}


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


def test_scale_out_keeps_the_pods_while_the_total_rises() -> None:
    # A15 at 4 × 4 → 17: 5 pods, kept at 4 (the adjusted 3.402 would shrink them).
    d = decide(
        target_spec(VPA_ONLY + DESIGN + CPU_ONLY), 4, pods(4, {"cpu": "4"}), vpa=vpa_status({"main": {"cpu": "4.25"}})
    )
    assert (d.replicas, texts(d.requests)) == (5, {"main": {"cpu": "4"}})


def test_a_count_outside_the_intervals_has_no_hysteresis_and_no_max_rule() -> None:
    # A8: someone scaled to 7 (intervals end at 5, maxReplicas 9): plain mapping, P = A.
    spec = target_spec(VPA_ONLY + NO_MIN_CHANGE + CPU_ONLY, max_replicas=9)
    d = decide(spec, 7, pods(7, {"cpu": "1"}), vpa=vpa_status({"main": {"cpu": "2"}}))  # total 14
    assert d.desired_by_pair == {"main/cpu": 4} and d.replicas == 4 and not d.scale_in_postponed
    assert texts(d.requests) == {"main": {"cpu": "3500m"}}


def test_beyond_the_last_interval_only_max_allowed_caps_the_pods() -> None:
    # A9: 60 > MAX(5) = 40 → 5 replicas of 12, capped by the user's maxAllowed 10.
    spec = target_spec(VPA_ONLY + "  containers: [{name: main, controlledResources: [cpu], maxAllowed: {cpu: 10}}]\n")
    d = decide(
        spec, 5, pods(5, {"cpu": "8"}), vpa=vpa_status({"main": {"cpu": "10"}}, uncapped={"main": {"cpu": "12"}})
    )
    assert d.desired_by_pair == {"main/cpu": 5}
    assert texts(d.requests) == {"main": {"cpu": "10"}}  # uncapped 12, clamped to maxAllowed (A12)


def test_proposal_is_clamped_to_the_targets_replica_range() -> None:
    # A25: intervals to 5, target maxReplicas 3 → counts 4 and 5 are dropped; 30 → 3 replicas of 10.
    d = decide(
        target_spec(VPA_ONLY + CPU_ONLY, max_replicas=3),
        3,
        pods(3, {"cpu": "2"}),
        vpa=vpa_status({"main": {"cpu": "10"}}),
    )
    assert d.desired_by_pair == {"main/cpu": 3} and d.replicas == 3 and texts(d.requests) == {"main": {"cpu": "10"}}


def test_zero_replicas_disable_scaling() -> None:
    d = decide(target_spec(VPA_ONLY), 0, [], vpa=vpa_status({"main": {"cpu": "2", "memory": "1Gi"}}))
    assert d.inactive is not None and "0 replicas" in d.inactive and not d.scale and d.vpa_patch is None


def test_no_usable_source_means_no_decision() -> None:
    distrusted = vpa_status(
        {"main": {"cpu": "2", "memory": "1Gi"}},
        conditions=(VpaCondition("RecommendationProvided", "True"), VpaCondition("LowConfidence", "True")),
    )
    d = decide(target_spec(VPA_ONLY), 2, pods(2, {"cpu": "1", "memory": "1Gi"}), vpa=distrusted)
    assert d.inactive == "no recommendation: VPA source unavailable: the VPA's LowConfidence condition is True (A12)"
    assert texts(d.requests) == {"main": {"cpu": "1", "memory": "1Gi"}} and d.desired_replicas == 2


def test_containers_with_mode_off_take_no_part() -> None:
    # A11: the sidecar is never sized, and its own policy entry stays as the user wrote it.
    spec = target_spec(
        VPA_ONLY + NO_MIN_CHANGE + "  containers:\n  - {name: main}\n"
        '  - {name: sidecar, mode: "Off", maxAllowed: {cpu: 100m}}\n'
    )
    sidecar = ContainerInfo("sidecar", {"cpu": 50})
    d = decide(
        spec,
        2,
        pods(2, {"cpu": "1", "memory": "4Gi"}, others=(sidecar,)),
        vpa=vpa_status({"main": {"cpu": "1", "memory": "4Gi"}, "sidecar": {"cpu": "5"}}),
    )
    assert [o.pair.label for o in d.pairs] == ["main/cpu", "main/memory"]
    assert "sidecar" not in d.requests and "sidecar" not in d.desired_by_pair
    d2 = decide(
        spec,
        2,
        pods(2, {"cpu": "1", "memory": "4Gi"}, others=(sidecar,)),
        vpa=vpa_status({"main": {"cpu": "900m", "memory": "4Gi"}, "sidecar": {"cpu": "5"}}),
    )
    assert d2.vpa_patch is not None
    entries = d2.vpa_patch["spec"]["resourcePolicy"]["containerPolicies"]
    assert entries[1] == {"containerName": "sidecar", "mode": "Off", "maxAllowed": {"cpu": "100m"}}


def test_the_larger_total_of_the_two_sources_wins_per_pair() -> None:
    # A10: the HPA (3 replicas × current request) outweighs the VPA on CPU; the VPA outweighs it on memory.
    from tests.core.hvpa.test_hpa_link import hpa_decision

    spec = target_spec(NO_MIN_CHANGE + "  containers: [{name: main}]\n", extra=EXTERNAL)
    hpa = hpa_decision(spec, 2, 3)
    d = decide(
        spec,
        2,
        pods(2, {"cpu": "1", "memory": "4Gi"}),
        hpa=hpa,
        vpa=vpa_status({"main": {"cpu": "1", "memory": "10Gi"}}),
    )
    cpu, memory = d.pairs
    assert (cpu.totals.hpa_total, cpu.totals.vpa_total, cpu.totals.total) == (3, 2, 3)
    assert (memory.totals.hpa_total, memory.totals.vpa_total) == (12 * GI, 20 * GI)
    assert d.desired_by_pair == {"main/cpu": 3, "main/memory": 3}
    assert texts(d.requests) == {"main": {"cpu": "1", "memory": "7158278827"}}  # 20Gi / 3, rounded up to a byte


EXTERNAL = (
    "metrics:\n- type: External\n  external: {metric: {name: load}, target: {type: AverageValue, "
    "averageValue: '1'}, query: load}\n"
)


def test_each_container_is_sized_by_its_own_totals() -> None:
    # A26: no sums over containers; the largest count wins, and each container shares its own total.
    spec = target_spec(
        VPA_ONLY + NO_MIN_CHANGE + "  containers:\n  - {name: main, controlledResources: [cpu]}\n"
        "  - {name: cache, controlledResources: [cpu]}\n"
    )
    cache = ContainerInfo("cache", {"cpu": 250})
    d = decide(
        spec,
        2,
        pods(2, {"cpu": "1"}, others=(cache,)),
        vpa=vpa_status({"main": {"cpu": "2"}, "cache": {"cpu": "300m"}}),
    )  # totals 4 and 600m
    assert d.desired_by_pair == {"main/cpu": 3, "cache/cpu": 2}
    assert d.replicas == 3
    assert texts(d.requests) == {"main": {"cpu": "1334m"}, "cache": {"cpu": "250m"}}  # 4/3 up; cache kept (A15)


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


def test_limits_follow_the_rules() -> None:
    ratio = decide(
        target_spec(VPA_ONLY + NO_MIN_CHANGE + CPU_ONLY),
        2,
        pods(2, {"cpu": "1"}, limits={"cpu": "2"}),
        vpa=vpa_status({"main": {"cpu": "900m"}}),
    )
    assert texts(ratio.requests) == {"main": {"cpu": "900m"}} and texts(ratio.limits) == {"main": {"cpu": "1800m"}}
    gap = decide(
        target_spec(
            VPA_ONLY + NO_MIN_CHANGE + CPU_ONLY + "  limitsRequestsGapScaleParams: {cpu: {value: 1, percentage: 10}}\n"
        ),
        2,
        pods(2, {"cpu": "1"}, limits={"cpu": "2"}),
        vpa=vpa_status({"main": {"cpu": "3"}}),
    )
    # 6 → 3 replicas of 2: limit max(2 + 1/3, 2 × 1.1) = 2.334 (rounded up to 1m).
    assert (gap.replicas, texts(gap.requests)) == (3, {"main": {"cpu": "2"}})
    assert texts(gap.limits) == {"main": {"cpu": "2334m"}}
    requests_only = "  containers: [{name: main, controlledResources: [cpu], controlledValues: RequestsOnly}]\n"
    capped = decide(
        target_spec(VPA_ONLY + NO_MIN_CHANGE + requests_only),
        3,
        pods(3, {"cpu": "1"}, limits={"cpu": "1200m"}),
        vpa=vpa_status({"main": {"cpu": "1.5"}}),
    )
    assert texts(capped.requests) == {"main": {"cpu": "1200m"}} and texts(capped.limits) == {"main": {"cpu": "1200m"}}
    none = decide(
        target_spec(VPA_ONLY + NO_MIN_CHANGE + CPU_ONLY),
        2,
        pods(2, {"cpu": "1"}),
        vpa=vpa_status({"main": {"cpu": "1.5"}}),
    )
    assert none.limits == {"main": {}}


def test_horizontal_only_intervals_fix_the_pod_size() -> None:
    spec = target_spec(
        "  scalingIntervals:\n  - {maxReplicas: 1, maxResources: {cpu: 1}}\n"
        "  - {maxReplicas: 6, maxResources: {cpu: 2}, effectiveIntervalExtrapolation: horizontalOnly}\n"
        + VPA_ONLY
        + NO_MIN_CHANGE
        + CPU_ONLY,
        max_replicas=6,
    )
    d = decide(spec, 2, pods(2, {"cpu": "2"}), vpa=vpa_status({"main": {"cpu": "3.5"}}))  # total 7 → 4 × 2
    assert (d.replicas, texts(d.requests)) == (4, {"main": {"cpu": "2"}})
    same = decide(spec, 4, pods(4, {"cpu": "2"}), vpa=vpa_status({"main": {"cpu": "1.9"}}))  # 7.6 ≥ MIN(4) = 6
    assert same.direction is None and same.replicas == 4


# --- the current request (A21) and the VPA pin (step 8) ---------------------------------------------------------

POLICIES: tuple[dict[str, Any], ...] = (
    {"containerName": "main", "minAllowed": {"cpu": "1500m"}, "maxAllowed": {"cpu": "1500m"}, "oomBumpUpRatio": "1.2"},
    {"containerName": "istio-proxy", "mode": "Off"},
)


def test_the_current_request_prefers_a_held_pin() -> None:
    spec = target_spec(VPA_ONLY + NO_MIN_CHANGE + CPU_ONLY)
    held = HvpaState(pins={"main": {"cpu": q("1.5")}})
    d = decide(spec, 3, pods(3, {"cpu": "1"}), vpa=vpa_status({"main": {"cpu": "1.5"}}), policies=POLICIES, state=held)
    assert d.pairs[0].totals.current.request_from == "pin" and d.direction is None and d.vpa_patch is None
    gone = HvpaState(pins={"main": {"cpu": q("1.4")}})  # someone changed the VPA since: the pods count
    d = decide(spec, 3, pods(3, {"cpu": "1"}), vpa=vpa_status({"main": {"cpu": "1.5"}}), policies=POLICIES, state=gone)
    assert d.pairs[0].totals.current.request_from == "pods" and d.applied


def test_requests_come_from_live_pods_then_the_template() -> None:
    spec = target_spec(VPA_ONLY + NO_MIN_CHANGE + CPU_ONLY)
    mixed = [
        PodInfo("a", containers=(ContainerInfo("main", {"cpu": 1000}),)),
        PodInfo("b", containers=(ContainerInfo("main", {"cpu": 1200}),)),
        PodInfo("c", deleting=True, containers=(ContainerInfo("main", {"cpu": 5000}),)),
        PodInfo("d", phase=PodPhase.FAILED, containers=(ContainerInfo("main", {"cpu": 5000}),)),
        PodInfo("e", containers=(ContainerInfo("main", {"cpu": 1100}),)),
    ]
    d = decide(spec, 3, mixed, vpa=vpa_status({"main": {"cpu": "1.2"}}))
    assert d.pairs[0].totals.current.request == q("1.2") and d.direction is None
    template = decide_hvpa(
        spec,
        HvpaObservation(
            2, [], VpaObservation(vpa_status({"main": {"cpu": "1.2"}})), template=(ContainerInfo("main", {"cpu": 700}),)
        ),
        None,
        HvpaState(),
        0,
    )
    assert template.pairs[0].totals.current.request == q("700m")
    assert template.pairs[0].totals.current.request_from == "template"


def test_the_patch_carries_the_whole_list_and_keeps_what_it_does_not_own() -> None:
    spec = target_spec(VPA_ONLY + NO_MIN_CHANGE + CPU_ONLY)
    d = decide(
        spec,
        2,
        pods(2, {"cpu": "1"}),
        vpa=vpa_status({"main": {"cpu": "2"}}),
        policies=POLICIES,
        resource_version="4711",
    )
    assert d.vpa_patch == {
        "metadata": {"resourceVersion": "4711"},
        "spec": {
            "resourcePolicy": {
                "containerPolicies": [
                    {
                        "containerName": "main",
                        "minAllowed": {"cpu": "1334m"},
                        "maxAllowed": {"cpu": "1334m"},
                        "oomBumpUpRatio": "1.2",
                    },
                    {"containerName": "istio-proxy", "mode": "Off"},
                ]
            }
        },
    }
    assert POLICIES[0]["minAllowed"] == {"cpu": "1500m"}  # the observed list is not modified


def test_a_container_under_the_wildcard_gets_its_own_entry_with_the_policy() -> None:
    # Once a container has its own entry, the VPA no longer applies "*" to it: the entry repeats the policy.
    spec = target_spec(
        VPA_ONLY + NO_MIN_CHANGE + "  containers:\n  - name: '*'\n    controlledResources: [cpu]\n"
        "    controlledValues: RequestsOnly\n    minAllowed: {cpu: 100m, memory: 64Mi}\n"
    )
    d = decide(spec, 2, pods(2, {"cpu": "1"}), vpa=vpa_status({"main": {"cpu": "2"}}))
    assert d.vpa_patch is not None
    assert d.vpa_patch["spec"]["resourcePolicy"]["containerPolicies"] == [
        {
            "containerName": "*",
            "controlledResources": ["cpu"],
            "controlledValues": "RequestsOnly",
            "minAllowed": {"cpu": "100m", "memory": "64Mi"},
        },
        {
            "containerName": "main",
            "controlledResources": ["cpu"],
            "controlledValues": "RequestsOnly",
            "minAllowed": {"cpu": "1334m", "memory": "64Mi"},
            "maxAllowed": {"cpu": "1334m"},
        },
    ]


def test_a_blocked_decision_re_pins_drifted_bounds_at_the_current_requests() -> None:
    spec = target_spec(VPA_ONLY + CPU_ONLY)
    unpinned: tuple[dict[str, Any], ...] = ({"containerName": "main", "maxAllowed": {"cpu": "4"}},)
    d = decide(spec, 2, pods(2, {"cpu": "1"}), vpa=vpa_status({"main": {"cpu": "1.05"}}), policies=unpinned)
    assert d.blocked is BlockReason.MIN_CHANGE and d.replicas == 2 and d.state.last_applied is None
    assert d.vpa_patch == {
        "spec": {
            "resourcePolicy": {
                "containerPolicies": [{"containerName": "main", "maxAllowed": {"cpu": "1"}, "minAllowed": {"cpu": "1"}}]
            }
        }
    }
    assert d.state.pins == {"main": {"cpu": 1}}


def test_the_decision_is_pure() -> None:
    spec = target_spec(VPA_ONLY + DESIGN)
    args = (spec, 3, pods(3, {"cpu": "2", "memory": "8Gi"}))
    kwargs: dict[str, Any] = {"vpa": vpa_status({"main": {"cpu": "3", "memory": "9Gi"}}), "now": 5.0}
    assert decide(*args, **kwargs) == decide(*args, **kwargs)
    assert Fraction(1) == 1
