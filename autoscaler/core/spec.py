"""The target spec: ``autoscaling/v2`` ``HorizontalPodAutoscalerSpec``, field for field.

These are plain immutable values after parsing and defaulting (see :mod:`autoscaler.core.spec_parse`
for the YAML/JSON side and its validation). Each ``Pods``, ``Object`` and ``External`` metric also
carries ``query``, the PromQL it is read from; ``Resource`` and ``ContainerResource`` metrics may
override their built-in query the same way. The decision engine only needs the metric names.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from autoscaler.core.activation_spec import ActivationSpec
from autoscaler.core.fallback_spec import FallbackSpec
from autoscaler.core.hvpa.spec import HvpaSpec
from autoscaler.core.pause_spec import PauseSpec
from autoscaler.core.prediction.spec import PredictionSpec
from autoscaler.values.quantity import Quantity


class MetricSourceType(enum.StrEnum):
    RESOURCE = "Resource"
    CONTAINER_RESOURCE = "ContainerResource"
    PODS = "Pods"
    OBJECT = "Object"
    EXTERNAL = "External"

    @property
    def source_key(self) -> str:
        """The name of the source block in YAML (``containerResource``, ``pods``…)."""
        return self.value[0].lower() + self.value[1:]


# Member sets for the tests every sync makes: on Python 3.11 an enum member looked up through its class
# costs ~0.25 µs (EnumType's __getattr__ takes every class attribute off the interpreter's fast path).
POD_METRIC_TYPES = frozenset({MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE, MetricSourceType.PODS})
RESOURCE_METRIC_TYPES = frozenset({MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE})
VALUE_METRIC_TYPES = frozenset({MetricSourceType.OBJECT, MetricSourceType.EXTERNAL})


class MetricTargetType(enum.StrEnum):
    UTILIZATION = "Utilization"
    VALUE = "Value"
    AVERAGE_VALUE = "AverageValue"


class PolicyType(enum.StrEnum):
    PODS = "Pods"
    PERCENT = "Percent"


class SelectPolicy(enum.StrEnum):
    MAX = "Max"
    MIN = "Min"
    DISABLED = "Disabled"


@dataclass(slots=True, init=False, unsafe_hash=True)
class CrossVersionObjectReference:
    kind: Final[str]
    name: Final[str]
    api_version: Final[str]

    def __init__(self, kind: str, name: str, api_version: str = "") -> None:
        self.kind = kind
        self.name = name
        self.api_version = api_version


@dataclass(slots=True, init=False, unsafe_hash=True)
class MetricTarget:
    type: Final[MetricTargetType]
    value: Final[Quantity | None]
    average_value: Final[Quantity | None]
    average_utilization: Final[int | None]

    def __init__(
        self,
        type: MetricTargetType,
        value: Quantity | None = None,
        average_value: Quantity | None = None,
        average_utilization: int | None = None,
    ) -> None:
        self.type = type
        self.value = value
        self.average_value = average_value
        self.average_utilization = average_utilization


@dataclass(slots=True, init=False, unsafe_hash=True)
class MetricSpec:
    """One entry of ``spec.metrics``, flattened: ``name`` is the resource name for
    ``Resource``/``ContainerResource`` and the metric name otherwise."""

    type: Final[MetricSourceType]
    name: Final[str]
    target: Final[MetricTarget]
    container: Final[str | None]
    selector: Final[Mapping[str, Any] | None]
    described_object: Final[CrossVersionObjectReference | None]
    query: Final[str | None]
    # The named Prometheus backend of the service settings (prometheus.backends) the query is sent to;
    # None: the default one (prometheus.url). The core never reads it: the service routes by it.
    backend: Final[str | None]
    # KEDA's ignoreNullValues (Object/External only): an empty answer, or a NaN or infinite value, reads as 0
    # instead of failing the metric (autoscaler.prometheus.value_readings).
    ignore_null_values: Final[bool]
    # KEDA's activationThreshold (Object/External only, with spec.activation): the metric makes the target
    # active while its value is strictly greater (None: 0). autoscaler.core.activation reads it.
    activation_threshold: Final[Quantity | None]

    def __init__(
        self,
        type: MetricSourceType,
        name: str,
        target: MetricTarget,
        container: str | None = None,
        selector: Mapping[str, Any] | None = None,
        described_object: CrossVersionObjectReference | None = None,
        query: str | None = None,
        backend: str | None = None,
        ignore_null_values: bool = False,
        activation_threshold: Quantity | None = None,
    ) -> None:
        self.type = type
        self.name = name
        self.target = target
        self.container = container
        self.selector = selector
        self.described_object = described_object
        self.query = query
        self.backend = backend
        self.ignore_null_values = ignore_null_values
        self.activation_threshold = activation_threshold

    @property
    def is_pod_metric(self) -> bool:
        """Read per pod (Resource, ContainerResource, Pods), as opposed to one value (Object, External)."""
        return self.type in POD_METRIC_TYPES


@dataclass(slots=True, init=False, unsafe_hash=True)
class ScalingPolicy:
    type: Final[PolicyType]
    value: Final[int]
    period_seconds: Final[int]

    def __init__(self, type: PolicyType, value: int, period_seconds: int) -> None:
        self.type = type
        self.value = value
        self.period_seconds = period_seconds


@dataclass(slots=True, init=False, unsafe_hash=True)
class ScalingRules:
    """One direction of ``behavior`` after API defaulting. ``stabilization_window_seconds`` None
    means "the controller setting" (only the scale-down default leaves it unset)."""

    stabilization_window_seconds: Final[int | None]
    select_policy: Final[SelectPolicy]
    policies: Final[tuple[ScalingPolicy, ...]]
    tolerance: Final[Quantity | None]

    def __init__(
        self,
        stabilization_window_seconds: int | None,
        select_policy: SelectPolicy,
        policies: tuple[ScalingPolicy, ...],
        tolerance: Quantity | None = None,
    ) -> None:
        self.stabilization_window_seconds = stabilization_window_seconds
        self.select_policy = select_policy
        self.policies = policies
        self.tolerance = tolerance


@dataclass(slots=True, init=False, unsafe_hash=True)
class Behavior:
    scale_up: Final[ScalingRules]
    scale_down: Final[ScalingRules]

    def __init__(self, scale_up: ScalingRules, scale_down: ScalingRules) -> None:
        self.scale_up = scale_up
        self.scale_down = scale_down


# autoscaling/v2 defaults (pkg/apis/autoscaling/v2/defaults.go).
DEFAULT_SCALE_UP_RULES = ScalingRules(
    stabilization_window_seconds=0,
    select_policy=SelectPolicy.MAX,
    policies=(ScalingPolicy(PolicyType.PODS, 4, 15), ScalingPolicy(PolicyType.PERCENT, 100, 15)),
)
DEFAULT_SCALE_DOWN_RULES = ScalingRules(
    stabilization_window_seconds=None,
    select_policy=SelectPolicy.MAX,
    policies=(ScalingPolicy(PolicyType.PERCENT, 100, 15),),
)
DEFAULT_CPU_UTILIZATION = 80


def default_metrics() -> tuple[MetricSpec, ...]:
    """An empty metrics list means CPU at 80 % utilization."""
    return (
        MetricSpec(
            type=MetricSourceType.RESOURCE,
            name="cpu",
            target=MetricTarget(MetricTargetType.UTILIZATION, average_utilization=DEFAULT_CPU_UTILIZATION),
        ),
    )


# KEDA's name for the composite metric (``CompositeMetricName``).
DEFAULT_COMPOSITE_NAME = "composite-metric"


@dataclass(slots=True, init=False, unsafe_hash=True)
class CompositeSpec:
    """``spec.composite`` (KEDA's ``advanced.scalingModifiers``): one metric computed by a CEL ``formula``
    over the target's External metrics (its variables, by metric name), scaled on in their place with
    ``target``. ``activation_target``: the target is active when the formula's value is strictly greater
    (None: KEDA's default, 0). The formula is validated when the spec is parsed and compiled once per
    formula (autoscaler.core.composite_spec); autoscaler.core.composite evaluates it each sync."""

    formula: Final[str]
    target: Final[MetricTarget]
    name: Final[str]
    activation_target: Final[Quantity | None]

    def __init__(
        self,
        formula: str,
        target: MetricTarget,
        name: str = DEFAULT_COMPOSITE_NAME,
        activation_target: Quantity | None = None,
    ) -> None:
        self.formula = formula
        self.target = target
        self.name = name
        self.activation_target = activation_target


@dataclass(slots=True, init=False, unsafe_hash=True)
class TargetSpec:
    """A parsed, defaulted and valid target spec."""

    scale_target_ref: Final[CrossVersionObjectReference]
    max_replicas: Final[int]
    min_replicas: Final[int]
    metrics: Final[tuple[MetricSpec, ...]]
    behavior: Final[Behavior | None]
    # The optional ``hvpa`` section: combined horizontal and vertical scaling (autoscaler.core.hvpa).
    hvpa: Final[HvpaSpec | None]
    # KEDA's scalingModifiers: a formula over the External metrics (autoscaler.core.composite).
    composite: Final[CompositeSpec | None]
    # KEDA's pollingInterval: this target's sync period in seconds; None: the service's sync.periodSeconds.
    sync_period_seconds: Final[int | None]
    # KEDA's activation phase: idle <-> active by activation thresholds and a cooldown (autoscaler.core.activation).
    activation: Final[ActivationSpec | None]
    # KEDA's fallback: the count a failed metric stands for once it failed long enough (autoscaler.core.fallback).
    fallback: Final[FallbackSpec | None]
    # KEDA's paused/paused-replicas/paused-scale-in/-out, in the spec (autoscaler.core.pause; annotations too).
    pause: Final[PauseSpec | None]
    # Predictive scale-up: a forecast of the Object/External metrics, a floor under the proposal (core/prediction).
    prediction: Final[PredictionSpec | None]

    def __init__(
        self,
        scale_target_ref: CrossVersionObjectReference,
        max_replicas: int,
        min_replicas: int = 1,
        metrics: tuple[MetricSpec, ...] | None = None,
        behavior: Behavior | None = None,
        hvpa: HvpaSpec | None = None,
        composite: CompositeSpec | None = None,
        sync_period_seconds: int | None = None,
        activation: ActivationSpec | None = None,
        fallback: FallbackSpec | None = None,
        pause: PauseSpec | None = None,
        prediction: PredictionSpec | None = None,
    ) -> None:
        self.scale_target_ref = scale_target_ref
        self.max_replicas = max_replicas
        self.min_replicas = min_replicas
        self.metrics = default_metrics() if metrics is None else metrics
        self.behavior = behavior
        self.hvpa = hvpa
        self.composite = composite
        self.sync_period_seconds = sync_period_seconds
        self.activation = activation
        self.fallback = fallback
        self.pause = pause
        self.prediction = prediction

    @property
    def has_object_or_external_metric(self) -> bool:
        return any(m.type in VALUE_METRIC_TYPES for m in self.metrics)
