"""The ``hvpa`` section of a target spec (HVPA-EP-0001's names), as plain immutable values.

Parsing and validation live in :mod:`autoscaler.core.hvpa.spec_parse`; these types hold the result.
Amounts are exact :class:`~fractions.Fraction`s in base units (CPU cores, memory bytes); the user's own
container bounds are kept as :class:`~autoscaler.values.quantity.Quantity` too, so that the VPA patch
writes them back exactly as given. See docs/hvpa.md for the field-by-field reference.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from autoscaler.values.quantity import Format, Quantity, format_quantity

# The resources HVPA scales: the VPA recommends only these two.
CPU = "cpu"
MEMORY = "memory"
RESOURCES: tuple[str, ...] = (CPU, MEMORY)
# Defaults of minChange per resource (hvpa-controller's, A17): 200m CPU, 200M memory.
DEFAULT_MIN_CHANGE: Mapping[str, Fraction] = {CPU: Fraction(200, 1000), MEMORY: Fraction(200_000_000)}
WILDCARD_CONTAINER = "*"


def amount_text(resource: str, value: Fraction) -> str:
    """An amount as a person reads it: CPU in cores or millicores, memory in binary units when exact."""
    return format_quantity(value, Format.BINARY_SI if resource == MEMORY else Format.DECIMAL_SI)


class Extrapolation(enum.StrEnum):
    LINEAR = "linear"
    HORIZONTAL_ONLY = "horizontalOnly"


class UpdateMode(enum.StrEnum):
    AUTO = "Auto"
    OFF = "Off"
    MAINTENANCE_WINDOW = "MaintenanceWindow"


class StabilizationMode(enum.StrEnum):
    """What ``stabilizationDuration`` means for a direction's per-pod requests (docs/hvpa.md)."""

    SINCE_LAST_SCALING = "SinceLastScaling"  # EP-0001: block while less than it since the last scaling
    WINDOW_MAX = "WindowMax"  # as the HPA's windows: the extreme recommendation within it bounds the change


class ContainerMode(enum.StrEnum):
    AUTO = "Auto"
    OFF = "Off"


class ControlledValues(enum.StrEnum):
    REQUESTS_AND_LIMITS = "RequestsAndLimits"
    REQUESTS_ONLY = "RequestsOnly"


class Source(enum.StrEnum):
    HPA = "hpa"
    VPA = "vpa"


@dataclass(frozen=True, slots=True)
class ChangeParams:
    """``{value, percentage}``: an absolute amount, a percentage of some reference amount, or both."""

    value: Fraction | None = None
    percentage: int | None = None

    def larger(self, of: Fraction) -> Fraction:
        """The larger of the configured parts (overlap, base resources, limits gap)."""
        return max(self._parts(of))

    def smaller(self, of: Fraction) -> Fraction:
        """The smaller of the configured parts (minChange, as hvpa-controller has it: A17)."""
        return min(self._parts(of))

    def _parts(self, of: Fraction) -> list[Fraction]:
        parts = []
        if self.value is not None:
            parts.append(self.value)
        if self.percentage is not None:
            parts.append(of * self.percentage / 100)
        return parts or [Fraction(0)]


# Per resource name ("cpu", "memory"); a resource that is absent has no parameters.
ResourceChangeParams = Mapping[str, ChangeParams]


@dataclass(frozen=True, slots=True)
class ScalingInterval:
    """One ``scalingIntervals[]`` entry. ``max_replicas`` None: the target's maxReplicas; a resource
    missing from ``max_resources``: the container's maxAllowed (A24)."""

    max_replicas: int | None
    max_resources: Mapping[str, Fraction]
    extrapolation: Extrapolation = Extrapolation.LINEAR


@dataclass(frozen=True, slots=True)
class ScaleType:
    """``scaleUp`` / ``scaleDown``: gates for the actions in that direction (step 7)."""

    update_mode: UpdateMode = UpdateMode.AUTO
    min_change: ResourceChangeParams = field(default_factory=dict)
    stabilization_seconds: Fraction = Fraction(0)
    stabilization_text: str = "0"
    stabilization_mode: StabilizationMode = StabilizationMode.SINCE_LAST_SCALING


@dataclass(frozen=True, slots=True)
class MaintenanceWindow:
    """``maintenanceTimeWindow``, as UTC seconds of the day (both ends inclusive, A19)."""

    begin: int
    end: int
    begin_text: str
    end_text: str


@dataclass(frozen=True, slots=True)
class ContainerPolicy:
    """The user's own policy for one container (``*``: every container not listed by name).

    Kept in the target spec because the VPA's own bounds get pinned to our decisions (A11, A12, A21).
    """

    name: str
    mode: ContainerMode = ContainerMode.AUTO
    controlled_resources: tuple[str, ...] = RESOURCES
    controlled_values: ControlledValues = ControlledValues.REQUESTS_AND_LIMITS
    min_allowed: Mapping[str, Quantity] = field(default_factory=dict)
    max_allowed: Mapping[str, Quantity] = field(default_factory=dict)
    # Which fields the user wrote (the VPA patch repeats only those, A21).
    explicit: frozenset[str] = frozenset()

    def bound(self, which: str, resource: str) -> Fraction | None:
        bounds = self.min_allowed if which == "min" else self.max_allowed
        quantity = bounds.get(resource)
        return quantity.value if quantity is not None else None


DEFAULT_POLICY = ContainerPolicy(name=WILDCARD_CONTAINER)


@dataclass(frozen=True, slots=True)
class HvpaSpec:
    scaling_intervals: tuple[ScalingInterval, ...]
    scaling_intervals_overlap: ResourceChangeParams = field(default_factory=dict)
    base_resources_per_replica: ResourceChangeParams = field(default_factory=dict)
    limits_requests_gap_scale_params: ResourceChangeParams = field(default_factory=dict)
    scale_up: ScaleType = ScaleType()
    scale_down: ScaleType = ScaleType()
    maintenance_time_window: MaintenanceWindow | None = None
    vpa: str | None = None  # the VPA object's name; None: the one whose targetRef is the scale target
    containers: tuple[ContainerPolicy, ...] = ()
    sources: tuple[Source, ...] = (Source.HPA, Source.VPA)
    warnings: tuple[str, ...] = ()  # valid but suspicious settings, each with its path

    def policy_for(self, container: str) -> ContainerPolicy:
        """The user's policy for ``container``: by name, else ``*``, else the VPA default (Auto, cpu and
        memory, no bounds) — the same lookup the VPA does."""
        wildcard = DEFAULT_POLICY
        for policy in self.containers:
            if policy.name == container:
                return policy
            if policy.name == WILDCARD_CONTAINER:
                wildcard = policy
        return wildcard
