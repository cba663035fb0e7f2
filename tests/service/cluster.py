"""Building blocks for service tests: an emulated cluster with the CRD, workloads and targets, and a
metrics source the test controls."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from autoscaler.core.observation import (
    ExternalReading,
    MetricFailure,
    MetricReading,
    PodsReading,
    PodUsage,
    ResourceReading,
    Sample,
)
from autoscaler.core.spec import MetricSourceType
from autoscaler.prometheus.queries import TargetQuery
from autoscaler_sandbox import demo_objects
from kube_emulator import KubeEmulator

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "manifests" / "crd.yaml"


def deployment(name: str, replicas: int, *, namespace: str = "default", cpu: str = "500m") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": cpu}}}]},
            },
        },
    }


def target(
    name: str,
    workload: str,
    *,
    namespace: str = "default",
    min_replicas: int = 1,
    max_replicas: int = 20,
    metrics: Sequence[Mapping[str, Any]] | None = None,
    behavior: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workload},
        "minReplicas": min_replicas,
        "maxReplicas": max_replicas,
        "metrics": list(metrics) if metrics is not None else [queue_metric()],
    }
    if behavior is not None:
        spec["behavior"] = dict(behavior)
    return {
        "apiVersion": "autoscaler.dev/v1alpha1",
        "kind": "ScalingTarget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def queue_metric(name: str = "queue", per_pod: str = "10") -> dict[str, Any]:
    return {
        "type": "External",
        "external": {
            "metric": {"name": name},
            "query": f"sum({name})",
            "target": {"type": "AverageValue", "averageValue": per_pod},
        },
    }


class FakeMetrics:
    """A metrics source the test sets: external values by metric name (None = the fetch fails),
    per-pod CPU usage (milli) by pod name. Counts the reads."""

    def __init__(self) -> None:
        self.external: dict[str, int | None] = {}
        self.cpu: dict[str, int] = {}
        self.reads = 0
        self.queries: list[TargetQuery] = []

    def set(self, name: str, value: float | None) -> None:
        self.external[name] = None if value is None else int(value * 1000)

    async def read_many(
        self, queries: Sequence[TargetQuery], at: float | None, *, on_ready: object = None
    ) -> list[list[MetricReading]]:
        at = time.time() if at is None else at  # "now": this stand-in's clock is the test's
        self.reads += 1
        self.queries.extend(queries)
        rows: list[list[MetricReading]] = []
        for query in queries:
            row: list[MetricReading] = []
            for metric in query.metrics:
                if metric.type is MetricSourceType.EXTERNAL:
                    value = self.external.get(metric.name)
                    row.append(
                        MetricFailure("Prometheus is unreachable") if value is None else ExternalReading((value,), at)
                    )
                elif metric.type is MetricSourceType.PODS:
                    row.append(PodsReading({p: Sample(v, at) for p, v in self.cpu.items() if p in query.pod_names}))
                else:
                    row.append(
                        ResourceReading(
                            {p: PodUsage({"app": v}, at) for p, v in self.cpu.items() if p in query.pod_names}
                        )
                    )
            rows.append(row)
        return rows


async def eventually(check: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:  # noqa: ASYNC109
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def replicas_of(emu: KubeEmulator, name: str, namespace: str = "default") -> int:
    obj = emu.get("deployments", name, namespace)
    assert obj is not None
    return int(obj["spec"]["replicas"])


def status_of(emu: KubeEmulator, name: str, namespace: str = "default") -> dict[str, Any]:
    obj = emu.get("scalingtargets.autoscaler.dev", name, namespace)
    assert obj is not None
    return dict(obj.get("status") or {})


def condition(status: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


VPA_CRD = demo_objects.VPA_CRD  # the same stand-in for the VPA CRD the demo installs


def vpa(name: str, workload: str, *, cpu: str, memory: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workload},
            "updatePolicy": {"updateMode": "Auto"},
            "resourcePolicy": {"containerPolicies": [{"containerName": "main"}]},
        },
        "status": {
            "conditions": [{"type": "RecommendationProvided", "status": "True"}],
            "recommendation": {
                "containerRecommendations": [
                    {
                        "containerName": "main",
                        "target": {"cpu": cpu, "memory": memory},
                        "uncappedTarget": {"cpu": cpu, "memory": memory},
                    }
                ]
            },
        },
    }
