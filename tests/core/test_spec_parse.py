"""The target spec: upstream's fields, defaults and validity rules, with every error at once."""

from typing import Any

import pytest
import yaml

from autoscaler.core.spec import (
    DEFAULT_SCALE_DOWN_RULES,
    DEFAULT_SCALE_UP_RULES,
    MetricSourceType,
    MetricTargetType,
    PolicyType,
    SelectPolicy,
)
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.values.fields import SpecError


def spec(text: str) -> Any:
    return yaml.safe_load(text)


BASE = {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 10}


def errors_of(data: object, **kwargs: Any) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_target_spec(data, **kwargs)
    return [str(e) for e in info.value.errors]


def test_a_pasted_hpa_spec_parses() -> None:
    parsed = parse_target_spec(
        spec("""
        scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
        minReplicas: 2
        maxReplicas: 10
        metrics:
        - type: Resource
          resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
        - type: ContainerResource
          containerResource: {name: memory, container: app, target: {type: AverageValue, averageValue: 1Gi}}
        - type: Pods
          pods:
            metric: {name: rps, selector: {matchLabels: {verb: GET}}}
            target: {type: AverageValue, averageValue: "100"}
            query: sum by (pod) (rate(http_requests_total[2m]))
        - type: Object
          object:
            describedObject: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: main}
            metric: {name: requests_per_second}
            target: {type: Value, value: 2k}
            query: sum(rate(nginx_requests_total[2m]))
        - type: External
          external:
            metric: {name: queue_depth}
            target: {type: Value, value: "30"}
            query: 'sum(queue_depth{queue="jobs"})'
    """)
    )
    assert parsed.min_replicas == 2 and parsed.max_replicas == 10
    assert [m.type for m in parsed.metrics] == list(MetricSourceType)
    assert parsed.metrics[0].target.average_utilization == 60
    assert parsed.metrics[1].container == "app"
    assert parsed.metrics[1].target.average_value is not None
    assert parsed.metrics[1].target.average_value.milli_value() == 1024**3 * 1000
    assert parsed.metrics[2].selector == {"matchLabels": {"verb": "GET"}}
    assert parsed.metrics[3].described_object is not None
    assert parsed.metrics[3].described_object.kind == "Ingress"
    assert parsed.metrics[4].query == 'sum(queue_depth{queue="jobs"})'
    assert parsed.behavior is None


def test_defaults() -> None:
    parsed = parse_target_spec(dict(BASE))
    assert parsed.min_replicas == 1
    assert len(parsed.metrics) == 1
    cpu = parsed.metrics[0]
    assert (cpu.type, cpu.name, cpu.target.type, cpu.target.average_utilization) == (
        MetricSourceType.RESOURCE,
        "cpu",
        MetricTargetType.UTILIZATION,
        80,
    )
    assert parse_target_spec({**BASE, "metrics": []}).metrics == parsed.metrics


