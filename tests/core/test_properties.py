"""Properties that must hold for every input (hypothesis).

* the final count stays within [minReplicas, maxReplicas] (except the 0-replica disabled case);
* no window of a policy's periodSeconds ever sees more change than the policies allow;
* identical inputs give identical decisions;
* the spec and scenario parsers never raise anything but a validation error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoscaler.core.decision import TargetState, decide
from autoscaler.core.history import DecisionHistory, Recommendation, ScaleEvent
from autoscaler.core.observation import (
    ConditionStatus,
    ContainerInfo,
    ExternalReading,
    MetricFailure,
    MetricReading,
    Observation,
    PodInfo,
    PodPhase,
    PodUsage,
    ResourceReading,
    ScaleInfo,
)
from autoscaler.core.rescale import apply_scale_result
from autoscaler.core.settings import ControllerSettings, Tolerances
from autoscaler.core.spec import (
    Behavior,
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    PolicyType,
    ScalingPolicy,
    ScalingRules,
    SelectPolicy,
    TargetSpec,
)
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.simulate.scenario import parse_scenario
from autoscaler.values.fields import SpecError
from autoscaler.values.quantity import Quantity

CPU = MetricSpec(MetricSourceType.RESOURCE, "cpu", MetricTarget(MetricTargetType.UTILIZATION, average_utilization=60))
QUEUE = MetricSpec(
    MetricSourceType.EXTERNAL, "queue", MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("10"))
)

policies = st.builds(ScalingPolicy, st.sampled_from(PolicyType), st.integers(1, 300), st.integers(1, 600))
rules = st.builds(
    ScalingRules,
    st.one_of(st.none(), st.integers(0, 600)),
    st.sampled_from(SelectPolicy),
    st.lists(policies, min_size=1, max_size=3).map(tuple),
)
behaviors = st.one_of(st.none(), st.builds(Behavior, rules, rules))


@st.composite
def specs(draw: st.DrawFn) -> TargetSpec:
    min_replicas = draw(st.integers(1, 20))
    max_replicas = draw(st.integers(min_replicas, 200))
    return TargetSpec(
        CrossVersionObjectReference("Deployment", "web"), max_replicas, min_replicas, (CPU, QUEUE), draw(behaviors)
    )


@st.composite
def observations(draw: st.DrawFn, replicas: int, now: float) -> Observation:
    pods = []
    usage: dict[str, PodUsage] = {}
    for i in range(min(replicas, 12)):
        name = f"p{i}"
        phase = draw(st.sampled_from([PodPhase.RUNNING] * 6 + [PodPhase.PENDING, PodPhase.FAILED]))
        ready = draw(st.sampled_from([ConditionStatus.TRUE] * 4 + [ConditionStatus.FALSE, None]))
        pods.append(
            PodInfo(
                name,
                phase,
                ready,
                now - draw(st.integers(0, 1000)),
                now - draw(st.integers(0, 1000)),
                draw(st.booleans()) and draw(st.booleans()),
                (ContainerInfo("app", {"cpu": 500}),),
            )
        )
        if draw(st.integers(0, 9)) > 0:
            usage[name] = PodUsage({"app": draw(st.integers(0, 2000))}, now - draw(st.integers(0, 90)))
    cpu: MetricReading = MetricFailure("down") if draw(st.integers(0, 9)) == 0 else ResourceReading(usage)
    queue: MetricReading = (
        MetricFailure("down")
        if draw(st.integers(0, 9)) == 0
        else ExternalReading((draw(st.integers(0, 5_000_000)),), now)
    )
    status_replicas = draw(st.one_of(st.just(replicas), st.integers(0, 300)))
    return Observation(ScaleInfo(replicas, status_replicas, "app=web"), pods, (cpu, queue))


@st.composite
def histories(draw: st.DrawFn, now: float) -> DecisionHistory | None:
    if draw(st.booleans()):
        return None
    recs = draw(st.lists(st.builds(Recommendation, st.integers(0, 300), st.floats(now - 2000, now)), max_size=6))
    ups = draw(st.lists(st.builds(ScaleEvent, st.integers(1, 50), st.floats(now - 2000, now)), max_size=4))
    downs = draw(st.lists(st.builds(ScaleEvent, st.integers(1, 50), st.floats(now - 2000, now)), max_size=4))
    return DecisionHistory(tuple(recs), tuple(ups), tuple(downs))


tolerances = st.builds(Tolerances, st.sampled_from([0.0, 0.05, 0.1, 0.3]), st.sampled_from([0.0, 0.05, 0.1, 0.3]))
controller_settings = st.builds(
    ControllerSettings,
    tolerances,
    st.sampled_from([0.0, 120.0, 300.0]),
    st.sampled_from([0.0, 10.0, 30.0]),
    st.sampled_from([0.0, 60.0, 300.0]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), spec=specs(), config=controller_settings)
def test_final_replicas_always_within_min_and_max(
    data: st.DataObject, spec: TargetSpec, config: ControllerSettings
) -> None:
    now = 10_000.0
    replicas = data.draw(st.integers(0, 250))
    observation = data.draw(observations(replicas, now))
    state = TargetState(history=data.draw(histories(now)))
    decision = decide(spec, observation, state, config, now)
    if decision.branch == "disabled":
        assert replicas == 0 and decision.replicas == 0 and not decision.scale
    else:
        assert spec.min_replicas <= decision.replicas <= spec.max_replicas or not decision.scale
        if decision.scale:
            assert spec.min_replicas <= decision.replicas <= spec.max_replicas
    assert decision == decide(spec, observation, state, config, now)


@dataclass
class Change:
    at: float
    before: int
    after: int


def _allowed(rules_: ScalingRules, start: int, up: bool) -> list[int]:
    out = []
    for p in rules_.policies:
        if p.type is PolicyType.PODS:
            out.append(start + p.value if up else start - p.value)
        elif up:
            out.append(math.ceil(start * (1 + p.value / 100)))
        else:
            out.append(int(start * (1 - p.value / 100)))
    return out


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    up=rules,
    down=rules,
    start=st.integers(1, 60),
    loads=st.lists(st.integers(0, 3000), min_size=5, max_size=40),
    gaps=st.lists(st.sampled_from([5, 15, 15, 30, 60]), min_size=40, max_size=40),
)
def test_no_policy_window_sees_more_change_than_allowed(
    data: st.DataObject, up: ScalingRules, down: ScalingRules, start: int, loads: list[int], gaps: list[int]
) -> None:
    """Replay a load curve; at every scale, the change inside each policy's period respects the policies:
    with selectPolicy Min every policy holds, with Max at least one does, with Disabled nothing moves."""
    spec = TargetSpec(CrossVersionObjectReference("Deployment", "web"), 1000, 1, (QUEUE,), Behavior(up, down))
    state = TargetState(history=DecisionHistory())
    replicas, now = start, 0.0
    changes: list[Change] = []
    for load, gap in zip(loads, gaps, strict=False):
        now += gap
        observation = Observation(ScaleInfo(replicas, replicas, "app=web"), [], (ExternalReading((load * 1000,), now),))
        decision = decide(spec, observation, state, ControllerSettings(), now)
        if decision.scale:
            decision = apply_scale_result(decision, spec, True, now)
            changes.append(Change(now, replicas, decision.replicas))
            going_up = decision.replicas > replicas
            rules_ = up if going_up else down
            assert rules_.select_policy is not SelectPolicy.DISABLED
            verdicts = []
            for policy in rules_.policies:
                cutoff = now - policy.period_seconds
                added = sum(c.after - c.before for c in changes if c.at > cutoff and c.after > c.before)
                removed = sum(c.before - c.after for c in changes if c.at > cutoff and c.after < c.before)
                period_start = decision.replicas - added + removed
                bound = _allowed(ScalingRules(None, rules_.select_policy, (policy,)), period_start, going_up)[0]
                verdicts.append(decision.replicas <= bound if going_up else decision.replicas >= bound)
            if rules_.select_policy is SelectPolicy.MIN:
                assert all(verdicts), (changes, rules_)
            else:
                assert any(verdicts), (changes, rules_)
        state = TargetState(decision.history, decision.conditions, decision.status_desired_replicas)
        replicas = decision.replicas


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=8)),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=25,
)

VALID_SPEC: dict[str, Any] = yaml.safe_load("""
scaleTargetRef: {kind: Deployment, name: web}
minReplicas: 1
maxReplicas: 10
metrics:
- type: Resource
  resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
