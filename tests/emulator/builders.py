"""Complete objects for tests (kubernetes-asyncio's models reject incomplete ones)."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]


def deployment(
    name: str = "web",
    *,
    namespace: str = "default",
    replicas: int = 2,
    labels: dict[str, str] | None = None,
    cpu: str = "100m",
) -> JsonObject:
    labels = labels or {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx:1.27",
                            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                        }
                    ]
                },
            },
        },
    }


def statefulset(name: str = "db", *, namespace: str = "default", replicas: int = 1) -> JsonObject:
    obj = deployment(name, namespace=namespace, replicas=replicas)
    obj["kind"] = "StatefulSet"
    obj["spec"]["serviceName"] = name
    return obj


def pod(
    name: str,
    *,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    phase: str | None = None,
) -> JsonObject:
    obj: JsonObject = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


VPA_CRD: JsonObject = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "verticalpodautoscalers.autoscaling.k8s.io"},
    "spec": {
        "group": "autoscaling.k8s.io",
        "scope": "Namespaced",
        "names": {
            "plural": "verticalpodautoscalers",
            "singular": "verticalpodautoscaler",
            "kind": "VerticalPodAutoscaler",
            "listKind": "VerticalPodAutoscalerList",
            "shortNames": ["vpa"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            },
            {
                "name": "v1beta2",
                "served": False,
                "storage": False,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            },
        ],
    },
}

# A target-style CRD with both subresources (the project's own CRD will look like this).
TARGET_CRD_YAML = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: scalers.example.dev
spec:
  group: example.dev
  scope: Namespaced
  names:
    plural: scalers
    singular: scaler
    kind: Scaler
    shortNames: [sc]
  versions:
    - name: v1alpha1
      served: true
      storage: false
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
      subresources:
        status: {}
        scale:
          specReplicasPath: .spec.replicas
          statusReplicasPath: .status.replicas
          labelSelectorPath: .status.selector
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
      subresources:
        status: {}
        scale:
          specReplicasPath: .spec.replicas
          statusReplicasPath: .status.replicas
          labelSelectorPath: .status.selector
"""


def vpa(name: str = "web", *, namespace: str = "default", target: str = "web") -> JsonObject:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "updatePolicy": {"updateMode": "Off"},
            "resourcePolicy": {"containerPolicies": [{"containerName": "app", "minAllowed": {"cpu": "50m"}}]},
        },
    }
