"""The benchmark's cluster: Deployments × pods in namespaces, one ScalingTarget each (two metrics), seeded into
the emulator, and the load the exporter serves for their pods (every target steady, inside its tolerance)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autoscaler.values.timestamps import rfc3339
from autoscaler_sandbox import MetricsExporter
from kube_emulator import KubeEmulator

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "manifests" / "crd.yaml"
TARGETS = "scalingtargets.autoscaler.dev"
PODS_QUERY = "sum by (namespace, pod) (rate(http_requests_total{<<scope>>}[2m]))"
CPU_REQUEST_MILLI = 500
CPU_USAGE = 0.3  # cores per pod: 60 % of the request, the target utilization
REQUESTS_PER_POD = 10.0  # the Pods metric's target average value


@dataclass(frozen=True)
class Workload:
    namespace: str
    name: str
    pods: tuple[str, ...]


def layout(targets: int, pods: int, namespaces: int) -> list[Workload]:
    plan = []
    for index in range(targets):
        name = f"svc-{index:04d}"
        template_hash = f"{(index * 2654435761) % 16**8:08x}"[:10]
        plan.append(
            Workload(
                f"team-{index % namespaces:03d}", name, tuple(f"{name}-{template_hash}-{p:05d}" for p in range(pods))
            )
        )
    return plan


def bystanders(per_namespace: int, pods: int, namespaces: int) -> list[Workload]:
    """Other workloads sharing the targets' namespaces, that no target scales: ``per_namespace`` pods in
    each namespace (in Deployments of ``pods`` pods), their series served like the targets' pods'."""
    plan = []
    for namespace in range(namespaces):
        for index in range(-(-per_namespace // max(pods, 1))):
            name = f"other-{namespace:03d}-{index:04d}"
            count = min(pods, per_namespace - index * pods)
            plan.append(
                Workload(f"team-{namespace:03d}", name, tuple(f"{name}-5c6b7d8f9a-{p:05d}" for p in range(count)))
            )
    return plan


def _container(name: str) -> dict[str, Any]:
    return {
        "name": "app",
        "image": f"registry.example.com/{name}:1.4.2",
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "PORT", "value": "8080"}],
        "resources": {"requests": {"cpu": f"{CPU_REQUEST_MILLI}m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        "readinessProbe": {
            "httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"},
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "volumeMounts": [
            {"name": "kube-api-access", "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def deployment(w: Workload, started: str) -> dict[str, Any]:
    labels = {"app": w.name}
    replicas = len(w.pods)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": w.name,
            "namespace": w.namespace,
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/revision": "1"},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [_container(w.name)],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                },
            },
        },
        "status": {
            "observedGeneration": 1,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "reason": "MinimumReplicasAvailable",
                    "lastUpdateTime": started,
                    "lastTransitionTime": started,
                }
            ],
        },
    }


def pod(w: Workload, name: str, index: int, started: str) -> dict[str, Any]:
    template_hash = name.rsplit("-", 2)[1]
    ip = f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": w.namespace,
            "generateName": f"{w.name}-{template_hash}-",
            "labels": {"app": w.name, "pod-template-hash": template_hash},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{w.name}-{template_hash}",
                    "uid": f"00000000-0000-4000-8000-{index:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [_container(w.name)],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": f"node-{index % 100:03d}",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "priority": 0,
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        ],
                    },
                }
            ],
        },
        "status": {
            "phase": "Running",
            "hostIP": f"192.168.{index % 100}.1",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": started,
            "qosClass": "Burstable",
            "conditions": [
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": started}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": "app",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "image": f"registry.example.com/{w.name}:1.4.2",
                    "imageID": f"registry.example.com/{w.name}@sha256:{'0' * 64}",
                    "containerID": f"containerd://{index:064x}",
                    "state": {"running": {"startedAt": started}},
                }
            ],
        },
    }


SHARD_LABEL = "autoscaler.dev/shard"


def scaling_target(w: Workload, shard: str | None = None) -> dict[str, Any]:
    labels = {SHARD_LABEL: shard} if shard else {}
    return {
        "apiVersion": "autoscaler.dev/v1alpha1",
        "kind": "ScalingTarget",
        "metadata": {"name": w.name, "namespace": w.namespace, "labels": labels},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": w.name},
            "minReplicas": 1,
            "maxReplicas": 3 * len(w.pods),
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
                },
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": "http_requests_per_second"},
                        "target": {"type": "AverageValue", "averageValue": "10"},
                        "query": PODS_QUERY,
                    },
                },
            ],
        },
    }


def seed_cluster(
    emu: KubeEmulator, plan: list[Workload], shard_of: Callable[[Workload], str | None], others: Sequence[Workload] = ()
) -> None:
    """The plan's workloads with a target each, and ``others`` (:func:`bystanders`) without one."""
    started = rfc3339(time.time() - 3600)  # an hour ago: past every readiness and CPU-initialization delay
    index = 0
    for w in [*plan, *others]:
        emu.seed(deployment(w, started))
        emu.seed(*(pod(w, name, (index := index + 1), started) for name in w.pods))
    for w in plan:
        emu.seed(scaling_target(w, shard_of(w)))


def serve_load(exporter: MetricsExporter, plan: list[Workload]) -> None:
    origin = time.time() - 3600
    for w in plan:
        for name in w.pods:
            exporter.set_rate(
                "container_cpu_usage_seconds_total",
                {"namespace": w.namespace, "pod": name, "container": "app"},
                CPU_USAGE,
                origin=origin,
            )
            exporter.set_rate(
                "http_requests_total", {"namespace": w.namespace, "pod": name}, REQUESTS_PER_POD, origin=origin
            )
