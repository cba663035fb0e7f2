"""The target spec: ``autoscaling/v2`` ``HorizontalPodAutoscalerSpec``, field for field.

These are plain immutable values after parsing and defaulting (see :mod:`autoscaler.core.spec_parse`
for the YAML/JSON side and its validation). Each ``Pods``, ``Object`` and ``External`` metric also
carries ``query``, the PromQL it is read from; ``Resource`` and ``ContainerResource`` metrics may
override their built-in query the same way. The decision engine only needs the metric names.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autoscaler.core.activation_spec import ActivationSpec
from autoscaler.core.fallback_spec import FallbackSpec
from autoscaler.core.hvpa.spec import HvpaSpec
from autoscaler.core.pause_spec import PauseSpec
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


@dataclass(frozen=True, slots=True)
class CrossVersionObjectReference:
    kind: str
    name: str
    api_version: str = ""


@dataclass(frozen=True, slots=True)
class MetricTarget:
    type: MetricTargetType
    value: Quantity | None = None
    average_value: Quantity | None = None
    average_utilization: int | None = None


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One entry of ``spec.metrics``, flattened: ``name`` is the resource name for
    ``Resource``/``ContainerResource`` and the metric name otherwise."""

    type: MetricSourceType
    name: str
    target: MetricTarget
    container: str | None = None
    selector: Mapping[str, Any] | None = None
    described_object: CrossVersionObjectReference | None = None
    query: str | None = None
    # The named Prometheus backend of the service settings (prometheus.backends) the query is sent to;
    # None: the default one (prometheus.url). The core never reads it: the service routes by it.
    backend: str | None = None
    # KEDA's ignoreNullValues (Object/External only): an empty answer, or a NaN or infinite value, reads as 0
    # instead of failing the metric (autoscaler.prometheus.value_readings).
    ignore_null_values: bool = False
    # KEDA's activationThreshold (Object/External only, with spec.activation): the metric makes the target
    # active while its value is strictly greater (None: 0). autoscaler.core.activation reads it.
    activation_threshold: Quantity | None = None

    @property
    def is_pod_metric(self) -> bool:
        """Read per pod (Resource, ContainerResource, Pods), as opposed to one value (Object, External)."""
        return self.type in POD_METRIC_TYPES


@dataclass(frozen=True, slots=True)
class ScalingPolicy:
    type: PolicyType
    value: int
    period_seconds: int


@dataclass(frozen=True, slots=True)
class ScalingRules:
    """One direction of ``behavior`` after API defaulting. ``stabilization_window_seconds`` None
    means "the controller setting" (only the scale-down default leaves it unset)."""

    stabilization_window_seconds: int | None
    select_policy: SelectPolicy
    policies: tuple[ScalingPolicy, ...]
    tolerance: Quantity | None = None


@dataclass(frozen=True, slots=True)
class Behavior:
    scale_up: ScalingRules
    scale_down: ScalingRules


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


@dataclass(frozen=True, slots=True)
class CompositeSpec:
    """``spec.composite`` (KEDA's ``advanced.scalingModifiers``): one metric computed by a CEL ``formula``
    over the target's External metrics (its variables, by metric name), scaled on in their place with
    ``target``. ``activation_target``: the target is active when the formula's value is strictly greater
    (None: KEDA's default, 0). The formula is validated when the spec is parsed and compiled once per
    formula (autoscaler.core.composite_spec); autoscaler.core.composite evaluates it each sync."""

    formula: str
    target: MetricTarget
    name: str = DEFAULT_COMPOSITE_NAME
    activation_target: Quantity | None = None


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """A parsed, defaulted and valid target spec."""

    scale_target_ref: CrossVersionObjectReference
    max_replicas: int
    min_replicas: int = 1
    metrics: tuple[MetricSpec, ...] = field(default_factory=default_metrics)
    behavior: Behavior | None = None
    # The optional ``hvpa`` section: combined horizontal and vertical scaling (autoscaler.core.hvpa).
    hvpa: HvpaSpec | None = None
    # KEDA's scalingModifiers: a formula over the External metrics (autoscaler.core.composite).
    composite: CompositeSpec | None = None
    # KEDA's pollingInterval: this target's sync period in seconds; None: the service's sync.periodSeconds.
    sync_period_seconds: int | None = None
    # KEDA's activation phase: idle <-> active by activation thresholds and a cooldown (autoscaler.core.activation).
    activation: ActivationSpec | None = None
    # KEDA's fallback: the count a failed metric stands for once it failed long enough (autoscaler.core.fallback).
    fallback: FallbackSpec | None = None
    # KEDA's paused/paused-replicas/paused-scale-in/-out, in the spec (autoscaler.core.pause; annotations too).
    pause: PauseSpec | None = None

    @property
    def has_object_or_external_metric(self) -> bool:
        return any(m.type in VALUE_METRIC_TYPES for m in self.metrics)
