"""decide_hvpa end to end: the replica count and the per-pod requests it settles on (steps 3–7), one
behaviour per test. What holds a change back is in test_decision_holds.py, the VPA pin in test_decision_pin.py.
"""

from fractions import Fraction
from typing import Any

from autoscaler.core.hvpa.gates import Direction
from autoscaler.core.hvpa.vpa import VpaCondition
from autoscaler.core.observation import ContainerInfo
from tests.core.hvpa.builders import (
    CPU_ONLY,
    DESIGN,
    GI,
    NO_MIN_CHANGE,
    VPA_ONLY,
    decide,
    pods,
    q,
    target_spec,
    texts,
    vpa_status,
)


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


def test_the_decision_is_pure() -> None:
    spec = target_spec(VPA_ONLY + DESIGN)
    args = (spec, 3, pods(3, {"cpu": "2", "memory": "8Gi"}))
    kwargs: dict[str, Any] = {"vpa": vpa_status({"main": {"cpu": "3", "memory": "9Gi"}}), "now": 5.0}
    assert decide(*args, **kwargs) == decide(*args, **kwargs)
    assert Fraction(1) == 1
