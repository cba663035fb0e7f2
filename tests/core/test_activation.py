"""spec.activation: KEDA's activation phase around the HPA algorithm (autoscaler.core.activation).

Each test runs whole syncs (autoscaler.core.sync), as the service and simulate do, so what is checked is
what a target would do: the count written, the Active condition, the Events and the state carried on.
"""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.core.activation_outcome import Action
from autoscaler.core.conditions import find_condition
from autoscaler.core.decision import TargetState
from autoscaler.core.observation import ExternalReading, MetricFailure, MetricReading, Observation, ScaleInfo
from autoscaler.core.settings import DEFAULT_SETTINGS
from autoscaler.core.spec import TargetSpec
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.core.sync import SyncInputs, SyncOutcome, SyncState, WriteResults, plan_sync, settle, sync
from autoscaler.values.fields import SpecError


def queue_metric(name: str = "queue_depth", threshold: str | None = None) -> dict[str, Any]:
    external: dict[str, Any] = {"metric": {"name": name}, "target": {"type": "AverageValue", "averageValue": "25"}}
    if threshold is not None:
        external["activationThreshold"] = threshold
    return {"type": "External", "external": external}


def target(
    *, min_replicas: int = 0, threshold: str | None = None, activation: dict[str, Any] | None = None, **extra: Any
) -> TargetSpec:
    data: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
        "minReplicas": min_replicas,
        "maxReplicas": 20,
        "metrics": [queue_metric(threshold=threshold)],
        # No scale-down window: the count the HPA algorithm proposes is the one it decides.
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}},
        **extra,
    }
    if activation is not None:
        data["activation"] = activation
    return parse_target_spec(data, require_queries=False)


def milli(value: float) -> MetricReading:
    return ExternalReading((round(value * 1000),), 0.0)


def run(
    spec: TargetSpec,
    current: int,
    *readings: MetricReading,
    now: float = 1000.0,
    last_active: float | None = None,
    created: float | None = 0.0,
    state: TargetState | None = None,
) -> SyncOutcome:
    observation = Observation(ScaleInfo(current, current, "app=worker"), (), readings)
    start = state if state is not None else TargetState(last_active_time=last_active)
    return sync(spec, SyncInputs(observation, created=created), SyncState(start), DEFAULT_SETTINGS, now)


def active_condition(outcome: SyncOutcome) -> tuple[str, str] | None:
    condition = find_condition(outcome.decision.conditions, "Active")
    return None if condition is None else (condition.status, condition.reason)


def event_reasons(outcome: SyncOutcome) -> list[str]:
    return [event.reason for event in outcome.decision.events]


# --- the threshold: strictly greater is active -----------------------------------------------------------


def test_a_value_equal_to_the_threshold_is_not_active_and_just_above_it_is() -> None:
    spec = target(threshold="5", activation={})
    at_threshold = run(spec, 0, milli(5))
    assert at_threshold.decision.replicas == 0
    assert active_condition(at_threshold) == ("False", "ScalerNotActive")
    above = run(spec, 0, milli(5.001))
    assert (above.decision.replicas, above.decision.scale) == (1, True)
    assert active_condition(above) == ("True", "ScalerActive")


def test_the_default_threshold_is_zero() -> None:
    spec = target(activation={})
    assert run(spec, 0, milli(0)).decision.replicas == 0
    assert run(spec, 0, milli(0.001)).decision.replicas == 1


# --- waking: whoever put the workload at 0 ---------------------------------------------------------------


def test_a_zero_someone_else_set_is_woken_when_active() -> None:
    # No ScaledToZero condition: the autoscaler never scaled this workload to 0 (KEDA did, or a person).
    woken = run(target(activation={}), 0, milli(200), now=50.0)
    assert (woken.decision.replicas, woken.decision.scale) == (1, True)
    assert woken.state.target.last_active_time == 50.0
    activated = [e for e in woken.decision.events if e.reason == "Activated"]
    assert [e.message for e in activated] == ["Scaled Deployment worker from 0 to 1, triggered by queue_depth"]


def test_without_activation_a_zero_someone_else_set_stays_upstreams_rule() -> None:
    stays = run(target(), 0, milli(200))
    assert (stays.decision.replicas, stays.decision.branch) == (0, "disabled")
    assert active_condition(stays) is None


def test_waking_goes_to_min_replicas_when_it_is_above_one() -> None:
    assert run(target(min_replicas=3, activation={}), 0, milli(1)).decision.replicas == 3


def test_active_min_replicas_zero_is_read_as_one() -> None:
    # A value of 1 against 25 per replica: the HPA algorithm proposes 1, never 0 while active.
    outcome = run(target(activation={}), 3, milli(1))
    assert outcome.decision.replicas == 1
    assert outcome.decision.activation is not None and outcome.decision.activation.action is Action.NONE


