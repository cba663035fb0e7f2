"""Trimmed records of watched objects: only what the decisions read, never whole API objects.

A parsed pod JSON takes ~30 KiB in Python; the slice the HPA algorithm needs (phase, deletion, start
time, the Ready condition, container requests) fits in well under 1 KiB. Every trim function takes the
raw JSON object and returns an immutable record (or None for an object that cannot be used); it never
raises on an odd shape (a custom resource holds what its schema lets anyone write; a built-in kind is
validated by the API server), reading its parts through :mod:`autoscaler.values.loose_json`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from autoscaler.core.observation import ConditionStatus, ContainerInfo, PodInfo, PodPhase
from autoscaler.kube.labels import SelectorError, selector_from_label_selector
from autoscaler.values.loose_json import as_mapping, mappings_in
from autoscaler.values.quantity import Quantity, QuantityError
from autoscaler.values.timestamps import parse_rfc3339

parse_time = parse_rfc3339


# Thousands of pods carry the same few names (namespace, label keys and values, container and
# resource names): interned, each is kept once instead of once per pod.
intern = sys.intern


@lru_cache(maxsize=4096)
def _milli(text: str) -> int | None:
    """A request's value in milli-units; pods share a handful of distinct request strings."""
    try:
        return Quantity.parse(text).milli_value()
    except QuantityError:
        return None  # the API server validated it; an unparseable one counts as absent


# Pods of one ReplicaSet carry equal labels and containers: equal ones share one (read-only) object.
# Bounded, so that old templates drop out; a pod that misses the cache just gets its own copy.
@lru_cache(maxsize=8192)
def _shared_labels(items: tuple[tuple[str, str], ...]) -> Mapping[str, str]:
    return dict(items)


@lru_cache(maxsize=8192)
def _shared_containers(specs: tuple[tuple[str, tuple[tuple[str, int], ...], bool], ...]) -> tuple[ContainerInfo, ...]:
    return tuple(ContainerInfo(name, dict(requests), sidecar=sidecar) for name, requests, sidecar in specs)


def _requests(resources: object) -> dict[str, int]:
    if not isinstance(resources, Mapping):
        return {}
    requests = resources.get("requests")
    out: dict[str, int] = {}
    if isinstance(requests, Mapping):
        for name, text in requests.items():
            milli = _milli(str(text))
            if milli is not None:
                out[intern(str(name))] = milli
    return out


@dataclass(slots=True, init=False, unsafe_hash=True)
class PodRecord(PodInfo):
    """A pod as the cache keeps it: the slice the HPA algorithm reads (a :class:`PodInfo`, which it is,
    so that a pod is one object, not two: 100,000 pods are ~5 MiB less) and what selects it."""

    namespace: Final[str]
    labels: Final[Mapping[str, str]]

    def __init__(
        self,
        name: str,
        phase: PodPhase = PodPhase.RUNNING,
        ready: ConditionStatus | None = ConditionStatus.TRUE,
        ready_since: float | None = None,
        started_at: float | None = None,
        deleting: bool = False,
        containers: tuple[ContainerInfo, ...] = (),
        pod_requests: Mapping[str, int] | None = None,
        *,
        namespace: str,
        labels: Mapping[str, str],
    ) -> None:
        PodInfo.__init__(self, name, phase, ready, ready_since, started_at, deleting, containers, pod_requests)
        self.namespace = namespace
        self.labels = labels

    @property
    def info(self) -> PodInfo:
        return self


_PHASES = {p.value: p for p in PodPhase}
_STATUSES = {s.value: s for s in ConditionStatus}


