"""KEDA ScaledObjects as users write them, converted with no loss: the activation phase (minReplicaCount 0,
idleReplicaCount, cooldowns, activationThreshold), fallback, the pause annotations, scalingModifiers, the
polling interval, and each prometheus trigger's connection (serverAddress, namespace, headers, parameters,
TLS, timeout, TriggerAuthentication) as a named backend. Every written target passes the project's own
validation, and every backends fragment the service's settings parser."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.convert.helpers import SCALED_OBJECTS, documents
from tests.convert.keda_helpers import backends_of, note, queue_worker, run, scaled_object, spec_of


def test_the_queue_worker_scales_to_zero_with_the_activation_phase(tmp_path: Path) -> None:
    conversion, registry = run(queue_worker(cooldownPeriod=120, initialCooldownPeriod=60))
    spec = spec_of(conversion, tmp_path)
    assert conversion.losses == []
    # KEDA: minReplicaCount 0 (its default) runs 1 while active; idle at 0 after the cooldown
    assert spec["minReplicas"] == 1 and spec["maxReplicas"] == 20
    assert spec["activation"] == {"idleReplicas": 0, "cooldownSeconds": 120, "initialCooldownSeconds": 60}
    assert spec["metrics"] == [
        {
            "type": "External",
            "external": {
                "metric": {"name": "queue"},  # the trigger's name
                "target": {"type": "AverageValue", "averageValue": "25"},
                "query": 'sum(rabbitmq_queue_messages_ready{queue="jobs"})',
                "backend": "prometheus-monitoring",
                "ignoreNullValues": True,  # KEDA's default
            },
        }
    ]
    assert "wakes the workload from idle whoever scaled it there" in note(conversion, "spec.minReplicaCount")
    assert backends_of(registry) == {
        "prometheus-monitoring": {"url": "http://prometheus.monitoring.svc.cluster.local:9090"}
    }


@pytest.mark.parametrize(
    ("replicas", "min_replicas", "activation"),
    [
        ({"minReplicaCount": 0}, 1, {"idleReplicas": 0}),
        ({"minReplicaCount": 3, "idleReplicaCount": 0}, 3, {"idleReplicas": 0}),
        ({"minReplicaCount": 4, "idleReplicaCount": 1}, 4, {"idleReplicas": 1}),
        ({"minReplicaCount": 2}, 2, None),  # no activation phase: KEDA's HPA alone
    ],
)
def test_min_and_idle_replica_counts(
    replicas: dict[str, int], min_replicas: int, activation: dict[str, int] | None, tmp_path: Path
) -> None:
    conversion, _ = run(queue_worker(**replicas))
    spec = spec_of(conversion, tmp_path)
    assert spec["minReplicas"] == min_replicas
    assert spec.get("activation") == activation
    assert conversion.losses == []
    if activation is None:  # KEDA set a workload scaled to 0 by hand back to minReplicaCount; an HPA does not
        assert "stays at 0 until scaled up by hand" in note(conversion, "spec.minReplicaCount")


@pytest.mark.parametrize(
    ("replicas", "error"),
    [
        ({"idleReplicaCount": 0}, "spec.idleReplicaCount: 0 must be less than minReplicaCount"),  # min unset
        ({"minReplicaCount": 2, "idleReplicaCount": 2}, "spec.idleReplicaCount: 2 must be less than"),
        ({"minReplicaCount": 5, "maxReplicaCount": 3}, "spec.minReplicaCount: 5 must not exceed"),
    ],
)
def test_replica_counts_keda_refuses_are_errors(replicas: dict[str, int], error: str) -> None:
    conversion, _ = run(queue_worker(**replicas))
    assert conversion.target is None
    assert any(e.startswith(error) for e in conversion.errors), conversion.errors


def test_cpu_only_scale_to_zero_is_refused_as_keda_refuses_it() -> None:
    document = queue_worker()
    document["spec"]["triggers"] = [{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "50"}}]
    conversion, _ = run(document)
    assert conversion.target is None
    assert any("scale to zero needs a trigger other than cpu or memory" in e for e in conversion.errors)


def test_activation_threshold_is_written_only_where_it_decides(tmp_path: Path) -> None:
    document = queue_worker()
    document["spec"]["triggers"][0]["metadata"]["activationThreshold"] = "5"
    spec = spec_of(run(document)[0], tmp_path)
    assert spec["metrics"][0]["external"]["activationThreshold"] == "5"
    document["spec"]["minReplicaCount"] = 2  # no scale to zero: KEDA's activity decides nothing
    conversion, _ = run(document)
    assert "activationThreshold" not in spec_of(conversion, tmp_path)["metrics"][0]["external"]
    assert "decides nothing" in note(conversion, "spec.triggers[0].metadata.activationThreshold")
    assert conversion.losses == []


@pytest.mark.parametrize(
    "behavior", [None, "static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower"]
)
def test_fallback_each_behavior(behavior: str | None, tmp_path: Path) -> None:
    fallback: dict[str, Any] = {"failureThreshold": 3, "replicas": 6}
    if behavior:
        fallback["behavior"] = behavior
    conversion, _ = run(queue_worker(minReplicaCount=1, fallback=fallback))
    assert spec_of(conversion, tmp_path)["fallback"] == {
        "replicas": 6,
        "behavior": behavior or "static",
        "failureThreshold": 3,
    }
    assert conversion.losses == []


def test_fallback_by_scaling_modifiers_is_reported() -> None:
    conversion, _ = run(queue_worker(fallback={"failureThreshold": 3, "replicas": 6, "behavior": "scalingModifiers"}))
    assert [n.path for n in conversion.losses] == ["spec.fallback.behavior"]


def test_pause_annotations_become_the_targets(tmp_path: Path) -> None:
    document = queue_worker()
    document["metadata"]["annotations"] = {
        "autoscaling.keda.sh/paused-replicas": "3",
        "autoscaling.keda.sh/paused": "yes",  # KEDA: what ParseBool cannot read counts as true
        "autoscaling.keda.sh/paused-scale-in": "false",  # not paused: not written
        "autoscaling.keda.sh/paused-scale-out": "1",
    }
    conversion, _ = run(document)
    spec_of(conversion, tmp_path)
    assert conversion.target is not None
    assert conversion.target["metadata"]["annotations"] == {
        "autoscaler.dev/take-over": "true",
        "autoscaler.dev/paused-replicas": "3",
        "autoscaler.dev/paused": "true",
        "autoscaler.dev/paused-scale-out": "true",
    }
    assert conversion.losses == []
    document["metadata"]["annotations"] = {"autoscaling.keda.sh/paused-replicas": "three"}
    refused, _ = run(document)
    assert refused.errors == [
        "metadata.annotations['autoscaling.keda.sh/paused-replicas']: 'three' is not a replica count (KEDA refuses it)"
    ]


def test_polling_interval_is_the_sync_period(tmp_path: Path) -> None:
    conversion, _ = run(queue_worker(pollingInterval=10))
    assert spec_of(conversion, tmp_path)["syncPeriodSeconds"] == 10
    assert conversion.losses == []


def test_scaling_modifiers_become_the_composite_metric(tmp_path: Path) -> None:
    document = queue_worker(minReplicaCount=1)
    first = document["spec"]["triggers"][0]
    second = copy.deepcopy(first)
    first["name"], second["name"] = "queue_a", "queue_b"
    second["metadata"]["query"] = 'sum(rabbitmq_queue_messages_ready{queue="retries"})'
    second["metadata"]["activationThreshold"] = "3"
    document["spec"]["triggers"].append(second)
    document["spec"]["advanced"] = {
        "scalingModifiers": {
            "formula": "queue_b > 100 ? queue_a + queue_b : (queue_a + queue_b) / 2",
            "target": "10.0005",
            "activationTarget": "2",
        }
    }
    conversion, registry = run(document)
    spec = spec_of(conversion, tmp_path)
    assert spec["composite"] == {
        "formula": "queue_b > 100 ? queue_a + queue_b : (queue_a + queue_b) / 2",
        "target": {"type": "AverageValue", "averageValue": "10"},  # KEDA truncates the target to the milli
        "name": "composite-metric",
        "activationTarget": "2",
    }
    assert [m["external"]["metric"]["name"] for m in spec["metrics"]] == ["queue_a", "queue_b"]
    assert "activationTarget decides" in note(conversion, "spec.triggers[1].metadata.activationThreshold")
    assert len(backends_of(registry)) == 1  # both triggers read the same way: one backend
    assert conversion.losses == []


def test_kedas_formula_syntax_is_written_as_cel(tmp_path: Path) -> None:
    document = queue_worker(minReplicaCount=1)
    document["spec"]["advanced"] = {
        "scalingModifiers": {"formula": "queue > 10 and not (queue ** 2 < 5) ? queue : 0", "target": "5"}
    }
    conversion, _ = run(document)
    formula = spec_of(conversion, tmp_path)["composite"]["formula"]
    assert "and" not in formula and "**" not in formula and "pow(queue, 2)" in formula
    assert (
        note(conversion, "spec.advanced.scalingModifiers.formula")
        == f"changed: written as the composite's CEL: {formula}"
    )


@pytest.mark.parametrize(
    ("formula", "error"),
    [
        ("queue ?? 5", "spec.advanced.scalingModifiers.formula: "),  # no nil here: fallback says what to do
        ("queue +* 2", "spec.advanced.scalingModifiers.formula: "),
        ("other + 1", "converted spec.composite.formula: "),  # not a trigger's name
    ],
)
def test_a_formula_without_an_equivalent_is_an_error(formula: str, error: str) -> None:
    document = queue_worker(minReplicaCount=1)
    document["spec"]["advanced"] = {"scalingModifiers": {"formula": formula, "target": "5"}}
    conversion, _ = run(document)
    assert conversion.target is None
    assert any(e.startswith(error) for e in conversion.errors), conversion.errors


def test_every_trigger_form_and_what_is_not_converted(tmp_path: Path) -> None:
    auth = next(d for d in documents(SCALED_OBJECTS.read_text()) if d["kind"] == "TriggerAuthentication")
    conversion, _ = run(scaled_object("api"), auth)
    spec = spec_of(conversion, tmp_path)
    assert [m["type"] for m in spec["metrics"]] == ["Resource", "ContainerResource", "External"]
    assert spec["metrics"][2]["external"]["target"] == {"type": "Value", "value": "150.5"}
    assert "ignoreNullValues" not in spec["metrics"][2]["external"]  # "false" in the trigger
    assert spec["metrics"][2]["external"]["metric"]["name"] == "s2-prometheus"  # unnamed: KEDA's name
    assert [n.path for n in conversion.losses] == ["spec.triggers[3]"]  # the kafka trigger
    assert conversion.old_hpa == "api-hpa"