def test_a_failed_wake_write_posts_activation_failed_not_activated() -> None:
    spec = target(activation={})
    observation = Observation(ScaleInfo(0, 0, "app=worker"), (), (milli(9),))
    plan = plan_sync(spec, SyncInputs(observation, created=0.0), SyncState(), DEFAULT_SETTINGS, 10.0)
    failed = settle(plan, WriteResults(scale=False, scale_error="conflict"))
    assert "ActivationFailed" in event_reasons(failed) and "Activated" not in event_reasons(failed)


# --- the cooldown to idle --------------------------------------------------------------------------------


def test_the_cooldown_holds_until_strictly_after_it_ends() -> None:
    spec = target(activation={"cooldownSeconds": 300})
    cooling = run(spec, 4, milli(0), last_active=100.0, now=400.0)
    assert active_condition(cooling) == ("False", "ScalerCooldown")
    # The HPA algorithm's decision stands while cooling down: 0 proposed, 1 is its floor.
    assert cooling.decision.replicas == 1
    assert cooling.state.target.last_active_time == 100.0
    idle = run(spec, 4, milli(0), last_active=100.0, now=400.001)
    assert (idle.decision.replicas, idle.decision.scale) == (0, True)
    assert active_condition(idle) == ("False", "ScalerNotActive")
    deactivated = [e.message for e in idle.decision.events if e.reason == "Deactivated"]
    assert deactivated == ["Deactivated Deployment worker from 4 to 0"]


def test_never_active_the_initial_cooldown_counts_from_creation() -> None:
    spec = target(min_replicas=1, activation={"initialCooldownSeconds": 60})
    assert run(spec, 2, milli(0), created=1000.0, now=1060.0).decision.activation.action is Action.COOLING_DOWN  # type: ignore[union-attr]
    assert run(spec, 2, milli(0), created=1000.0, now=1060.5).decision.replicas == 0


def test_an_unknown_creation_time_has_no_initial_cooldown() -> None:
    spec = target(min_replicas=1, activation={"initialCooldownSeconds": 600})
    assert run(spec, 2, milli(0), created=None, now=5.0).decision.replicas == 0


def test_inactive_at_zero_stays_even_after_the_autoscaler_scaled_it_there() -> None:
    spec = target(activation={"cooldownSeconds": 0})
    to_zero = run(spec, 2, milli(0), last_active=0.0, now=10.0)
    assert to_zero.decision.replicas == 0
    # Its ScaledToZero condition would let the HPA algorithm leave 0 on its own; activation keeps it there.
    assert find_condition(to_zero.state.target.conditions, "ScaledToZero").status == "True"  # type: ignore[union-attr]
    stays = run(spec, 0, milli(0), state=to_zero.state.target, now=25.0)
    assert (stays.decision.replicas, stays.decision.scale) == (0, False)


# --- idleReplicas ----------------------------------------------------------------------------------------


def test_idle_replicas_is_where_an_inactive_target_goes_and_stays() -> None:
    spec = target(min_replicas=3, activation={"idleReplicas": 1, "cooldownSeconds": 0})
    assert run(spec, 5, milli(0), last_active=0.0).decision.replicas == 1
    # At idle, the HPA algorithm's "below minReplicas" rule would scale it to 3: not while inactive.
    stays = run(spec, 1, milli(0), last_active=0.0)
    assert (stays.decision.replicas, stays.decision.branch) == (1, "activation")
    # Active at idle: up to minReplicas (KEDA's scaleFromZeroOrIdle).
    assert run(spec, 1, milli(10)).decision.replicas == 3


# --- a failed metric never makes a target inactive -------------------------------------------------------


def test_a_failed_metric_never_scales_to_idle() -> None:
    spec = target(activation={"cooldownSeconds": 0})
    failed = run(spec, 4, MetricFailure("Prometheus did not answer"), last_active=0.0)
    assert (failed.decision.replicas, failed.decision.scale) == (4, False)
    assert active_condition(failed) == ("Unknown", "TriggerError")
    assert failed.state.target.last_active_time == 0.0
    assert run(spec, 0, MetricFailure("no answer")).decision.replicas == 0


def test_one_active_metric_wakes_even_when_another_fails() -> None:
    data_metrics = [queue_metric("a"), queue_metric("b")]
    spec = parse_target_spec(
        {
            "scaleTargetRef": {"kind": "Deployment", "name": "worker"},
            "minReplicas": 0,
            "maxReplicas": 5,
            "metrics": data_metrics,
            "activation": {},
        },
        require_queries=False,
    )
    outcome = run(spec, 0, MetricFailure("no answer"), milli(3))
    assert outcome.decision.replicas == 1
    assert [e.message for e in outcome.decision.events if e.reason == "Activated"] == [
        "Scaled Deployment worker from 0 to 1, triggered by b"
    ]


# --- explain, and a spec that drops activation ------------------------------------------------------------


