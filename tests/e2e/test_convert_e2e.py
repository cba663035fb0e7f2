"""The round trip: an HPA and prometheus-adapter's configuration, converted by ``autoscaler convert``,
run by ``autoscaler run`` against a real Prometheus and the API emulator, reaches the replica
counts the HPA's algorithm gives on the same values.

The oracle below is upstream's formula for the two metric types used, written out here (it shares
no code with the engine): for an AverageValue External or Object metric, the usage ratio is
``value / (target × current)``; within the tolerance (0.1) the count stays, otherwise it becomes
``ceil(value / target)``; the HPA takes the largest proposal, within [minReplicas, maxReplicas].
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.cli import main
from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.e2e.conftest import until
from tests.service.cluster import condition, deployment, replicas_of, status_of

pytestmark = pytest.mark.prometheus

ADAPTER = {
    "rules": [
        {
            "seriesQuery": 'ingress_active_connections{namespace!="",ingress!=""}',
            "resources": {"template": "<<.Resource>>"},
            "metricsQuery": "max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
        }
    ],
    "externalRules": [
        {
            "seriesQuery": 'queue_messages_ready{queue!=""}',
            "resources": {"overrides": {"namespace": {"resource": "namespace"}}},
            "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
        }
    ],
}
QUEUE_TARGET, CONNECTIONS_TARGET, MIN, MAX = 10, 50, 1, 20
HPA = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "shop", "namespace": "default"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "shop"},
        "minReplicas": MIN,
        "maxReplicas": MAX,
        "metrics": [
            {
                "type": "External",
                "external": {
                    "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": "jobs"}}},
                    "target": {"type": "AverageValue", "averageValue": str(QUEUE_TARGET)},
                },
            },
            {
                "type": "Object",
                "object": {
                    "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                    "metric": {"name": "ingress_active_connections"},
                    "target": {"type": "AverageValue", "averageValue": str(CONNECTIONS_TARGET)},
                },
            },
        ],
        "behavior": {
            "scaleUp": {"policies": [{"type": "Pods", "value": 20, "periodSeconds": 1}]},
            "scaleDown": {
                "stabilizationWindowSeconds": 2,
                "policies": [{"type": "Pods", "value": 20, "periodSeconds": 1}],
            },
        },
    },
}


def proposal(value: float, target: float, current: int) -> int:
    ratio = value / (target * current)
    return current if abs(ratio - 1.0) <= 0.1 else math.ceil(value / target)


def hpa_settles_at(current: int, queue: float, connections: float) -> int:
    """The count the HPA's algorithm reaches from ``current`` and stays at."""
    for _ in range(50):
        desired = max(proposal(queue, QUEUE_TARGET, current), proposal(connections, CONNECTIONS_TARGET, current))
        desired = min(MAX, max(MIN, desired))
        if desired == current:
            return current
        current = desired
    raise AssertionError("the HPA algorithm does not settle on these values")


async def set_values(
    exporter: MetricsExporter, prometheus: PrometheusSandbox, queue: float, connections: float
) -> None:
    """Set the values, and wait (in a thread: the emulator serves the service from this loop, and a blocked
    loop would cost the service its 3 s lease) until Prometheus has them."""
    exporter.set("queue_messages_ready", {"namespace": "default", "queue": "jobs"}, queue)
    exporter.set("queue_messages_ready", {"namespace": "other", "queue": "jobs"}, 5000)
    exporter.set("ingress_active_connections", {"namespace": "default", "ingress": "main"}, connections)
    exporter.set("ingress_active_connections", {"namespace": "default", "ingress": "admin"}, 9000)
    for series, value in (
        ('queue_messages_ready{namespace="default"}', queue),
        ('ingress_active_connections{ingress="main"}', connections),
    ):
        await asyncio.to_thread(
            prometheus.wait_for, series, lambda result, v=value: bool(result) and float(result[0]["value"][1]) == v, 15
        )


def converted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    (tmp_path / "hpa.yaml").write_text(yaml.safe_dump(HPA))
    (tmp_path / "adapter.yaml").write_text(yaml.safe_dump(ADAPTER))
    assert (
        main(["convert", str(tmp_path / "hpa.yaml"), "--adapter-config", str(tmp_path / "adapter.yaml"), "--strict"])
        == 0
    )
    (target,) = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    return dict(target)


async def test_converted_hpa_reaches_the_hpa_algorithms_counts(
    cluster: KubeEmulator,
    prometheus: PrometheusSandbox,
    exporter: MetricsExporter,
    services: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = converted(tmp_path, capsys)
    await set_values(exporter, prometheus, queue=60, connections=100)
    cluster.create(deployment("shop", 2))
    cluster.create(target)
    services("one", cluster, prometheus)
    first = hpa_settles_at(2, queue=60, connections=100)
    assert first == 6
    # The scale is written before the status: wait for both.
    await until(
        lambda: (
            replicas_of(cluster, "shop") == first
            and (condition(status_of(cluster, "shop"), "ScalingActive") or {}).get("status") == "True"
        ),
        seconds=40,
        what=f"{first} replicas, and ScalingActive True",
    )

    await set_values(exporter, prometheus, queue=0, connections=230)
    second = hpa_settles_at(first, queue=0, connections=230)
    assert second == 5
    await until(
        lambda: replicas_of(cluster, "shop") == second and status_of(cluster, "shop").get("desiredReplicas") == second,
        seconds=40,
        what=f"{second} replicas, in the status too",
    )
    # and it stays there: 230 / (50 × 5) is within the tolerance
    status = status_of(cluster, "shop")
    assert status.get("desiredReplicas") == second
