"""The VerticalPodAutoscaler's ``status`` (autoscaling.k8s.io/v1): its types, reading, and when to trust it.

A12: the recommendation is used only when ``RecommendationProvided`` is True and none of
``ConfigUnsupported``, ``ConfigDeprecated`` and ``LowConfidence`` is True, whatever the order of the
conditions (hvpa-controller stopped at the first RecommendationProvided=True and trusted an empty
list; neither is copied). The per-pod value is ``uncappedTarget``, falling back to ``target`` per
resource: once this autoscaler pins the VPA's bounds, ``target`` only repeats our own last decision.

The same reader serves scenarios (``strict``: unknown fields and resources are errors) and the
cluster (lenient: newer VPA versions add fields, which are skipped).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from autoscaler.core.hvpa.spec import RESOURCES
from autoscaler.values.fields import ErrorList, Obj
from autoscaler.values.timestamps import TimestampError, parse_rfc3339_exact

RECOMMENDATION_PROVIDED = "RecommendationProvided"
LOW_CONFIDENCE = "LowConfidence"
NO_PODS_MATCHED = "NoPodsMatched"
FETCHING_HISTORY = "FetchingHistory"
CONFIG_DEPRECATED = "ConfigDeprecated"
CONFIG_UNSUPPORTED = "ConfigUnsupported"
CONDITION_TYPES = (
    RECOMMENDATION_PROVIDED,
    LOW_CONFIDENCE,
    NO_PODS_MATCHED,
    FETCHING_HISTORY,
    CONFIG_DEPRECATED,
    CONFIG_UNSUPPORTED,
)
# Any of these True makes the recommendation unusable (A12).
DISTRUSTING_CONDITIONS = (CONFIG_UNSUPPORTED, CONFIG_DEPRECATED, LOW_CONFIDENCE)

ResourceAmounts = Mapping[str, Fraction]


@dataclass(frozen=True, slots=True)
class ContainerRecommendation:
    """One ``containerRecommendations[]`` entry; amounts per pod, in base units."""

    container_name: str
    target: ResourceAmounts
    uncapped_target: ResourceAmounts | None = None
    lower_bound: ResourceAmounts | None = None
    upper_bound: ResourceAmounts | None = None

    def per_pod(self) -> ResourceAmounts:
        """``uncappedTarget``, falling back to ``target`` for a resource it lacks (A12)."""
        uncapped = self.uncapped_target or {}
        result: dict[str, Fraction] = {}
        for resource in RESOURCES:
            value = uncapped.get(resource, self.target.get(resource))
            if value is not None:
                result[resource] = value
        return result


@dataclass(frozen=True, slots=True)
class VpaCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class VpaStatus:
    """``recommendation`` None: the status has no recommendation block at all."""

    recommendation: tuple[ContainerRecommendation, ...] | None = None
    conditions: tuple[VpaCondition, ...] = ()

    def for_container(self, name: str) -> ContainerRecommendation | None:
        for entry in self.recommendation or ():
            if entry.container_name == name:
                return entry
        return None


def distrust_reason(status: VpaStatus) -> str | None:
    """Why the recommendation must not be used (A12), or None when it may be."""
    for condition in status.conditions:
        if condition.type in DISTRUSTING_CONDITIONS and condition.status == "True":
            return f"the VPA's {condition.type} condition is True"
    if not any(c.type == RECOMMENDATION_PROVIDED and c.status == "True" for c in status.conditions):
        return f"the VPA's {RECOMMENDATION_PROVIDED} condition is not True"
    if status.recommendation is None:
        return "the VPA status has no recommendation"
    return None


def read_vpa_status(data: object, path: str, errors: ErrorList, *, strict: bool = True) -> VpaStatus | None:
    """A VPA ``status`` object; None (with errors) when it is invalid."""
    obj = Obj.of(data, path, errors)
    if obj is None:
        return None
    errors_before = len(errors.items)
    recommendation: tuple[ContainerRecommendation, ...] | None = None
    block = obj.obj("recommendation")
    if block is not None:
        entries: list[ContainerRecommendation] = []
        names: set[str] = set()
        for item_path, element in block.items("containerRecommendations"):
            entry = _container_recommendation(Obj.of(element, item_path, errors), strict)
            if entry is not None:
                if entry.container_name in names:
                    errors.add(f"{item_path}.containerName", f'Duplicate value: "{entry.container_name}"')
                names.add(entry.container_name)
                entries.append(entry)
        _finish(block, strict)
        recommendation = tuple(entries)
    conditions: list[VpaCondition] = []
    for item_path, element in obj.items("conditions"):
        condition = _condition(Obj.of(element, item_path, errors), strict)
        if condition is not None:
            conditions.append(condition)
    _finish(obj, strict)
    if len(errors.items) > errors_before:
        return None
    return VpaStatus(recommendation, tuple(conditions))


def _finish(obj: Obj, strict: bool) -> None:
    if strict:
        obj.finish()


def _amounts(obj: Obj, key: str, strict: bool, *, required: bool = False) -> ResourceAmounts | None:
    section = obj.obj(key, required=required)
    if section is None:
        return None
    result: dict[str, Fraction] = {}
    for resource in RESOURCES:
        quantity = section.quantity(resource, non_negative=True)
        if quantity is not None:
            result[resource] = quantity.value
    _finish(section, strict)
    return result


def _container_recommendation(obj: Obj | None, strict: bool) -> ContainerRecommendation | None:
    if obj is None:
        return None
    name = obj.string("containerName", required=True, non_empty=True)
    target = _amounts(obj, "target", strict, required=True)
    uncapped = _amounts(obj, "uncappedTarget", strict)
    lower = _amounts(obj, "lowerBound", strict)
    upper = _amounts(obj, "upperBound", strict)
    _finish(obj, strict)
    if name is None or target is None:
        return None
    return ContainerRecommendation(name, target, uncapped, lower, upper)


def _condition(obj: Obj | None, strict: bool) -> VpaCondition | None:
    if obj is None:
        return None
    type_ = obj.string("type", required=True, non_empty=True, choices=CONDITION_TYPES if strict else None)
    status = obj.string("status", required=True, choices=("True", "False", "Unknown"))
    reason = obj.string("reason", default="") or ""
    message = obj.string("message", default="") or ""
    since = obj.string("lastTransitionTime")
    if since is not None:
        try:
            parse_rfc3339_exact(since)
        except TimestampError as exc:
            obj.error("lastTransitionTime", str(exc))
    obj.integer("observedGeneration", minimum=0)
    _finish(obj, strict)
    if type_ is None or status is None:
        return None
    return VpaCondition(type_, status, reason, message)