def test_behavior_merges_each_field_over_the_api_defaults() -> None:
    parsed = parse_target_spec(
        {**BASE, "behavior": {"scaleUp": {"tolerance": "0.05"}, "scaleDown": {"selectPolicy": "Min"}}}
    )
    assert parsed.behavior is not None
    up, down = parsed.behavior.scale_up, parsed.behavior.scale_down
    assert up.policies == DEFAULT_SCALE_UP_RULES.policies
    assert up.stabilization_window_seconds == 0
    assert up.tolerance is not None and str(up.tolerance) == "50m"
    assert down.select_policy is SelectPolicy.MIN
    assert down.stabilization_window_seconds is None  # the controller's window applies
    assert down.policies == DEFAULT_SCALE_DOWN_RULES.policies
    # A user list replaces the whole default list.
    parsed = parse_target_spec(
        {**BASE, "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}]}}}
    )
    assert parsed.behavior is not None
    assert [(p.type, p.value, p.period_seconds) for p in parsed.behavior.scale_up.policies] == [
        (PolicyType.PODS, 1, 300)
    ]


def test_the_issue_example_message() -> None:
    data = {**BASE, "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 4, "periodSeconds": 3600}]}}}
    assert errors_of(data) == ["spec.behavior.scaleUp.policies[0].periodSeconds: must be between 1 and 1800"]


def test_every_violation_is_reported_at_once() -> None:
    data = spec("""
        scaleTargetRef: {kind: Deployment}
        minReplicas: 5
        maxReplicas: 3
        metrics:
        - type: Pods
          pods: {metric: {name: rps}, target: {type: Utilization, averageUtilization: 60}}
        - type: Resource
          external: {}
        - type: Foo
        behavior:
          scaleUp:
            stabilizationWindowSeconds: 4000
            selectPolicy: max
            polices: []
          scaleDown:
            policies: []
    """)
    assert errors_of(data) == [
        "spec.scaleTargetRef.name: Required value",
        "spec.maxReplicas: must be greater than or equal to `minReplicas`",
        "spec.metrics[0].pods.target.type: Utilization is not a valid target type for a Pods metric "
        "(valid only for Resource and ContainerResource metrics; use one of AverageValue)",
        "spec.metrics[0].pods.query: Required value: the PromQL this metric is read from",
        "spec.metrics[1].resource: Required value: must populate information for the given metric source",
        "spec.metrics[1].external: Forbidden: must populate the given metric source only",
        'spec.metrics[2].type: Unsupported value: "Foo": supported values: "ContainerResource", "External", '
        '"Object", "Pods", "Resource"',
        "spec.behavior.scaleUp.stabilizationWindowSeconds: must be between 0 and 3600",
        'spec.behavior.scaleUp.selectPolicy: Unsupported value: "max": supported values: "Max", "Min", '
        '"Disabled" (did you mean "Max"?)',
        'spec.behavior.scaleUp.polices: unknown field (did you mean "policies"?)',
        "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
    ]


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"maxReplicas": 0}, "spec.maxReplicas: must be greater than 0"),
        ({"minReplicas": -1}, "spec.minReplicas: must be between 0 and 2147483647"),
        ({"maxReplicas": "10"}, "spec.maxReplicas: must be an integer, not string"),
        ({"scaleTargetRef": {"kind": "Deployment", "name": "a/b"}}, "spec.scaleTargetRef.name: may not contain '/'"),
        (
            {"minReplicas": 0},
            "spec.metrics: must specify at least one Object or External metric to support scaling "
            "to zero replicas (minReplicas: 0)",
        ),
        ({"maxReplica": 3}, 'spec.maxReplica: unknown field (did you mean "maxReplicas"?)'),
        (
            {
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50, "averageValue": "100m"},
                        },
                    }
                ]
            },
            "spec.metrics[0].resource.target.averageValue: Forbidden: a Utilization target must not set averageValue "
            "(it would be ignored)",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}},
                    }
                ]
            },
            "spec.metrics[0].resource.target.averageUtilization: must be between 1 and 2147483647",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "External",
                        "external": {"metric": {"name": "q"}, "query": "q", "target": {"type": "Value", "value": "-1"}},
                    }
                ]
            },
            "spec.metrics[0].external.target.value: must be positive",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "External",
                        "external": {"metric": {"name": "q"}, "query": "q", "target": {"type": "Value", "value": "1x"}},
                    }
                ]
            },
            "spec.metrics[0].external.target.value: invalid quantity '1x': expected a number with an optional suffix, "
            "such as 500m, 1.5Gi, 2e3 or 100k (quantities must match '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$')",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "ephemeral-storage",
                            "target": {"type": "AverageValue", "averageValue": "1Gi"},
                        },
                    }
                ]
            },
            "spec.metrics[0].resource.query: Required value: there is no built-in query for resource "
            "'ephemeral-storage' (built in: cpu, memory)",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "Pods",
                        "pods": {
                            "metric": {"name": "rps"},
                            "query": "x",
                            "target": {"type": "AverageValue", "averageValue": "1"},
                        },
                        "extra": 1,
                    }
                ]
            },
            "spec.metrics[0].extra: unknown field",
        ),
        (
            {"behavior": {"scaleDown": {"tolerance": "-0.1"}}},
            "spec.behavior.scaleDown.tolerance: must be greater than or equal to 0",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "ContainerResource",
                        "containerResource": {
                            "name": "cpu",
                            "container": "App_1",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    }
                ]
            },
            "spec.metrics[0].containerResource.container: must be a valid container name (a DNS-1123 label)",
        ),
    ],
)
def test_single_violations(patch: dict[str, Any], message: str) -> None:
    assert errors_of({**BASE, **patch}) == [message]


def test_scale_to_zero_allowed_with_an_external_metric() -> None:
    parsed = parse_target_spec(
        {
            **BASE,
            "minReplicas": 0,
            "metrics": [
                {
                    "type": "External",
                    "external": {
                        "metric": {"name": "q"},
                        "query": "sum(q)",
                        "target": {"type": "AverageValue", "averageValue": "5"},
                    },
                }
            ],
        }
    )
    assert parsed.min_replicas == 0


def test_queries_can_be_optional_for_simulation() -> None:
    data = {
        **BASE,
        "metrics": [
            {
                "type": "Pods",
                "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "1"}},
            }
        ],
    }
    assert parse_target_spec(data, require_queries=False).metrics[0].query is None
    assert errors_of(data) == ["spec.metrics[0].pods.query: Required value: the PromQL this metric is read from"]


@pytest.mark.parametrize("data", [None, [], "spec", 3, {"scaleTargetRef": []}, {"metrics": {}}])
def test_wrong_shapes_are_errors_not_exceptions(data: object) -> None:
    assert errors_of(data)


def test_metrics_per_target_are_capped_with_a_path_precise_error() -> None:
    def with_metrics(count: int) -> dict[str, Any]:
        metric = {
            "type": "External",
            "external": {"metric": {"name": "q"}, "query": "sum(q)", "target": {"type": "Value", "value": "1"}},
        }
        return {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "w"},
            "maxReplicas": 5,
            "metrics": [metric] * count,
        }

    assert len(parse_target_spec(with_metrics(30)).metrics) == 30
    assert errors_of(with_metrics(31)) == ["spec.metrics: Too many: 31: must have at most 30 items"]
