"""``spec.fallback`` (KEDA's fallback): when a failed metric stands for the fallback replicas, what it reads
as, when it ends, what the target shows, and that its count survives a restart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from autoscaler.core.fallback import FALLBACK
from autoscaler.core.metric_health import MetricHealth
from autoscaler.core.observation import (
    ConditionStatus,
    ExternalReading,
    MetricFailure,
    MetricReading,
    Observation,
    PodPhase,
    PodsReading,
    ScaleInfo,
    SelectorProblem,
)
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import TargetSpec
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.core.sync import SyncInputs, SyncOutcome, SyncState, sync
from autoscaler.service.sync.status.sections import fallback_status
from tests.core.builders import pod, samples

SETTINGS = ControllerSettings()
QUEUE: dict[str, Any] = {
    "type": "External",
    "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}},
}
FAILED = MetricFailure("Prometheus did not answer")


def target(fallback: dict[str, Any] | None, metrics: Sequence[dict[str, Any]] = (QUEUE,), **extra: Any) -> TargetSpec:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"kind": "Deployment", "name": "worker"},
        "minReplicas": 1,
        "maxReplicas": 20,
        "metrics": list(metrics),
        # No limits or windows in the way: each sync shows the proposal itself.
        "behavior": {
            "scaleUp": {"policies": [{"type": "Pods", "value": 100, "periodSeconds": 15}]},
            "scaleDown": {"stabilizationWindowSeconds": 0},
        },
        **extra,
    }
    if fallback is not None:
        spec["fallback"] = fallback
    return parse_target_spec(spec, require_queries=False)


def seen(replicas: int, *readings: MetricReading, ready: int | None = None, **kwargs: Any) -> SyncInputs:
    count = replicas if ready is None else ready
    pods = [pod(f"p{i}", ready=ConditionStatus.TRUE if i < count else ConditionStatus.FALSE) for i in range(replicas)]
    return SyncInputs(Observation(ScaleInfo(replicas, replicas, "app=w"), pods, readings, **kwargs))


def run(
    spec: TargetSpec, steps: Sequence[tuple[float, int, MetricReading]], state: SyncState | None = None
) -> list[SyncOutcome]:
    """One sync per step (time, current replicas, the reading), each from the state the last one left."""
    outcomes = []
    state = state or SyncState()
    for at, replicas, reading in steps:
        outcome = sync(spec, seen(replicas, reading), state, SETTINGS, at)
        outcomes.append(outcome)
        state = outcome.state
    return outcomes


def queue(value: int) -> ExternalReading:
    return ExternalReading((value * 1000,), 0.0)


def fallback_condition(outcome: SyncOutcome) -> tuple[str, str] | None:
    found = next((x for x in outcome.decision.conditions if x.type == FALLBACK), None)
    return (found.status, found.reason) if found is not None else None


def reasons(outcome: SyncOutcome) -> list[str]:
    return [event.reason for event in outcome.decision.events]


# -- when it begins ---------------------------------------------------------------------------------------


def test_the_fallback_begins_after_more_failures_than_the_threshold_not_at_it() -> None:
    spec = target({"replicas": 6, "failureThreshold": 3})
    outcomes = run(spec, [(0, 2, queue(20)), (15, 2, FAILED), (30, 2, FAILED), (45, 2, FAILED), (60, 2, FAILED)])
    assert [o.decision.replicas for o in outcomes] == [2, 2, 2, 2, 6]
    assert [o.state.target.metric_health[0].failures for o in outcomes] == [0, 1, 2, 3, 4]
    # Exactly at the threshold (3 failures): not yet, and a failed metric does not scale.
    assert outcomes[3].decision.branch == "metrics-failed"
    assert fallback_condition(outcomes[3]) == ("False", "NoFallbackFound")
    assert fallback_condition(outcomes[4]) == ("True", "FallbackExists")
    assert "FallbackActivated" in reasons(outcomes[4])
    # KEDA's value: target × 1000 × replicas milli, read by the HPA algorithm as any External value.
    metric = outcomes[4].decision.metrics[0]
    assert metric.error is None and metric.proposal == 6
    assert metric.current is not None and metric.current.average_value == 30_000  # 60 over 2 replicas


def test_a_threshold_of_zero_falls_back_at_the_first_failure() -> None:
    outcomes = run(target({"replicas": 4, "failureThreshold": 0}), [(0, 2, FAILED)])
    assert outcomes[0].decision.replicas == 4
    health = outcomes[0].state.target.metric_health[0]
    assert (health.key, health.failures, health.since, health.fallback_replicas) == ("external/queue", 1, 0.0, 4)


def test_the_duration_counts_from_the_first_failed_sync() -> None:
    spec = target({"replicas": 6, "failureDurationSeconds": 60})
    outcomes = run(spec, [(0, 2, queue(20)), (10, 2, FAILED), (69.5, 2, FAILED), (70, 2, FAILED)])
    assert [o.decision.replicas for o in outcomes] == [2, 2, 2, 6]  # 59.5 s failing: not yet; 60 s: falls back
    assert outcomes[3].state.target.metric_health[0].since == 10


def test_with_both_thresholds_whichever_is_reached_first() -> None:
    spec = target({"replicas": 6, "failureThreshold": 2, "failureDurationSeconds": 60})
    by_count = run(spec, [(0, 2, FAILED), (1, 2, FAILED), (2, 2, FAILED)])
    assert [o.decision.replicas for o in by_count] == [2, 2, 6]
    by_time = run(spec, [(0, 2, FAILED), (60, 2, FAILED)])
    assert [o.decision.replicas for o in by_time] == [2, 6]


def test_the_count_stops_where_the_fallback_began_so_the_status_stays_the_same() -> None:
    spec = target({"replicas": 6, "failureThreshold": 1})
    outcomes = run(spec, [(t, 6, FAILED) for t in (0, 15, 30, 45, 60)])
    health = [o.state.target.metric_health for o in outcomes]
    assert [h[0].failures for h in health] == [1, 2, 2, 2, 2]
    documents = [fallback_status(o.decision) for o in outcomes[1:]]
    assert all(d == documents[0] for d in documents)
    conditions = [next(x for x in o.decision.conditions if x.type == FALLBACK) for o in outcomes[1:]]
    assert len({(x.message, x.last_transition_time) for x in conditions}) == 1
    assert [reasons(o).count("FallbackActivated") for o in outcomes] == [0, 1, 0, 0, 0]


# -- what it stands for -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("behavior", "current", "expected"),
    [
        ("static", 2, 6),
        ("static", 9, 6),
        ("currentReplicas", 9, 9),
        ("currentReplicasIfHigher", 9, 9),
        ("currentReplicasIfHigher", 2, 6),
        ("currentReplicasIfLower", 9, 6),
        ("currentReplicasIfLower", 2, 2),
    ],
)
def test_each_behavior_picks_keda_s_count(behavior: str, current: int, expected: int) -> None:
    spec = target({"replicas": 6, "failureThreshold": 0, "behavior": behavior})
    assert spec.fallback is not None and spec.fallback.replicas_for(current) == expected
    assert run(spec, [(0, current, FAILED)])[0].decision.replicas == expected


def test_the_hpa_tolerance_applies_to_the_fallback_value_as_under_keda() -> None:
    # 10 replicas standing for 11 wanted: 11 / 10 is within the 10 % tolerance, as the HPA KEDA feeds would see.
    spec = target({"replicas": 11, "failureThreshold": 0})
    assert run(spec, [(0, 10, FAILED)])[0].decision.replicas == 10


def test_a_value_target_s_fallback_is_divided_by_the_ready_pods() -> None:
    metric = {**QUEUE, "external": {**QUEUE["external"], "target": {"type": "Value", "value": "10"}}}
    spec = target({"replicas": 7, "failureThreshold": 0}, [metric])
    outcome = sync(spec, seen(4, FAILED, ready=3), SyncState(), SETTINGS, 0)
    # KEDA: 10 × 1000 × (7 / 3) milli, truncated; the HPA: ceil(23.333 / 10 × 3 ready) = 7.
    assert outcome.decision.metrics[0].current is not None
    assert outcome.decision.metrics[0].current.value == 23_333
    assert outcome.decision.replicas == 7


def test_a_value_target_without_a_ready_pod_cannot_fall_back_and_stays_failed() -> None:
    metric = {**QUEUE, "external": {**QUEUE["external"], "target": {"type": "Value", "value": "10"}}}
    spec = target({"replicas": 7, "failureThreshold": 0}, [metric])
    outcome = sync(spec, seen(3, FAILED, ready=0), SyncState(), SETTINGS, 0)
    assert outcome.decision.replicas == 3 and outcome.decision.branch == "metrics-failed"
    error = outcome.decision.metrics[0].error
    assert error is not None and "none is ready" in error
    assert fallback_condition(outcome) == ("False", "NoFallbackFound")


@pytest.mark.parametrize(("target_type", "value"), [("AverageValue", 6 * 5000), ("Value", 5000 * 6 // 3)])
def test_an_object_metric_falls_back_as_an_external_one(target_type: str, value: int) -> None:
    key = "averageValue" if target_type == "AverageValue" else "value"
    metric = {
        "type": "Object",
        "object": {
            "describedObject": {"kind": "Service", "name": "front"},
            "metric": {"name": "rps"},
            "target": {"type": target_type, key: "5"},
        },
    }
    spec = target({"replicas": 6, "failureThreshold": 0}, [metric])
    outcome = sync(spec, seen(3, FAILED), SyncState(), SETTINGS, 0)
    assert outcome.decision.replicas == 6
    assert outcome.state.target.metric_health[0].key == "object/rps"
    if target_type == "Value":
        assert outcome.decision.metrics[0].current is not None
        assert outcome.decision.metrics[0].current.value == value


def test_a_pods_metric_stands_for_the_fallback_replicas_and_shows_no_value() -> None:
    rps = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "5"}}}
    spec = target(
        {"replicas": 5, "failureThreshold": 0},
        [
            rps,
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
            },
        ],
    )
    outcome = sync(spec, seen(2, FAILED, FAILED), SyncState(), SETTINGS, 0)
    assert outcome.decision.replicas == 5
    assert [m.proposal for m in outcome.decision.metrics] == [5, 5]
    assert all(m.current is None and m.error is None for m in outcome.decision.metrics)
    assert [h.key for h in outcome.state.target.metric_health] == ["pods/rps", "resource/cpu"]
    assert (
        "pods metric rps: not read against average 5 (ratio 2.500; the fallback's replicas (spec.fallback)) → "
        "proposes 5" in outcome.explanation()
    )


def test_the_other_metrics_still_count_the_largest_proposal_wins() -> None:
    rps = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "5"}}}
    spec = target({"replicas": 3, "failureThreshold": 0}, [QUEUE, rps])
    answered = PodsReading(samples({"p0": 8_000, "p1": 8_000}))  # 8 a pod for 5 a pod: 2 → 4
    outcome = sync(spec, seen(2, FAILED, answered), SyncState(), SETTINGS, 0)
    assert [m.proposal for m in outcome.decision.metrics] == [3, 4]
    assert outcome.decision.replicas == 4


# -- when it ends, and when nothing falls back -------------------------------------------------------------


def test_it_ends_at_the_first_answer_and_the_count_starts_again() -> None:
    spec = target({"replicas": 6, "failureThreshold": 1})
    outcomes = run(spec, [(0, 2, FAILED), (15, 2, FAILED), (30, 6, queue(10)), (45, 1, FAILED)])
    assert [o.decision.replicas for o in outcomes] == [2, 6, 1, 1]
    assert fallback_condition(outcomes[2]) == ("False", "NoFallbackFound")
    assert "FallbackDeactivated" in reasons(outcomes[2])
    assert outcomes[2].state.target.metric_health == (MetricHealth("external/queue"),)
    assert outcomes[3].state.target.metric_health[0].failures == 1  # a new run of failures


def test_without_fallback_a_failed_metric_still_never_scales_down() -> None:
    outcomes = run(target(None), [(t, 9, FAILED) for t in (0, 15, 30, 45, 60)])
    assert [o.decision.replicas for o in outcomes] == [9] * 5
    assert all(fallback_condition(o) is None and not o.state.target.metric_health for o in outcomes)


def test_a_sync_that_reads_no_metric_neither_counts_nor_ends_a_run() -> None:
    spec = target({"replicas": 6, "failureThreshold": 2})
    state = run(spec, [(0, 2, FAILED), (15, 2, FAILED)])[-1].state
    unusable = SyncInputs(
        Observation(ScaleInfo(2, 2, "app=w"), [pod("p0")], [FAILED], SelectorProblem("AmbiguousSelector", "two"))
    )
    held = sync(spec, unusable, state, SETTINGS, 30)
    assert held.decision.branch == "selector"
    assert held.state.target.metric_health == (MetricHealth("external/queue", 2, 0.0),)
    assert run(spec, [(45, 2, FAILED)], held.state)[0].decision.replicas == 6


def test_removing_fallback_from_the_spec_removes_its_condition_and_health() -> None:
    state = run(target({"replicas": 6, "failureThreshold": 0}), [(0, 2, FAILED)])[0].state
    outcome = run(target(None), [(15, 6, FAILED)], state)[0]
    assert fallback_condition(outcome) is None and outcome.state.target.metric_health == ()
    assert outcome.decision.replicas == 6


def test_a_backend_failure_still_counts_for_the_backend_s_health() -> None:
    spec = target({"replicas": 6, "failureThreshold": 0})
    outcome = run(spec, [(0, 2, MetricFailure("503 from Prometheus", backend=True))])[0]
    assert outcome.decision.metrics[0].backend_failure and outcome.decision.metrics[0].error is None


def test_explain_says_which_metric_falls_back_since_when_and_to_what() -> None:
    spec = target({"replicas": 6, "failureThreshold": 1})
    outcome = run(spec, [(0, 2, FAILED), (15, 2, FAILED)])[-1]
    lines = outcome.explanation()
    note = next(line for line in lines if line.startswith("Fallback:"))
    assert "external/queue is failing since 15s ago (Prometheus did not answer)" in note
    assert "stands for 6 replicas (behavior static)" in note
    message = next(x.message for x in outcome.decision.conditions if x.type == FALLBACK)
    assert message.startswith("At least one metric is falling back: external/queue failed more than 1 syncs")


def test_pods_that_are_not_running_do_not_count_as_ready() -> None:
    metric = {**QUEUE, "external": {**QUEUE["external"], "target": {"type": "Value", "value": "10"}}}
    spec = target({"replicas": 4, "failureThreshold": 0}, [metric])
    pods = [pod("p0"), pod("p1", phase=PodPhase.PENDING)]
    inputs = SyncInputs(Observation(ScaleInfo(2, 2, "app=w"), pods, [FAILED]))
    outcome = sync(spec, inputs, SyncState(), SETTINGS, 0)
    assert outcome.decision.metrics[0].current is not None
    assert outcome.decision.metrics[0].current.value == 40_000  # 10 × 4 replicas ÷ 1 ready pod
    assert outcome.decision.replicas == 4