def test_explain_says_what_activation_did() -> None:
    text = "\n".join(run(target(threshold="5", activation={}), 0, milli(7)).explanation())
    assert "queue_depth 7 > 5: active" in text
    assert "Scale up 0 → 1" in text
    cooling = run(target(activation={}), 3, milli(0), last_active=900.0, now=1000.0)
    assert "cooling down for 200s more" in "\n".join(cooling.explanation())


def test_a_target_whose_activation_is_removed_loses_its_active_condition() -> None:
    before = run(target(activation={}), 2, milli(5))
    assert active_condition(before) is not None
    after = run(target(min_replicas=1), 2, milli(5), state=before.state.target)
    assert active_condition(after) is None


# --- validation ------------------------------------------------------------------------------------------


def errors_of(data: dict[str, Any]) -> list[str]:
    base: dict[str, Any] = {"scaleTargetRef": {"kind": "Deployment", "name": "worker"}, "maxReplicas": 5}
    with pytest.raises(SpecError) as raised:
        parse_target_spec({**base, **data}, require_queries=False)
    return [f"{e.path}: {e.message}" for e in raised.value.errors]


def test_idle_replicas_must_be_below_the_active_floor() -> None:
    problems = errors_of({"minReplicas": 2, "metrics": [queue_metric()], "activation": {"idleReplicas": 2}})
    assert problems == [
        "spec.activation.idleReplicas: must be less than max(minReplicas, 1) = 2: "
        "an idle target runs fewer replicas than an active one"
    ]


def test_activation_needs_an_object_or_external_metric() -> None:
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}
    problems = errors_of({"metrics": [cpu], "activation": {}})
    assert len(problems) == 1 and problems[0].startswith("spec.activation: needs at least one Object or External")


def test_an_activation_threshold_on_a_pods_metric_is_forbidden() -> None:
    pods = {
        "type": "Pods",
        "pods": {
            "metric": {"name": "rps"},
            "target": {"type": "AverageValue", "averageValue": "1"},
            "activationThreshold": "1",
        },
    }
    problems = errors_of({"metrics": [pods, queue_metric()], "activation": {}})
    assert len(problems) == 1 and problems[0].startswith("spec.metrics[0].pods.activationThreshold: Forbidden")


def test_an_activation_threshold_without_activation_is_an_error_at_its_path() -> None:
    problems = errors_of({"metrics": [queue_metric(threshold="5")]})
    assert problems == [
        "spec.metrics[0].external.activationThreshold: Forbidden: read only by spec.activation "
        "(the target's idle <-> active phase), which is not set"
    ]


def test_activation_fields_are_checked_with_their_paths() -> None:
    problems = errors_of(
        {"metrics": [queue_metric()], "activation": {"cooldownSeconds": -1, "initialCooldownSecond": 5}}
    )
    assert any(p.startswith("spec.activation.cooldownSeconds:") for p in problems)
    assert any(p.startswith("spec.activation.initialCooldownSecond: unknown field") for p in problems)


# --- with a composite metric: its value against activationTarget decides ---------------------------------


def composite_target(activation_target: str, **extra: Any) -> TargetSpec:
    return parse_target_spec(
        {
            "scaleTargetRef": {"kind": "Deployment", "name": "worker"},
            "minReplicas": 0,
            "maxReplicas": 10,
            "metrics": [queue_metric("a"), queue_metric("b")],
            "composite": {
                "formula": "a + b",
                "target": {"type": "AverageValue", "averageValue": "10"},
                "activationTarget": activation_target,
            },
            "activation": {},
            **extra,
        },
        require_queries=False,
    )


def test_the_composite_value_strictly_above_activation_target_makes_the_target_active() -> None:
    spec = composite_target("5")
    at_target = run(spec, 0, milli(2), milli(3))
    assert at_target.decision.replicas == 0
    assert active_condition(at_target) == ("False", "ScalerNotActive")
    above = run(spec, 0, milli(2), milli(3.5))
    assert above.decision.replicas == 1
    assert [e.message for e in above.decision.events if e.reason == "Activated"] == [
        "Scaled Deployment worker from 0 to 1, triggered by composite-metric"
    ]


def test_a_failed_composite_input_leaves_activity_unknown() -> None:
    failed = run(composite_target("0"), 3, milli(9), MetricFailure("no answer"), last_active=0.0)
    assert active_condition(failed) == ("Unknown", "TriggerError")
    assert failed.decision.replicas == 3


def test_an_input_of_the_composite_takes_no_activation_threshold() -> None:
    data: dict[str, Any] = {
        "minReplicas": 0,
        "metrics": [queue_metric("a", threshold="1"), queue_metric("b")],
        "composite": {"formula": "a + b", "target": {"type": "AverageValue", "averageValue": "10"}},
        "activation": {},
    }
    [problem] = errors_of(data)
    assert problem.startswith("spec.metrics[0].external.activationThreshold: Forbidden: with spec.composite")
