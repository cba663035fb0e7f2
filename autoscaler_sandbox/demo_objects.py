"""What the demo sandbox holds: the ``web`` Deployment with pods that have run for a while, the
ScalingTarget for it (time-compressed), and a VerticalPodAutoscaler in recommendation mode.

All durations are written here in demo seconds and compressed by the :class:`TimeScale`.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from autoscaler.values.timestamps import rfc3339
from autoscaler_sandbox.timescale import TimeScale
from autoscaler_sandbox.world import REQUESTS_SERIES, Workload
from kube_emulator.workloads import template_hash

NAMESPACE = "default"
WEB = Workload(NAMESPACE, "web", "app", cpu_request=0.5)
CRD_FILE = Path(__file__).resolve().parents[1] / "manifests" / "crd.yaml"  # autoscaler_sandbox/ sits at the root

INITIAL_REPLICAS = 2
MIN_REPLICAS = 2
MAX_REPLICAS = 12
CPU_TARGET_PERCENT = 60
REQUESTS_TARGET_PER_POD = 120

# The target's behavior, in demo seconds (multiples of 60: see timescale.SPEEDS).
SCALE_UP_PODS = 3
SCALE_UP_PERIOD = 60
SCALE_DOWN_WINDOW = 120
SCALE_DOWN_PERCENT = 50
SCALE_DOWN_PERIOD = 60

VPA_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "verticalpodautoscalers.autoscaling.k8s.io"},
    "spec": {
        "group": "autoscaling.k8s.io",
        "scope": "Namespaced",
        "names": {
            "kind": "VerticalPodAutoscaler",
            "plural": "verticalpodautoscalers",
            "singular": "verticalpodautoscaler",
            "shortNames": ["vpa"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


def scalingtarget_crd() -> str:
    """The project's CRD, as YAML text: the demo installs the very CRD a cluster would get. It blocks
    (a file read): call it off the event loop."""
    try:
        return CRD_FILE.read_text(encoding="utf-8")
    except OSError as exc:
        raise FileNotFoundError(
            f"cannot read the ScalingTarget CRD ({exc}): the demo runs from a source "
            f"checkout of the project (pip install -e .)"
        ) from None


def deployment(workload: Workload = WEB, replicas: int = INITIAL_REPLICAS) -> dict[str, Any]:
    labels = {"app": workload.name}
    container = {
        "name": workload.container,
        "image": f"demo/{workload.name}:1.0",
        "resources": {
            "requests": {"cpu": f"{round(workload.cpu_request * 1000)}m", "memory": "256Mi"},
            "limits": {"memory": "256Mi"},
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": workload.name, "namespace": workload.namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def running_pods(stored_deployment: dict[str, Any], count: int, age: float = 3600.0) -> list[dict[str, Any]]:
    """Pods as the emulator's workload controller would have left them ``age`` seconds after starting
    them: Running and Ready for long, so no start-up rule applies to them when the demo begins."""
    meta, spec = stored_deployment["metadata"], stored_deployment["spec"]
    template = spec["template"]
    revision = template_hash(template)
    since = rfc3339(time.time() - age)
    pods = []
    for index in range(count):
        suffix = hashlib.sha256(f"{meta['name']}-{index}".encode()).hexdigest()[:5]
        ready = {"status": "True", "lastTransitionTime": since}
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{meta['name']}-{revision}-{suffix}",
                    "namespace": meta["namespace"],
                    "creationTimestamp": since,
                    "labels": {**template["metadata"]["labels"], "pod-template-hash": revision},
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {**template["spec"], "nodeName": "emulated-node"},
                "status": {
                    "phase": "Running",
                    "qosClass": "Burstable",
                    "startTime": since,
                    "podIP": f"10.244.0.{index + 2}",
                    "hostIP": "10.0.0.1",
                    "conditions": [
                        {"type": "Initialized", "status": "True", "lastTransitionTime": since},
                        {"type": "Ready", **ready},
                        {"type": "ContainersReady", **ready},
                        {"type": "PodScheduled", "status": "True", "lastTransitionTime": since},
                    ],
                    "containerStatuses": [
                        {
                            "name": c["name"],
                            "image": c["image"],
                            "ready": True,
                            "started": True,
                            "restartCount": 0,
                            "state": {"running": {"startedAt": since}},
                        }
                        for c in template["spec"]["containers"]
                    ],
                },
            }
        )
    return pods


def target(scale: TimeScale, workload: Workload = WEB) -> dict[str, Any]:
    """The ScalingTarget: CPU utilization and requests per pod, a scale-up rate limit, and a scale-down
    stabilization window followed by a rate limit, compressed to the demo's speed."""
    requests_query = f'sum(rate({REQUESTS_SERIES}{{<<scope>>, service="{workload.name}"}}[<<window>>]))'
    return {
        "apiVersion": "autoscaler.dev/v1alpha1",
        "kind": "ScalingTarget",
        "metadata": {"name": workload.name, "namespace": workload.namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workload.name},
            "minReplicas": MIN_REPLICAS,
            "maxReplicas": MAX_REPLICAS,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": CPU_TARGET_PERCENT},
                    },
                },
                {
                    "type": "External",
                    "external": {
                        "metric": {"name": "requests_per_second"},
                        "query": requests_query,
                        "target": {"type": "AverageValue", "averageValue": str(REQUESTS_TARGET_PER_POD)},
                    },
                },
            ],
            "behavior": {
                "scaleUp": {
                    "stabilizationWindowSeconds": 0,
                    "policies": [
                        {"type": "Pods", "value": SCALE_UP_PODS, "periodSeconds": scale.whole_wall(SCALE_UP_PERIOD)}
                    ],
                },
                "scaleDown": {
                    "stabilizationWindowSeconds": scale.whole_wall(SCALE_DOWN_WINDOW),
                    "policies": [
                        {
                            "type": "Percent",
                            "value": SCALE_DOWN_PERCENT,
                            "periodSeconds": scale.whole_wall(SCALE_DOWN_PERIOD),
                        }
                    ],
                },
            },
        },
    }


# What each limiting reason means for this target (the timeline prints it beside the reason). The
# bounds (TooManyReplicas, TooFewReplicas) are not here: a person may `kubectl patch` them while the demo
# runs, so the timeline reads them from each decision (timeline.BOUND_LIMITS).
LIMIT_MEANINGS = {
    "ScaleUpLimit": f"+{SCALE_UP_PODS} pods per {SCALE_UP_PERIOD}s",
    "ScaleDownLimit": f"-{SCALE_DOWN_PERCENT}% per {SCALE_DOWN_PERIOD}s",
    "ScaleDownStabilized": f"highest proposal of the last {SCALE_DOWN_WINDOW}s",
    "ScaleUpStabilized": "lowest proposal of the scale-up window",
}


def describe_target() -> list[str]:
    """The target in words, in demo time."""
    return [
        f"ScalingTarget {WEB.namespace}/{WEB.name} → Deployment {WEB.name}, {MIN_REPLICAS}–{MAX_REPLICAS} replicas",
        f"  metrics: cpu {CPU_TARGET_PERCENT}% of request ({round(WEB.cpu_request * 1000)}m); "
        f"requests_per_second {REQUESTS_TARGET_PER_POD} per pod (External, PromQL)",
        f"  scale up: at most +{SCALE_UP_PODS} pods per {SCALE_UP_PERIOD}s;  scale down: after a {SCALE_DOWN_WINDOW}s "
        f"stabilization window, at most -{SCALE_DOWN_PERCENT}% per {SCALE_DOWN_PERIOD}s",
    ]


def vpa(workload: Workload = WEB) -> dict[str, Any]:
    """A VPA in recommendation-only mode beside the target, as teams run one to size requests: with
    ``updateMode: Off`` it never fights the horizontal scaling (docs/hvpa.md combines the two)."""
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": workload.name, "namespace": workload.namespace},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workload.name},
            "updatePolicy": {"updateMode": "Off"},
            "resourcePolicy": {
                "containerPolicies": [{"containerName": workload.container, "controlledResources": ["cpu", "memory"]}]
            },
        },
        "status": {
            "conditions": [{"type": "RecommendationProvided", "status": "True"}],
            "recommendation": {
                "containerRecommendations": [
                    {
                        "containerName": workload.container,
                        "target": {"cpu": "300m", "memory": "200Mi"},
                        "lowerBound": {"cpu": "150m", "memory": "180Mi"},
                        "upperBound": {"cpu": "900m", "memory": "256Mi"},
                        "uncappedTarget": {"cpu": "300m", "memory": "200Mi"},
                    }
                ]
            },
        },
    }
