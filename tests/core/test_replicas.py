"""Replica calculation rules (replica_calculator.go), one rule per test."""

import pytest

from autoscaler.core.observation import ConditionStatus, ContainerInfo, PodPhase, Sample
from autoscaler.core.replicas import (
    ReplicaCalculationError,
    group_pods,
    per_pod_replicas,
    plain_replicas,
    pod_requests,
    resource_replicas,
    usage_ratio_replicas,
    utilization_ratio,
)
from autoscaler.core.settings import ControllerSettings, Tolerances
from tests.core.builders import pod, samples

SETTINGS = ControllerSettings(cpu_initialization_period=120, initial_readiness_delay=10)
TOL = Tolerances()
NOW = 1000.0


def test_groups_in_upstream_order() -> None:
    pods = [
        pod("deleted", deleting=True),
        pod("failed", phase=PodPhase.FAILED),
        pod("succeeded", phase=PodPhase.SUCCEEDED),
        pod("pending", phase=PodPhase.PENDING),
        pod("no-sample"),
        pod("ready"),
    ]
    got = group_pods(pods, samples({p.name: 100 for p in pods if p.name != "no-sample"}), "cpu", SETTINGS, NOW)
    assert got.ignored == ("deleted", "failed", "succeeded")
    assert got.unready == ("pending",)
    assert got.missing == ("no-sample",)
    assert got.ready_count == 1


def test_pending_pods_are_unready_for_every_metric_kind() -> None:
    got = group_pods([pod("p", phase=PodPhase.PENDING)], samples({"p": 1}), "", SETTINGS, NOW)
    assert got.unready == ("p",)


def test_readiness_only_matters_for_cpu() -> None:
    not_ready = pod("a", ready=ConditionStatus.FALSE, ready_since=NOW - 5, started_at=NOW - 6)
    assert group_pods([not_ready], samples({"a": 1}, NOW), "", SETTINGS, NOW).ready_count == 1
    assert group_pods([not_ready], samples({"a": 1}, NOW), "memory", SETTINGS, NOW).ready_count == 1
    assert group_pods([not_ready], samples({"a": 1}, NOW), "cpu", SETTINGS, NOW).unready == ("a",)


@pytest.mark.parametrize(
    ("ready", "started", "ready_since", "sample_at", "unready"),
    [
        # no Ready condition, or no start time: unready
        (None, NOW - 1000, NOW - 900, NOW, True),
        (ConditionStatus.TRUE, None, NOW - 900, NOW, True),
        # within the initialization period (120 s): ready only if a full window (60 s) passed since it became ready
        (ConditionStatus.TRUE, NOW - 100, NOW - 61, NOW, False),
        (ConditionStatus.TRUE, NOW - 100, NOW - 59, NOW, True),
        (ConditionStatus.TRUE, NOW - 100, NOW - 60, NOW, False),  # timestamp == transition + window: not before
        (ConditionStatus.FALSE, NOW - 100, NOW - 90, NOW, True),
        (ConditionStatus.UNKNOWN, NOW - 100, NOW - 90, NOW, False),  # "Unknown" is not "False"
        # initialization over (started_at + 120 == now is not after now)
        (ConditionStatus.TRUE, NOW - 120, NOW - 1, NOW, False),
        # past initialization: unready only if not ready and never ready since start (+10 s delay)
        (ConditionStatus.FALSE, NOW - 500, NOW - 495, NOW, True),
        (ConditionStatus.FALSE, NOW - 500, NOW - 490, NOW, False),  # start + delay == transition: not after
        (ConditionStatus.FALSE, NOW - 500, NOW - 300, NOW, False),
    ],
)
def test_cpu_readiness_boundaries(
    ready: ConditionStatus | None, started: float | None, ready_since: float, sample_at: float, unready: bool
) -> None:
    p = pod("a", ready=ready, started_at=started, ready_since=ready_since)
    got = group_pods([p], samples({"a": 1}, sample_at), "cpu", SETTINGS, NOW)
    assert got.unready == (("a",) if unready else ())


def test_requests_sum_containers_and_sidecars_but_not_init_containers() -> None:
    p = pod("a", containers=(ContainerInfo("app", {"cpu": 300}), ContainerInfo("proxy", {"cpu": 200}, sidecar=True)))
    assert pod_requests([p], None, "cpu") == {"a": 500}
    assert pod_requests([p], "proxy", "cpu") == {"a": 200}


@pytest.mark.parametrize(
    ("container", "message"),
    [
        (None, "missing request for cpu in container app of Pod a"),
        ("app", "missing request for cpu in container app of Pod a"),
        ("other", "container other not found in Pod a"),
    ],
)
def test_request_errors(container: str | None, message: str) -> None:
    with pytest.raises(ReplicaCalculationError, match=message):
        pod_requests([pod("a", cpu_request=None)], container, "cpu")


def test_pod_level_requests_win_without_a_container() -> None:
    from dataclasses import replace

    p = replace(pod("a"), pod_requests={"memory": 4000})
    assert pod_requests([p], None, "memory") == {"a": 4000}
    with pytest.raises(ReplicaCalculationError, match="missing request for memory in container app of Pod a"):
        pod_requests([p], "app", "memory")  # a ContainerResource metric ignores pod-level requests
    # a resource the pod level does not set comes from the containers
    assert pod_requests([p], None, "cpu") == {"a": 1000}
    with pytest.raises(ReplicaCalculationError, match="missing pod-level request for ephemeral-storage in Pod a"):
        pod_requests([p], None, "ephemeral-storage")