def trim_pod(obj: Mapping[str, Any]) -> PodRecord | None:
    meta, spec, status = as_mapping(obj.get("metadata")), as_mapping(obj.get("spec")), as_mapping(obj.get("status"))
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not isinstance(namespace, str):
        return None
    ready: ConditionStatus | None = None
    ready_since: float | None = None
    for condition in mappings_in(status.get("conditions")):
        if condition.get("type") == "Ready":
            ready = _STATUSES.get(str(condition.get("status")), ConditionStatus.UNKNOWN)
            ready_since = parse_time(condition.get("lastTransitionTime"))
    containers = [
        (intern(str(c.get("name"))), tuple(_requests(c.get("resources")).items()), False)
        for c in mappings_in(spec.get("containers"))
    ]
    containers += [
        (intern(str(c.get("name"))), tuple(_requests(c.get("resources")).items()), True)
        for c in mappings_in(spec.get("initContainers"))
        if c.get("restartPolicy") == "Always"
    ]
    pod_requests = _requests(spec.get("resources")) or None
    labels = _shared_labels(tuple((intern(str(k)), intern(str(v))) for k, v in as_mapping(meta.get("labels")).items()))
    return PodRecord(
        name=name,
        phase=_PHASES.get(str(status.get("phase") or "Pending"), PodPhase.UNKNOWN),
        ready=ready,
        ready_since=ready_since,
        started_at=parse_time(status.get("startTime")),
        deleting=meta.get("deletionTimestamp") is not None,
        containers=_shared_containers(tuple(containers)),
        pod_requests=pod_requests,
        namespace=intern(namespace),
        labels=labels,
    )


@dataclass(slots=True, init=False, unsafe_hash=True)
class WorkloadRecord:
    """A Deployment as its ``scale`` subresource shows it."""

    namespace: Final[str]
    name: Final[str]
    uid: Final[str]
    resource_version: Final[str]
    spec_replicas: Final[int]
    status_replicas: Final[int]
    selector: Final[str]  # status.selector of the scale: the label selector as a string
    selector_error: Final[str | None]
    container_requests: Final[Mapping[str, Mapping[str, int]]]  # template, per container

    def __init__(
        self,
        namespace: str,
        name: str,
        uid: str,
        resource_version: str,
        spec_replicas: int,
        status_replicas: int,
        selector: str,
        selector_error: str | None = None,
        container_requests: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self.uid = uid
        self.resource_version = resource_version
        self.spec_replicas = spec_replicas
        self.status_replicas = status_replicas
        self.selector = selector
        self.selector_error = selector_error
        self.container_requests = dict() if container_requests is None else container_requests


def trim_deployment(obj: Mapping[str, Any]) -> WorkloadRecord | None:
    meta, spec, status = as_mapping(obj.get("metadata")), as_mapping(obj.get("spec")), as_mapping(obj.get("status"))
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not isinstance(namespace, str):
        return None
    selector, error = "", None
    try:
        parsed = selector_from_label_selector(spec.get("selector"))
        selector = str(parsed) if parsed is not None else ""
    except (SelectorError, ValueError) as exc:
        error = str(exc)
    template = as_mapping(as_mapping(spec.get("template")).get("spec"))
    requests = {str(c.get("name")): _requests(c.get("resources")) for c in mappings_in(template.get("containers"))}
    replicas, status_replicas = spec.get("replicas"), status.get("replicas")
    return WorkloadRecord(
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        spec_replicas=replicas if isinstance(replicas, int) else 1,
        status_replicas=status_replicas if isinstance(status_replicas, int) else 0,
        selector=selector,
        selector_error=error,
        container_requests=requests,
    )


def trim_object(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """Custom resources (targets, VPAs): kept whole but for the bulky metadata nobody reads."""
    meta = as_mapping(obj.get("metadata"))
    if not isinstance(meta.get("name"), str):
        return None
    slim_meta = {k: v for k, v in meta.items() if k not in ("managedFields", "annotations")}
    annotations = as_mapping(meta.get("annotations"))
    # kubectl's last-applied copy doubles the object; everything else is kept.
    slim_meta["annotations"] = {
        k: v for k, v in annotations.items() if k != "kubectl.kubernetes.io/last-applied-configuration"
    }
    return {**obj, "metadata": slim_meta}
