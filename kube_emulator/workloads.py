"""Workload rules of controllers-lite, without I/O: what a Deployment, StatefulSet or ReplicaSet's pods
look like, which go first, and what its status says about them.

:class:`~kube_emulator.controllers.WorkloadController` reads the objects and writes the results; these
functions decide: the template's revision hash (:func:`template_hash`, the pods' ``pod-template-hash``), a
new pod's body (:func:`new_pod`: the template's labels and spec, an owner reference, a StatefulSet's next
ordinal), the order in which surplus pods are deleted (:func:`deletion_order`: pending, then not ready,
then newest; a StatefulSet's highest ordinal first) and the workload's ``status`` with its counts and
Deployment conditions (:func:`workload_status`, zero counts omitted as the real types' ``omitempty`` does).
"""

from __future__ import annotations

import hashlib
import itertools
import json

from kube_emulator.clock import Clock, format_time
from kube_emulator.jsonutil import JsonObject, clone
from kube_emulator.kubelet import is_ready
from kube_emulator.resources import ResourceType
from kube_emulator.watch import StoredObject

_RANDOM_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template: JsonObject) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return "".join(_RANDOM_ALPHABET[int(digest[i : i + 2], 16) % len(_RANDOM_ALPHABET)] for i in range(0, 20, 2))


def controller_of(pod: JsonObject) -> JsonObject | None:
    for reference in pod["metadata"].get("ownerReferences") or []:
        if reference.get("controller"):
            return dict(reference)
    return None


def revision_of(resource_type: ResourceType, pod: JsonObject) -> str | None:
    labels = pod["metadata"].get("labels") or {}
    if resource_type.kind == "StatefulSet":
        value = labels.get("controller-revision-hash", "")
        return str(value).rsplit("-", 1)[-1] if value else None
    annotations = pod["metadata"].get("annotations") or {}
    return labels.get("pod-template-hash") or annotations.get("emulator.autoscaler/template-hash")


def deletion_order(resource_type: ResourceType, pods: list[StoredObject]) -> list[StoredObject]:
    if resource_type.kind == "StatefulSet":
        return sorted(pods, key=lambda p: -ordinal_of(p.name))
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}

    def rank(pod: StoredObject) -> tuple[int, int, str, str]:
        status = pod.obj.get("status") or {}
        created = str(pod.obj["metadata"].get("creationTimestamp", ""))
        # Newer pods go first: invert the timestamp's sort order.
        inverted = "".join(chr(0x10FFFF - ord(char)) for char in created)
        return (phase_rank.get(str(status.get("phase")), 0), int(is_ready(pod.obj)), inverted, pod.name)

    return sorted(pods, key=rank)


def new_pod(
    resource_type: ResourceType, workload: JsonObject, revision: str, existing: list[StoredObject], node_name: str
) -> JsonObject:
    """The body of a workload's next pod; a StatefulSet's takes the lowest ordinal none of ``existing`` has."""
    meta, spec = workload["metadata"], workload.get("spec") or {}
    template = spec.get("template") or {}
    template_meta = template.get("metadata") or {}
    labels = dict(template_meta.get("labels") or {})
    annotations = dict(template_meta.get("annotations") or {})
    name = str(meta["name"])
    if resource_type.kind == "StatefulSet":
        taken = {ordinal_of(p.name) for p in existing}
        ordinal = next(i for i in itertools.count() if i not in taken)
        pod_name = f"{name}-{ordinal}"
        labels["controller-revision-hash"] = f"{name}-{revision}"
        labels["statefulset.kubernetes.io/pod-name"] = pod_name
        generate_name = None
    elif resource_type.kind == "Deployment":
        labels["pod-template-hash"] = revision
        pod_name, generate_name = None, f"{name}-{revision}-"
    else:
        annotations["emulator.autoscaler/template-hash"] = revision
        pod_name, generate_name = None, f"{name}-"
    pod_meta: JsonObject = {
        "namespace": meta.get("namespace"),
        "labels": labels,
        "ownerReferences": [
            {
                "apiVersion": resource_type.api_version,
                "kind": resource_type.kind,
                "name": name,
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if annotations:
        pod_meta["annotations"] = annotations
    if pod_name:
        pod_meta["name"] = pod_name
    else:
        pod_meta["generateName"] = generate_name
    pod_spec = clone(template.get("spec") or {})
    pod_spec["nodeName"] = node_name
    return {"metadata": pod_meta, "spec": pod_spec}


def workload_status(
    resource_type: ResourceType, workload: JsonObject, pods: list[StoredObject], revision: str, clock: Clock
) -> JsonObject:
    """A workload's ``status`` for its pods (those not being deleted) at template revision ``revision``."""
    meta, spec = workload["metadata"], workload.get("spec") or {}
    desired = int(spec.get("replicas", 1) or 0)
    updated = [p for p in pods if revision_of(resource_type, p.obj) == revision]
    ready = sum(1 for p in pods if is_ready(p.obj))
    previous = workload.get("status") or {}
    counts: dict[str, int] = {
        "replicas": len(pods),
        "updatedReplicas": len(updated),
        "readyReplicas": ready,
        "availableReplicas": ready,
    }
    if resource_type.kind == "Deployment":
        counts["unavailableReplicas"] = max(0, desired - ready)
    elif resource_type.kind == "StatefulSet":
        counts["currentReplicas"] = len(updated)
    else:
        counts["fullyLabeledReplicas"] = len(pods)
    status: JsonObject = {"observedGeneration": meta.get("generation", 1)}
    status.update({field: value for field, value in counts.items() if value})
    if resource_type.kind in ("ReplicaSet", "StatefulSet"):
        status["replicas"] = len(pods)  # not omitempty on these status types
    if resource_type.kind == "StatefulSet":
        status["availableReplicas"] = ready
    if resource_type.kind == "StatefulSet":
        status["currentRevision"] = status["updateRevision"] = f"{meta['name']}-{revision}"
        status["collisionCount"] = 0
    if resource_type.kind == "Deployment":
        available = ready >= desired
        status["conditions"] = [
            _condition(
                previous,
                "Available",
                available,
                "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                "Deployment has minimum availability."
                if available
                else "Deployment does not have minimum availability.",
                clock,
            ),
            _condition(
                previous,
                "Progressing",
                True,
                "NewReplicaSetAvailable" if len(updated) == len(pods) and available else "ReplicaSetUpdated",
                f'ReplicaSet "{meta["name"]}-{revision}" is progressing.',
                clock,
            ),
        ]
    return status


def _condition(
    previous_status: JsonObject, kind: str, value: bool, reason: str, message: str, clock: Clock
) -> JsonObject:
    now = format_time(clock.now())
    before = next((c for c in previous_status.get("conditions") or [] if c.get("type") == kind), None)
    status = "True" if value else "False"
    transitioned = before is None or before.get("status") != status
    updated = transitioned or before is None or before.get("reason") != reason
    return {
        "type": kind,
        "status": status,
        "lastUpdateTime": now if updated or before is None else before.get("lastUpdateTime", now),
        "lastTransitionTime": now if transitioned or before is None else before.get("lastTransitionTime", now),
        "reason": reason,
        "message": message,
    }


def ordinal_of(pod_name: str) -> int:
    suffix = pod_name.rsplit("-", 1)[-1]
    return int(suffix) if suffix.isdigit() else -1
