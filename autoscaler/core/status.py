"""Decisions in Kubernetes' shapes: ``status.currentMetrics`` entries and conditions as JSON-ready dicts.

Used by ``autoscaler simulate --output json`` and by the service when it writes a target's status,
so both show exactly the same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autoscaler.core.conditions import Condition
from autoscaler.core.history import DecisionHistory
from autoscaler.core.results import MetricOutcome, MetricValue
from autoscaler.core.spec import MetricSourceType, MetricSpec
from autoscaler.values.quantity import Format, format_milli

TimeFormat = Callable[[float], Any]


def quantity_from_milli(milli: int, fmt: Format = Format.DECIMAL_SI) -> str:
    """``resource.NewMilliQuantity(milli, fmt).String()``."""
    return format_milli(milli, fmt)


def _value_json(value: MetricValue, spec: MetricSpec) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if value.average_utilization is not None:
        result["averageUtilization"] = value.average_utilization
    if value.average_value is not None:
        # buildQuantity: memory usage prints in binary units (as metrics-server reports it).
        binary = spec.name == "memory" and spec.type in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE)
        result["averageValue"] = quantity_from_milli(
            value.average_value, Format.BINARY_SI if binary else Format.DECIMAL_SI
        )
    if value.value is not None:
        result["value"] = quantity_from_milli(value.value)
    return result


def metric_identity(spec: MetricSpec) -> dict[str, Any]:
    """The source block of a MetricStatus without ``current``."""
    if spec.type in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE):
        block: dict[str, Any] = {"name": spec.name}
        if spec.container is not None:
            block["container"] = spec.container
        return block
    metric: dict[str, Any] = {"name": spec.name}
    if spec.selector is not None:
        metric["selector"] = dict(spec.selector)
    block = {"metric": metric}
    if spec.type is MetricSourceType.OBJECT and spec.described_object is not None:
        ref = spec.described_object
        described = {"kind": ref.kind, "name": ref.name}
        if ref.api_version:
            described["apiVersion"] = ref.api_version
        block = {"describedObject": described, **block}
    return block


def metric_status(outcome: MetricOutcome) -> dict[str, Any]:
    """One ``status.currentMetrics`` entry (``current`` present only when the metric was read)."""
    block = metric_identity(outcome.spec)
    if outcome.current is not None:
        block["current"] = _value_json(outcome.current, outcome.spec)
    return {"type": outcome.spec.type.value, outcome.spec.type.source_key: block}


def condition_json(condition: Condition, time_format: TimeFormat) -> dict[str, Any]:
    result: dict[str, Any] = {
        "type": condition.type,
        "status": condition.status,
        "reason": condition.reason,
        "message": condition.message,
    }
    if condition.last_transition_time is not None:
        result["lastTransitionTime"] = time_format(condition.last_transition_time)
    return result


def history_json(history: DecisionHistory, time_format: TimeFormat) -> dict[str, Any]:
    """The history in the scenario format's shape."""

    def events(items: tuple[Any, ...]) -> list[dict[str, Any]]:
        out = []
        for e in items:
            item: dict[str, Any] = {"change": e.change, "at": time_format(e.at)}
            if e.outdated:
                item["outdated"] = True
            out.append(item)
        return out

    return {
        "recommendations": [{"replicas": r.replicas, "at": time_format(r.at)} for r in history.recommendations],
        "scaleUpEvents": events(history.scale_up_events),
        "scaleDownEvents": events(history.scale_down_events),
    }
