"""decide_hvpa's current request (A21: a held pin, the live pods, the template) and the VPA pin it writes
(step 8: the whole policy list, what it does not own kept, the wildcard, re-pinning drifted bounds).
"""

from typing import Any

from autoscaler.core.hvpa.decision import HvpaObservation, HvpaState, VpaObservation, decide_hvpa
from autoscaler.core.hvpa.gates import BlockReason
from autoscaler.core.observation import ContainerInfo, PodInfo, PodPhase
from tests.core.hvpa.builders import CPU_ONLY, NO_MIN_CHANGE, VPA_ONLY, decide, pods, q, target_spec, vpa_status

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