- type: External
  external: {metric: {name: q}, target: {type: Value, value: "3"}, query: q}
behavior:
  scaleUp: {stabilizationWindowSeconds: 0, policies: [{type: Pods, value: 4, periodSeconds: 15}]}
""")


def _mutate(value: Any, path: list[Any], replacement: Any) -> Any:
    if not path:
        return replacement
    head, rest = path[0], path[1:]
    if isinstance(value, dict) and head in value:
        return {**value, head: _mutate(value[head], rest, replacement)}
    if isinstance(value, list) and isinstance(head, int) and 0 <= head < len(value):
        return [*value[:head], _mutate(value[head], rest, replacement), *value[head + 1 :]]
    return value


def _paths(value: Any, prefix: list[Any]) -> list[list[Any]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, [*prefix, k]))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, [*prefix, i]))
    return out


SPEC_PATHS = _paths(VALID_SPEC, [])


@settings(max_examples=500, deadline=None)
@given(data=json_values)
def test_spec_parser_only_raises_validation_errors(data: Any) -> None:
    try:
        parse_target_spec(data)
    except SpecError as exc:
        assert exc.errors


@settings(max_examples=500, deadline=None)
@given(path=st.sampled_from(SPEC_PATHS), replacement=json_values)
def test_spec_parser_on_mutated_valid_specs(path: list[Any], replacement: Any) -> None:
    try:
        parse_target_spec(_mutate(VALID_SPEC, path, replacement))
    except SpecError as exc:
        assert all(e.path.startswith("spec") for e in exc.errors)


VALID_SCENARIO: dict[str, Any] = {
    "spec": VALID_SPEC,
    "settings": {"tolerance": {"scaleUp": 0.1}},
    "history": {"recommendations": [{"replicas": 2, "at": -30}], "scaleUpEvents": [{"change": 1, "at": -5}]},
    "steps": [
        {
            "at": 0,
            "replicas": 2,
            "pods": [
                {"name": "a", "containers": [{"name": "app", "requests": {"cpu": "500m"}, "usage": {"cpu": "300m"}}]}
            ],
            "external": {"q": ["1", "2"]},
        }
    ],
}
SCENARIO_PATHS = _paths(VALID_SCENARIO, [])


@settings(max_examples=500, deadline=None)
@given(data=json_values)
def test_scenario_parser_only_raises_validation_errors(data: Any) -> None:
    try:
        parse_scenario(data)
    except SpecError as exc:
        assert exc.errors


@settings(max_examples=500, deadline=None)
@given(path=st.sampled_from(SCENARIO_PATHS), replacement=json_values)
def test_scenario_parser_on_mutated_valid_scenarios(path: list[Any], replacement: Any) -> None:
    try:
        parse_scenario(_mutate(VALID_SCENARIO, path, replacement))
    except SpecError as exc:
        assert exc.errors
