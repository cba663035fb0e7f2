"""A whole sync: branches, metric failures, conditions, events and history."""

from dataclasses import replace

from autoscaler.core import conditions as c
from autoscaler.core.conditions import Condition
from autoscaler.core.decision import TargetState, decide
from autoscaler.core.history import DecisionHistory, Recommendation
from autoscaler.core.observation import (
    ExternalReading,
    MetricFailure,
    Observation,
    ResourceReading,
    ScaleInfo,
    SelectorProblem,
)
from autoscaler.core.rescale import apply_scale_result
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import (
    DEFAULT_SCALE_DOWN_RULES,
    DEFAULT_SCALE_UP_RULES,
    Behavior,
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    TargetSpec,
)
from autoscaler.values.quantity import Quantity
from tests.core.builders import pod, usage

NOW = 5000.0
SETTINGS = ControllerSettings()
CPU = MetricSpec(MetricSourceType.RESOURCE, "cpu", MetricTarget(MetricTargetType.UTILIZATION, average_utilization=50))
QUEUE = MetricSpec(
    MetricSourceType.EXTERNAL, "queue", MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("10"))
)


def target(
    *metrics: MetricSpec, min_replicas: int = 1, max_replicas: int = 10, behavior: Behavior | None = None
) -> TargetSpec:
    return TargetSpec(
        CrossVersionObjectReference("Deployment", "web"), max_replicas, min_replicas, metrics or (CPU,), behavior
    )


def observe(
    replicas: int,
    cpu_milli: int | None = None,
    queue: int | None = None,
    *,
    selector: str = "app=web",
    metrics: tuple[MetricSpec, ...] = (CPU,),
) -> Observation:
    pods = [pod(f"p{i}") for i in range(replicas)]
    readings = []
    for metric in metrics:
        if metric is CPU:
            readings.append(
                ResourceReading(usage({p.name: cpu_milli for p in pods}))
                if cpu_milli is not None
                else MetricFailure("Prometheus is unreachable")
            )
        else:
            readings.append(
                ExternalReading((queue * 1000,), NOW)
                if queue is not None
                else MetricFailure("Prometheus is unreachable")
            )
    return Observation(ScaleInfo(replicas, replicas, selector), pods, readings)


OLD = TargetState(history=DecisionHistory())  # a known target with an empty history


def condition_triples(conds: tuple[Condition, ...]) -> list[tuple[str, str, str]]:
    return [(x.type, x.status, x.reason) for x in conds]


def test_a_new_target_records_its_current_size_first() -> None:
    decision = decide(target(), observe(4, cpu_milli=100), TargetState(), SETTINGS, NOW)
    assert decision.history.recommendations[0] == Recommendation(4, NOW)
    # legacy path: the first recommendation holds the scale-down for a whole window
    assert (decision.desired_replicas, decision.replicas, decision.scale) == (1, 4, False)
    assert decision.normalization is not None and decision.normalization.able_reason == "ScaleDownStabilized"


def test_conditions_of_a_scale_up_in_upstream_order() -> None:
    decision = decide(target(), observe(2, cpu_milli=1000), OLD, SETTINGS, NOW)
    assert (decision.desired_replicas, decision.replicas) == (4, 4)
    applied = apply_scale_result(decision, target(), True, NOW)
    assert condition_triples(applied.conditions) == [
        ("AbleToScale", "True", "SucceededRescale"),
        ("ScalingActive", "True", "ValidMetricFound"),
        ("ScalingLimited", "False", "DesiredWithinRange"),
        ("ScaledToZero", "False", "NotScaledToZero"),  # upstream master sets it on every rescale
    ]
    assert applied.conditions[0].message == "the HPA controller was able to update the target scale to 4"
    assert applied.conditions[1].message == (
        "the HPA was able to successfully calculate a replica count from "
        "cpu resource utilization (percentage of request)"
    )
    assert [(e.type, e.reason, e.message) for e in applied.events] == [
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 4; reason: cpu resource utilization (percentage of request) above target",
        )
    ]
    assert applied.last_scale_time == NOW


