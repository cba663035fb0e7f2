"""What the decision engine observes about a target: its scale, its pods and its metric readings.

All plain immutable data. Times are seconds on one clock (Unix time in the service, seconds
relative to the scenario's time 0 in ``autoscaler simulate``); values are integer milli-units,
as upstream's arithmetic is (``Quantity.MilliValue()``: CPU cores × 1000, bytes × 1000).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

# Sample windows default to 60 s for per-pod metrics that do not report one (upstream's custom
# metrics client does the same).
DEFAULT_SAMPLE_WINDOW = 60.0


class PodPhase(enum.StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class ConditionStatus(enum.StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class ContainerInfo:
    """A container's name and its resource requests and limits (milli), as the pod spec declares them.

    ``sidecar`` marks a restartable init container (``restartPolicy: Always``): its requests
    count toward the pod's, as upstream counts them. Ordinary init containers are not listed.
    ``limits`` are read only by the HVPA engine (its limit rules).
    """

    name: str
    requests: Mapping[str, int] = field(default_factory=dict)
    sidecar: bool = False
    limits: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PodInfo:
    """The slice of a pod the HPA algorithm reads.

    ``ready`` is the status of the pod's Ready condition, or None when it has none;
    ``ready_since`` its lastTransitionTime; ``started_at`` the pod's ``status.startTime``.
    ``pod_requests`` holds pod-level requests (``spec.resources``) when the pod sets them.
    """

    name: str
    phase: PodPhase = PodPhase.RUNNING
    ready: ConditionStatus | None = ConditionStatus.TRUE
    ready_since: float | None = None
    started_at: float | None = None
    deleting: bool = False
    containers: tuple[ContainerInfo, ...] = ()
    pod_requests: Mapping[str, int] | None = None


class Sample(NamedTuple):
    """One per-pod sample: its milli value, when it was taken and over which window (seconds).

    A named tuple, as :class:`PodUsage`: a service makes one per pod and metric every sync, and a
    tuple is made in a third of a frozen dataclass's time."""

    value: int
    timestamp: float
    window: float = DEFAULT_SAMPLE_WINDOW


class PodUsage(NamedTuple):
    """A pod's usage of one resource, per reported container (milli), with the sample's time and window.

    Upstream sums the containers' ``MilliValue()``s. A container reported without the resource
    (``None``), or a pod with no container reported, makes the pod missing for a Resource metric;
    for a ContainerResource metric the pod is missing unless that container has a value.
    """

    containers: Mapping[str, int | None]
    timestamp: float
    window: float = DEFAULT_SAMPLE_WINDOW


@dataclass(frozen=True, slots=True, init=False)
class ResourceReading:
    """Per-pod, per-container usage of the resource a Resource/ContainerResource metric names."""

    pods: Mapping[str, PodUsage]

    def __init__(self, pods: Mapping[str, PodUsage]) -> None:
        object.__setattr__(self, "pods", pods)


@dataclass(frozen=True, slots=True, init=False)
class PodsReading:
    """Per-pod samples of a Pods metric."""

    pods: Mapping[str, Sample]

    def __init__(self, pods: Mapping[str, Sample]) -> None:
        object.__setattr__(self, "pods", pods)


@dataclass(frozen=True, slots=True)
class ObjectReading:
    """The value (milli) of an Object metric."""

    value: int
    timestamp: float


@dataclass(frozen=True, slots=True)
class ExternalReading:
    """The series values (milli) an External metric's query returned; upstream sums them."""

    values: tuple[int, ...]
    timestamp: float


@dataclass(frozen=True, slots=True)
class MetricFailure:
    """The metric could not be read this sync; ``message`` says why (never contains secrets). ``backend``:
    the backend failed, not the query or its data (no answer in time, no connection, a 5xx or 429, a
    partial answer); it decides nothing here, the service counts it toward the backend's health
    (service/backends/health.py)."""

    message: str
    backend: bool = False


@dataclass(frozen=True, slots=True)
class FallbackReading:
    """No reader makes one: a Pods, Resource or ContainerResource metric that failed long enough for the
    target's ``spec.fallback`` stands for ``replicas`` in the sync's decision (autoscaler.core.fallback).
    ``backend``: the failure it stands in for was the backend's (:class:`MetricFailure`)."""

    replicas: int
    backend: bool = False


MetricReading = ResourceReading | PodsReading | ObjectReading | ExternalReading | MetricFailure | FallbackReading


@dataclass(frozen=True, slots=True, init=False)
class ScaleInfo:
    """The scale subresource: ``spec.replicas``, ``status.replicas`` and ``status.selector``
    (the label selector string; empty when the target does not publish one)."""

    spec_replicas: int
    status_replicas: int
    selector: str

    def __init__(self, spec_replicas: int, status_replicas: int, selector: str) -> None:
        object.__setattr__(self, "spec_replicas", spec_replicas)
        object.__setattr__(self, "status_replicas", status_replicas)
        object.__setattr__(self, "selector", selector)


@dataclass(frozen=True, slots=True)
class SelectorProblem:
    """The selector cannot be used: ``reason`` InvalidSelector (unparseable) or AmbiguousSelector
    (its pods are also selected by another target); ``message`` as upstream words it."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True, init=False)
class Observation:
    """Everything one sync observes about a target.

    ``readings`` is aligned with ``spec.metrics`` (one reading or failure per metric, in order).
    ``pods`` are the pods matched by the scale's selector, from the cluster (never from
    Prometheus).
    """

    scale: ScaleInfo
    pods: Sequence[PodInfo]
    readings: Sequence[MetricReading]
    selector_problem: SelectorProblem | None = None

    def __init__(
        self,
        scale: ScaleInfo,
        pods: Sequence[PodInfo],
        readings: Sequence[MetricReading],
        selector_problem: SelectorProblem | None = None,
    ) -> None:
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "pods", pods)
        object.__setattr__(self, "readings", readings)
        object.__setattr__(self, "selector_problem", selector_problem)
