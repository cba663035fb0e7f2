"""A KEDA ``prometheus`` trigger as an External metric (``pkg/scalers/prometheus_scaler.go``): its query, its
threshold as the target (at milli precision, as ``GetMetricTargetMili``), ``ignoreNullValues`` (KEDA's default:
true), ``activationThreshold``, and the backend it reads from (:mod:`autoscaler.convert.keda_backends`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from autoscaler.convert.keda_auth import AuthParams
from autoscaler.convert.keda_backends import BackendRegistry, backend_of
from autoscaler.convert.keda_values import go_bool, milli_quantity, number
from autoscaler.convert.model import Conversion

# The metadata the prometheus scaler reads (``authModes`` may be here or in the TriggerAuthentication).
PROMETHEUS_METADATA = (
    "serverAddress",
    "query",
    "threshold",
    "activationThreshold",
    "ignoreNullValues",
    "timeout",
    "namespace",
    "customHeaders",
    "queryParameters",
    "unsafeSsl",
    "authModes",
    "authMode",
)


@dataclass
class PrometheusMetric:
    """A converted trigger: the External metric, and its activationThreshold (written only when the target
    has the activation phase without a composite metric: KEDA ignores it otherwise)."""

    metric: dict[str, Any]
    activation_threshold: Decimal | None
    path: str


def metric_name(trigger: Mapping[str, Any], index: int) -> str:
    """The trigger's ``name`` (what a scalingModifiers formula calls it), else KEDA's ``s<index>-prometheus``."""
    name = trigger.get("name")
    if isinstance(name, str) and name and name not in (".", "..") and "/" not in name and "%" not in name:
        return name
    return f"s{index}-prometheus"


def prometheus_metric(
    trigger: Mapping[str, Any],
    index: int,
    auth: AuthParams | None,
    registry: BackendRegistry,
    user: str,
    conversion: Conversion,
) -> PrometheusMetric | None:
    path = f"spec.triggers[{index}]"
    meta_path = f"{path}.metadata"
    metadata: Mapping[str, Any] = trigger.get("metadata") or {}
    for key in ("serverAddress", "query", "threshold"):
        if not metadata.get(key):
            conversion.errors.append(f"{meta_path}.{key}: Required value")
    metric_type = trigger.get("metricType") or "AverageValue"
    if metric_type not in ("AverageValue", "Value"):
        conversion.errors.append(
            f"{path}.metricType: {metric_type!r}: a prometheus trigger takes AverageValue or "
            "Value (KEDA refuses Utilization for it)"
        )
    threshold = (
        number(metadata["threshold"], f"{meta_path}.threshold", conversion) if metadata.get("threshold") else None
    )
    if threshold is not None and threshold <= 0:
        conversion.errors.append(f"{meta_path}.threshold: must be greater than 0")
    activation = (
        number(metadata["activationThreshold"], f"{meta_path}.activationThreshold", conversion)
        if metadata.get("activationThreshold")
        else None
    )
    ignore_null = (
        go_bool(metadata["ignoreNullValues"], f"{meta_path}.ignoreNullValues", conversion)
        if metadata.get("ignoreNullValues")
        else True
    )
    for key in metadata:
        if key not in PROMETHEUS_METADATA:
            conversion.lost(
                f"{meta_path}.{key}",
                "not converted (cloud identities, *FromEnv values and this parameter have no equivalent here)",
            )
    backend = backend_of(metadata, auth, path, conversion) if metadata.get("serverAddress") else None
    if conversion.errors or threshold is None or backend is None:
        return None
    name = registry.name_for(backend, f"{user} {path}")
    conversion.changed(
        path,
        f"read from backend {name!r} ({backend.url}), one of the prometheus.backends `convert` writes for the "
        "service's settings",
    )
    conversion.changed(f"{meta_path}.query", "several series: KEDA refused them; here their values are summed")
    key = "averageValue" if metric_type == "AverageValue" else "value"
    external: dict[str, Any] = {
        "metric": {"name": metric_name(trigger, index)},
        "target": {"type": metric_type, key: milli_quantity(threshold)},
        "query": str(metadata["query"]),
        "backend": name,
    }
    if ignore_null:
        external["ignoreNullValues"] = True
    return PrometheusMetric({"type": "External", "external": external}, activation, path)
