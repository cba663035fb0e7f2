"""``syncPeriodSeconds`` (KEDA's pollingInterval) and ``ignoreNullValues`` (KEDA's, per Object/External
metric) in the target spec: read when valid, each invalid use reported with its path and rule."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.values.fields import SpecError


def spec(**extra: Any) -> dict[str, Any]:
    return {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
        "maxReplicas": 10,
        "metrics": [
            {
                "type": "External",
                "external": {
                    "metric": {"name": "queue"},
                    "target": {"type": "AverageValue", "averageValue": "10"},
                    "query": "sum(queue_depth)",
                },
            }
        ],
        **extra,
    }


def errors(data: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as raised:
        parse_target_spec(data)
    return [str(e) for e in raised.value.errors]


def test_a_spec_without_them_reads_as_before() -> None:
    parsed = parse_target_spec(spec())
    assert parsed.sync_period_seconds is None
    assert parsed.metrics[0].ignore_null_values is False


@pytest.mark.parametrize("seconds", [1, 30, 3600])
def test_sync_period_seconds(seconds: int) -> None:
    assert parse_target_spec(spec(syncPeriodSeconds=seconds)).sync_period_seconds == seconds


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (0, "spec.syncPeriodSeconds: must be between 1 and 3600"),
        (3601, "spec.syncPeriodSeconds: must be between 1 and 3600"),
        (1.5, "spec.syncPeriodSeconds: must be an integer"),
        ("30", "spec.syncPeriodSeconds: must be an integer"),
    ],
)
def test_sync_period_seconds_out_of_bounds(value: object, problem: str) -> None:
    found = errors(spec(syncPeriodSeconds=value))
    assert len(found) == 1 and found[0].startswith(problem), found


@pytest.mark.parametrize("source", ["external", "object"])
def test_ignore_null_values_on_a_value_metric(source: str) -> None:
    data = spec()
    metric = data["metrics"][0]
    if source == "object":
        metric["type"] = "Object"
        metric["object"] = {
            **metric.pop("external"),
            "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "queue"},
        }
    metric[source]["ignoreNullValues"] = True
    assert parse_target_spec(data).metrics[0].ignore_null_values is True
    metric[source]["ignoreNullValues"] = "yes"
    assert errors(data) == [f"spec.metrics[0].{source}.ignoreNullValues: must be true or false, not string"]


def test_ignore_null_values_on_a_per_pod_metric_is_forbidden() -> None:
    data = spec(
        metrics=[
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": "rps"},
                    "target": {"type": "AverageValue", "averageValue": "10"},
                    "query": "sum by (pod) (rps)",
                    "ignoreNullValues": True,
                },
            },
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50},
                    "ignoreNullValues": False,
                },
            },
        ]
    )
    assert errors(data) == [
        "spec.metrics[0].pods.ignoreNullValues: Forbidden: only Object and External metrics (one value) read an "
        "empty answer as 0, not Pods",
        "spec.metrics[1].resource.ignoreNullValues: Forbidden: only Object and External metrics (one value) read "
        "an empty answer as 0, not Resource",
    ]