def test_utilization_is_truncated_to_an_integer_before_the_ratio() -> None:
    # 119m of 1000m is 11.9 % -> 11 %
    ratio, utilization, raw = utilization_ratio({"a": 119}, {"a": 1000}, 10)
    assert (utilization, raw) == (11, 119)
    assert ratio == 1.1


def test_unlisted_pod_samples_are_skipped_by_utilization_but_error_when_nothing_matches() -> None:
    assert utilization_ratio({"a": 500, "ghost": 900}, {"a": 1000}, 50)[1] == 50
    with pytest.raises(ReplicaCalculationError, match="no metrics returned matched known pods"):
        utilization_ratio({"ghost": 900}, {"a": 1000}, 50)


def test_scale_up_multiplies_ready_pods_not_spec_replicas() -> None:
    # 4 replicas requested but one pod listed: ceil(2.0 × 1) = 2.
    result = resource_replicas(4, 50, "cpu", None, [pod("a")], samples({"a": 1000}), TOL, SETTINGS, NOW)
    assert result.replicas == 2


def test_within_tolerance_keeps_current_and_tolerance_is_inclusive() -> None:
    pods = [pod("a"), pod("b")]
    result = resource_replicas(2, 100, "cpu", None, pods, samples({"a": 1100, "b": 1100}), TOL, SETTINGS, NOW)
    assert (result.utilization, result.replicas, result.rule) == (110, 2, "within-tolerance")


def test_missing_pods_count_at_max_of_request_and_target_on_scale_down() -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    # a, b at 10 % of request; c has no sample. Target 150 %: c counts at 150 % of its request.
    result = resource_replicas(3, 150, "cpu", None, pods, samples({"a": 100, "b": 100}), TOL, SETTINGS, NOW)
    assert result.groups.missing == ("c",)
    assert result.rebalance is not None and result.rebalance.missing_filled_with == "target"
    # (100 + 100 + 1500) × 100 / 3000 = 56 % -> 56/150 = 0.3733 -> ceil(1.12) = 2
    assert result.replicas == 2


def test_missing_pods_count_at_zero_on_scale_up_and_unready_too() -> None:
    pods = [pod("a"), pod("b"), pod("c", phase=PodPhase.PENDING)]
    result = resource_replicas(3, 50, "cpu", None, pods, samples({"a": 1000}), TOL, SETTINGS, NOW)
    # ratio 2.0 over a alone; b missing -> 0, c unready -> 0: 1000/3000 = 33 % -> 0.66: the direction flips
    assert result.rule == "rebalanced-direction-flip"
    assert result.replicas == 3


def test_plain_metric_missing_pods_count_at_exactly_the_target_on_scale_down() -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    result = plain_replicas(3, 100, "", pods, samples({"a": 10, "b": 10}), TOL, SETTINGS, NOW)
    # (10 + 10 + 100) / 3 = 40 -> 0.4 × 3 = 1.2 -> 2
    assert result.replicas == 2


def test_no_pods_and_no_usable_metrics_are_errors() -> None:
    with pytest.raises(ReplicaCalculationError, match="no pods returned by selector"):
        plain_replicas(1, 10, "", [], samples({"a": 1}), TOL, SETTINGS, NOW)
    with pytest.raises(ReplicaCalculationError, match="did not receive metrics for targeted pods"):
        plain_replicas(1, 10, "", [pod("a", phase=PodPhase.PENDING)], samples({"a": 1}), TOL, SETTINGS, NOW)


def test_value_target_multiplies_running_and_ready_pods() -> None:
    pods = [pod("a"), pod("b", ready=ConditionStatus.FALSE), pod("c", phase=PodPhase.PENDING)]
    result = usage_ratio_replicas(3, 3000, 1000, pods, TOL)
    assert (result.ready_pods, result.replicas) == (1, 3)


def test_value_target_with_no_ready_pods_proposes_zero() -> None:
    assert usage_ratio_replicas(2, 5000, 1000, [pod("a", ready=ConditionStatus.FALSE)], TOL).replicas == 0


def test_value_target_from_zero_skips_tolerance() -> None:
    result = usage_ratio_replicas(0, 1050, 1000, [], TOL)
    assert (result.replicas, result.rule) == (2, "from-zero")


def test_average_value_target_uses_status_replicas() -> None:
    within = per_pod_replicas(4, 4100, 1000, TOL)
    assert (within.replicas, within.usage) == (4, 1025)  # within tolerance: status.replicas, even if spec differs
    outside = per_pod_replicas(2, 5001, 1000, TOL)
    assert (outside.replicas, outside.usage) == (6, 2501)


def test_float_products_round_like_go() -> None:
    # 0.56 × 5 = 2.8000000000000003 -> 3
    result = plain_replicas(
        5, 100, "", [pod(str(i)) for i in range(5)], samples({str(i): 56 for i in range(5)}), TOL, SETTINGS, NOW
    )
    assert result.replicas == 3


def test_superfluous_samples_count_in_the_plain_average() -> None:
    result = plain_replicas(1, 100, "", [pod("a")], {"a": Sample(300, 0), "ghost": Sample(100, 0)}, TOL, SETTINGS, NOW)
    assert result.usage == 200
    assert result.superfluous == ("ghost",)
