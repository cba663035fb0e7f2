"""What the decision engine observes about a target: its scale, its pods and its metric readings.

All plain immutable data. Times are seconds on one clock (Unix time in the service, seconds
relative to the scenario's time 0 in ``autoscaler simulate``); values are integer milli-units,
as upstream's arithmetic is (``Quantity.MilliValue()``: CPU cores × 1000, bytes × 1000).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

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


@dataclass(slots=True, init=False, unsafe_hash=True)
class ContainerInfo:
    """A container's name and its resource requests and limits (milli), as the pod spec declares them.

    ``sidecar`` marks a restartable init container (``restartPolicy: Always``): its requests
    count toward the pod's, as upstream counts them. Ordinary init containers are not listed.
    ``limits`` are read only by the HVPA engine (its limit rules).
    """

    name: Final[str]
    requests: Final[Mapping[str, int]]
    sidecar: Final[bool]
    limits: Final[Mapping[str, int]]

    def __init__(
        self,
        name: str,
        requests: Mapping[str, int] | None = None,
        sidecar: bool = False,
        limits: Mapping[str, int] | None = None,
    ) -> None:
        self.name = name
        self.requests = dict() if requests is None else requests
        self.sidecar = sidecar
        self.limits = dict() if limits is None else limits


@dataclass(slots=True, init=False, unsafe_hash=True)
class PodInfo:
    """The slice of a pod the HPA algorithm reads.

    ``ready`` is the status of the pod's Ready condition, or None when it has none;
    ``ready_since`` its lastTransitionTime; ``started_at`` the pod's ``status.startTime``.
    ``pod_requests`` holds pod-level requests (``spec.resources``) when the pod sets them.
    """

    name: Final[str]
    phase: Final[PodPhase]
    ready: Final[ConditionStatus | None]
    ready_since: Final[float | None]
    started_at: Final[float | None]
    deleting: Final[bool]
    containers: Final[tuple[ContainerInfo, ...]]
    pod_requests: Final[Mapping[str, int] | None]

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
    ) -> None:
        self.name = name
        self.phase = phase
        self.ready = ready
        self.ready_since = ready_since
        self.started_at = started_at
        self.deleting = deleting
        self.containers = containers
        self.pod_requests = pod_requests


@dataclass(slots=True, init=False, unsafe_hash=True)
class Sample:
    """One per-pod sample: its milli value, when it was taken and over which window (seconds)."""

    value: Final[int]
    timestamp: Final[float]
    window: Final[float]

    def __init__(self, value: int, timestamp: float, window: float = DEFAULT_SAMPLE_WINDOW) -> None:
        self.value = value
        self.timestamp = timestamp
        self.window = window


@dataclass(slots=True, init=False, unsafe_hash=True)
class PodUsage:
    """A pod's usage of one resource, per reported container (milli), with the sample's time and window.

    Upstream sums the containers' ``MilliValue()``s. A container reported without the resource
    (``None``), or a pod with no container reported, makes the pod missing for a Resource metric;
    for a ContainerResource metric the pod is missing unless that container has a value.
    """

    containers: Final[Mapping[str, int | None]]
    timestamp: Final[float]
    window: Final[float]

    def __init__(
        self, containers: Mapping[str, int | None], timestamp: float, window: float = DEFAULT_SAMPLE_WINDOW
    ) -> None:
        self.containers = containers
        self.timestamp = timestamp
        self.window = window


@dataclass(slots=True, init=False, unsafe_hash=True)
class ResourceReading:
    """Per-pod, per-container usage of the resource a Resource/ContainerResource metric names."""

    pods: Final[Mapping[str, PodUsage]]

    def __init__(self, pods: Mapping[str, PodUsage]) -> None:
        self.pods = pods


@dataclass(slots=True, init=False, unsafe_hash=True)
class PodsReading:
    """Per-pod samples of a Pods metric."""

    pods: Final[Mapping[str, Sample]]

    def __init__(self, pods: Mapping[str, Sample]) -> None:
        self.pods = pods


@dataclass(slots=True, init=False, unsafe_hash=True)
class ObjectReading:
    """The value (milli) of an Object metric."""

    value: Final[int]
    timestamp: Final[float]

    def __init__(self, value: int, timestamp: float) -> None:
        self.value = value
        self.timestamp = timestamp


@dataclass(slots=True, init=False, unsafe_hash=True)
class ExternalReading:
    """The series values (milli) an External metric's query returned; upstream sums them."""

    values: Final[tuple[int, ...]]
    timestamp: Final[float]

    def __init__(self, values: tuple[int, ...], timestamp: float) -> None:
        self.values = values
        self.timestamp = timestamp


@dataclass(slots=True, init=False, unsafe_hash=True)
class MetricFailure:
    """The metric could not be read this sync; ``message`` says why (never contains secrets). ``backend``:
    the backend failed, not the query or its data (no answer in time, no connection, a 5xx or 429, a
    partial answer); it decides nothing here, the service counts it toward the backend's health
    (service/backends/health.py)."""

    message: Final[str]
    backend: Final[bool]

    def __init__(self, message: str, backend: bool = False) -> None:
        self.message = message
        self.backend = backend


@dataclass(slots=True, init=False, unsafe_hash=True)
class FallbackReading:
    """No reader makes one: a Pods, Resource or ContainerResource metric that failed long enough for the
    target's ``spec.fallback`` stands for ``replicas`` in the sync's decision (autoscaler.core.fallback).
    ``backend``: the failure it stands in for was the backend's (:class:`MetricFailure`)."""

    replicas: Final[int]
    backend: Final[bool]

    def __init__(self, replicas: int, backend: bool = False) -> None:
        self.replicas = replicas
        self.backend = backend


MetricReading = ResourceReading | PodsReading | ObjectReading | ExternalReading | MetricFailure | FallbackReading


@dataclass(slots=True, init=False, unsafe_hash=True)
class ScaleInfo:
    """The scale subresource: ``spec.replicas``, ``status.replicas`` and ``status.selector``
    (the label selector string; empty when the target does not publish one)."""

    spec_replicas: Final[int]
    status_replicas: Final[int]
    selector: Final[str]

    def __init__(self, spec_replicas: int, status_replicas: int, selector: str) -> None:
        self.spec_replicas = spec_replicas
        self.status_replicas = status_replicas
        self.selector = selector


@dataclass(slots=True, init=False, unsafe_hash=True)
class SelectorProblem:
    """The selector cannot be used: ``reason`` InvalidSelector (unparseable) or AmbiguousSelector
    (its pods are also selected by another target); ``message`` as upstream words it."""

    reason: Final[str]
    message: Final[str]

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message


@dataclass(slots=True, init=False, unsafe_hash=True)
class Observation:
    """Everything one sync observes about a target.

    ``readings`` is aligned with ``spec.metrics`` (one reading or failure per metric, in order).
    ``pods`` are the pods matched by the scale's selector, from the cluster (never from
    Prometheus).
    """

    scale: Final[ScaleInfo]
    pods: Final[Sequence[PodInfo]]
    readings: Final[Sequence[MetricReading]]
    selector_problem: Final[SelectorProblem | None]

    def __init__(
        self,
        scale: ScaleInfo,
        pods: Sequence[PodInfo],
        readings: Sequence[MetricReading],
        selector_problem: SelectorProblem | None = None,
    ) -> None:
        self.scale = scale
        self.pods = pods
        self.readings = readings
        self.selector_problem = selector_problem
