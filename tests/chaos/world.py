"""The workloads, targets and load the chaos tests drive: a queue whose depth the test sets (Prometheus
scrapes it from the exporter every second), read as an External metric of 10 per pod."""

from __future__ import annotations

import asyncio
import copy
import subprocess
from pathlib import Path
from typing import Any

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator

QUEUE_QUERY = 'sum(queue_depth{queue="jobs"})'


def queue_metric(query: str = QUEUE_QUERY, per_pod: str = "10", name: str = "queue_depth") -> dict[str, Any]:
    return {
        "type": "External",
        "external": {
            "metric": {"name": name},
            "query": query,
            "target": {"type": "AverageValue", "averageValue": per_pod},
        },
    }


def target(
    name: str,
    workload: str | None = None,
    *,
    behavior: dict[str, Any] | None = None,
    metrics: list[dict[str, Any]] | None = None,
    min_replicas: int = 1,
    max_replicas: int = 20,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workload or name},
        "minReplicas": min_replicas,
        "maxReplicas": max_replicas,
        "metrics": copy.deepcopy(metrics) if metrics is not None else [queue_metric()],
    }
    if behavior is not None:
        spec["behavior"] = behavior
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "autoscaler.dev/v1alpha1", "kind": "ScalingTarget", "metadata": metadata, "spec": spec}


async def set_load(
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
    depth: float,
    labels: dict[str, str] | None = None,
    metric: str = "queue_depth",
) -> None:
    """Set the queue depth and wait (off the loop: the emulator runs on it) until Prometheus has it."""
    labels = labels or {"queue": "jobs"}
    exporter.set(metric, labels, depth)
    matchers = ",".join(f'{k}="{v}"' for k, v in labels.items())
    await asyncio.to_thread(
        prometheus.wait_for,
        f"{metric}{{{matchers}}}",
        lambda result: bool(result) and float(result[0]["value"][1]) == depth,
        15,
    )


def status_of(cluster: KubeEmulator, name: str, namespace: str = "default") -> dict[str, Any]:
    obj = cluster.get("scalingtargets.autoscaler.dev", name, namespace)
    return dict((obj or {}).get("status") or {})


def condition(cluster: KubeEmulator, name: str, type_: str, namespace: str = "default") -> dict[str, Any]:
    for item in status_of(cluster, name, namespace).get("conditions") or []:
        if item.get("type") == type_:
            return dict(item)
    return {}


def replicas_of(cluster: KubeEmulator, name: str, namespace: str = "default") -> int | None:
    obj = cluster.get("deployments", name, namespace)
    return int(obj["spec"]["replicas"]) if obj is not None else None


async def kubectl(cluster: KubeEmulator, workdir: Path, *args: str) -> str:
    """Run the real kubectl against the emulator (directly, not through any relay); returns stdout."""
    config = cluster.write_kubeconfig(workdir / "kubectl.kubeconfig")
    result = await asyncio.to_thread(
        subprocess.run, ["kubectl", "--kubeconfig", str(config), *args], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout
