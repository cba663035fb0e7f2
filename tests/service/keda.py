"""The other autoscalers' objects as tests create them on the emulator (issue 43): an autoscaling/v2 HPA,
a KEDA ScaledObject and a stand-in for KEDA's ScaledObject CRD (the emulator serves HPAs itself)."""

from __future__ import annotations

from typing import Any

SCALED_OBJECT_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "scaledobjects.keda.sh"},
    "spec": {
        "group": "keda.sh",
        "scope": "Namespaced",
        "names": {"kind": "ScaledObject", "plural": "scaledobjects", "singular": "scaledobject"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


def hpa(name: str, workload: str, *, owner: str | None = None, namespace: str = "default") -> dict[str, Any]:
    """An autoscaling/v2 HPA on a Deployment; ``owner``: the KEDA ScaledObject that created it."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner is not None:
        meta["labels"] = {"scaledobject.keda.sh/name": owner}
        meta["ownerReferences"] = [
            {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": owner, "uid": "u-" + owner}
        ]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta,
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workload},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}],
        },
    }


def scaled_object(name: str, workload: str, *, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"scaleTargetRef": {"name": workload}, "triggers": [{"type": "cpu", "metadata": {"value": "50"}}]},
    }