def test_transition_time_changes_only_on_a_status_flip() -> None:
    first = decide(target(), observe(2, cpu_milli=500), OLD, SETTINGS, NOW)
    state = TargetState(first.history, first.conditions, first.status_desired_replicas)
    second = decide(target(), observe(2), state, SETTINGS, NOW + 15)
    active = {x.type: x for x in second.conditions}[c.SCALING_ACTIVE]
    assert (active.status, active.last_transition_time) == ("False", NOW + 15)
    able = {x.type: x for x in second.conditions}[c.ABLE_TO_SCALE]
    assert able.last_transition_time == NOW


def test_all_metrics_failed_no_scale_and_status_desired_kept() -> None:
    state = replace(OLD, desired_replicas=7)
    decision = decide(target(), observe(3), state, SETTINGS, NOW)
    assert (decision.scale, decision.replicas, decision.desired_replicas) == (False, 3, None)
    assert decision.status_desired_replicas == 7
    assert condition_triples(decision.conditions)[1] == ("ScalingActive", "False", "FailedGetResourceMetric")
    assert decision.conditions[1].message == (
        "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics "
        "for resource cpu: Prometheus is unreachable"
    )
    assert [e.reason for e in decision.events] == ["FailedGetResourceMetric", "FailedComputeMetricsReplicas"]
    assert decision.error is not None and decision.error.startswith("invalid metrics (1 invalid out of 1)")


def test_a_failed_metric_never_causes_a_scale_down() -> None:
    spec = target(CPU, QUEUE)
    # CPU says 1 replica, the queue cannot be read: no scale-down.
    decision = decide(spec, observe(6, cpu_milli=10, metrics=(CPU, QUEUE)), OLD, SETTINGS, NOW)
    assert (decision.scale, decision.branch) == (False, "metrics-failed")
    assert condition_triples(decision.conditions)[1] == ("ScalingActive", "False", "FailedGetExternalMetric")


def test_a_failed_metric_still_allows_a_scale_up() -> None:
    spec = target(CPU, QUEUE)
    decision = decide(spec, observe(2, queue=80, metrics=(CPU, QUEUE)), OLD, SETTINGS, NOW)
    assert (decision.scale, decision.replicas) == (True, 4)  # legacy cap max(2 × 2, 4) on a proposal of 8
    assert condition_triples(decision.conditions)[1] == ("ScalingActive", "True", "ValidMetricFound")
    assert decision.error is not None and "failed to get cpu utilization" in decision.error


def test_the_largest_proposal_wins_ties_keep_the_first() -> None:
    spec = target(CPU, QUEUE)
    decision = decide(spec, observe(2, cpu_milli=1000, queue=40, metrics=(CPU, QUEUE)), OLD, SETTINGS, NOW)
    assert decision.combined is not None
    assert decision.combined.proposal == 4
    assert decision.combined.description.startswith("cpu resource")


def test_zero_replicas_disables_scaling() -> None:
    decision = decide(target(), observe(0, cpu_milli=1000), OLD, SETTINGS, NOW)
    assert (decision.branch, decision.scale, decision.replicas) == ("disabled", False, 0)
    assert condition_triples(decision.conditions) == [
        ("AbleToScale", "True", "SucceededGetScale"),
        ("ScalingActive", "False", "ScalingDisabled"),
    ]


def test_out_of_range_replicas_are_brought_back_without_reading_metrics() -> None:
    above = decide(target(max_replicas=5), observe(8), OLD, SETTINGS, NOW)
    assert (above.replicas, above.rescale_reason) == (5, "Current number of replicas above Spec.MaxReplicas")
    assert all(m.skipped for m in above.metrics)
    below = decide(target(min_replicas=3), observe(1), OLD, SETTINGS, NOW)
    assert (below.replicas, below.rescale_reason) == (3, "Current number of replicas below Spec.MinReplicas")
    # ScalingActive/ScalingLimited are not touched on these branches
    assert condition_triples(below.conditions) == [("AbleToScale", "True", "SucceededGetScale")]


def test_selector_problems() -> None:
    missing = decide(target(), observe(2, cpu_milli=10, selector=""), OLD, SETTINGS, NOW)
    assert condition_triples(missing.conditions)[1] == ("ScalingActive", "False", "InvalidSelector")
    assert missing.conditions[1].message == "the HPA target's scale is missing a selector"
    assert [e.reason for e in missing.events] == ["SelectorRequired"]
    ambiguous = replace(
        observe(2, cpu_milli=10),
        selector_problem=SelectorProblem(
            "AmbiguousSelector", "pods by selector app=web are controlled by more than one HPA: [a b]"
        ),
    )
    decision = decide(target(), ambiguous, OLD, SETTINGS, NOW)
    assert condition_triples(decision.conditions)[1] == ("ScalingActive", "False", "AmbiguousSelector")
    assert not decision.scale


def test_failed_write_keeps_status_and_records_no_event() -> None:
    spec = target(behavior=Behavior(DEFAULT_SCALE_UP_RULES, DEFAULT_SCALE_DOWN_RULES))
    state = replace(OLD, desired_replicas=2)
    decision = decide(spec, observe(2, cpu_milli=1000), state, SETTINGS, NOW)
    failed = apply_scale_result(decision, spec, False, NOW, "the server rejected the update")
    assert condition_triples(failed.conditions)[0] == ("AbleToScale", "False", "FailedUpdateScale")
    assert failed.status_desired_replicas == 2
    assert failed.history.scale_up_events == ()
    assert failed.events[-1].reason == "FailedRescale"
    ok = apply_scale_result(decision, spec, True, NOW)
    assert [e.change for e in ok.history.scale_up_events] == [2]


def test_scale_events_are_kept_only_with_behavior() -> None:
    decision = decide(target(), observe(2, cpu_milli=1000), OLD, SETTINGS, NOW)
    assert apply_scale_result(decision, target(), True, NOW).history.scale_up_events == ()


def test_scale_to_zero_and_back() -> None:
    spec = target(
        QUEUE,
        min_replicas=0,
        behavior=Behavior(DEFAULT_SCALE_UP_RULES, replace(DEFAULT_SCALE_DOWN_RULES, stabilization_window_seconds=0)),
    )
    down = decide(spec, observe(3, queue=0, metrics=(QUEUE,)), OLD, SETTINGS, NOW)
    assert (down.replicas, down.scale) == (0, True)
    down = apply_scale_result(down, spec, True, NOW)
    assert ("ScaledToZero", "True", "ScaledToZero") in condition_triples(down.conditions)
    state = TargetState(down.history, down.conditions, down.status_desired_replicas)
    # at zero, metrics are still read because this autoscaler put the target there
    up = decide(spec, observe(0, queue=25, metrics=(QUEUE,)), state, SETTINGS, NOW + 15)
    assert (up.replicas, up.scale) == (3, True)
    up = apply_scale_result(up, spec, True, NOW + 15)
    assert ("ScaledToZero", "False", "NotScaledToZero") in condition_triples(up.conditions)


def test_zero_set_by_a_person_is_left_alone_even_with_min_zero() -> None:
    spec = target(QUEUE, min_replicas=0)
    decision = decide(spec, observe(0, queue=50, metrics=(QUEUE,)), OLD, SETTINGS, NOW)
    assert (decision.branch, decision.scale) == ("disabled", False)


def test_scaling_from_zero_never_stops_below_min_replicas() -> None:
    spec = target(QUEUE, min_replicas=3)
    state = replace(OLD, conditions=(Condition("ScaledToZero", "True", "ScaledToZero", "", NOW - 100),))
    decision = decide(spec, observe(0, queue=5, metrics=(QUEUE,)), state, SETTINGS, NOW)
    assert (decision.replicas, decision.scale) == (3, True)


def test_decisions_are_deterministic() -> None:
    spec = target(CPU, QUEUE)
    obs = observe(4, cpu_milli=700, queue=50, metrics=(CPU, QUEUE))
    assert decide(spec, obs, OLD, SETTINGS, NOW) == decide(spec, obs, OLD, SETTINGS, NOW)
