"""KEDA ``ScaledObject`` (``keda.sh/v1alpha1``) → ScalingTarget.

KEDA drives an HPA it makes itself (``keda-hpa-<name>``): each ``prometheus`` trigger is an External
metric ``s<index>-prometheus`` whose value is the trigger's query, with the ``threshold`` as its
AverageValue (or Value) target; ``cpu``/``memory`` triggers are Resource (or ContainerResource)
metrics; ``advanced.horizontalPodAutoscalerConfig.behavior`` is the HPA's behavior; the HPA's
``minReplicas`` is ``minReplicaCount`` (at least 1), ``maxReplicas`` ``maxReplicaCount`` (100).
KEDA itself moves the workload between 0 and 1 replicas (activation); here that is ``minReplicas:
0`` with the External metric, as upstream's HPAScaleToZero does. Everything else KEDA does on its
own is reported per field, never silently dropped.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from autoscaler.convert.model import Conversion, Origin
from autoscaler.convert.target import finish_target, metadata_of
from autoscaler.values.fields import ErrorList

API_VERSION = "keda.sh/v1alpha1"
KEDA_MIN_REPLICAS = 1  # the HPA KEDA makes never goes below 1; KEDA itself scales 1 ↔ 0
DEFAULT_MAX_REPLICAS = 100
PAUSE_ANNOTATIONS = (
    "autoscaling.keda.sh/paused",
    "autoscaling.keda.sh/paused-replicas",
    "autoscaling.keda.sh/paused-scale-in",
    "autoscaling.keda.sh/paused-scale-out",
)
# prometheus trigger metadata this converter reads or explains (KEDA's pkg/scalers/prometheus_scaler.go).
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
)
SPEC_FIELDS = (
    "scaleTargetRef",
    "pollingInterval",
    "initialCooldownPeriod",
    "cooldownPeriod",
    "idleReplicaCount",
    "minReplicaCount",
    "maxReplicaCount",
    "advanced",
    "triggers",
    "fallback",
)


def hpa_name(document: Mapping[str, Any]) -> str:
    """The HPA KEDA made for this ScaledObject (``advanced.horizontalPodAutoscalerConfig.name``)."""
    spec = document.get("spec") or {}
    config = (spec.get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}
    name = config.get("name")
    return name if isinstance(name, str) and name else f"keda-hpa-{(document.get('metadata') or {}).get('name')}"


def convert_scaled_object(document: Mapping[str, Any], source: str) -> Conversion:
    errors = ErrorList()
    namespace, name = metadata_of(document, errors)
    conversion = Conversion(Origin("ScaledObject", namespace, name, source), old_hpa=hpa_name(document))
    conversion.errors.extend(str(e) for e in errors.items)
    spec = document.get("spec")
    if not isinstance(spec, Mapping):
        conversion.errors.append("spec: Required value")
        return conversion
    annotations = (document.get("metadata") or {}).get("annotations") or {}
    for key in PAUSE_ANNOTATIONS:
        if key in annotations:
            conversion.lost(
                f"metadata.annotations[{key!r}]",
                "KEDA's pause is not converted: the converted target scales (delete or do not apply it to pause)",
            )
    for key in spec:
        if key not in SPEC_FIELDS:
            conversion.lost(f"spec.{key}", "a field this converter does not know: not converted")
    ref = _scale_target_ref(spec.get("scaleTargetRef"), conversion)
    metrics = []
    triggers = spec.get("triggers")
    if not isinstance(triggers, list) or not triggers:
        conversion.errors.append("spec.triggers: Required value: at least one trigger")
        triggers = []
    scale_to_zero_triggers = []
    for index, trigger in enumerate(triggers):
        path = f"spec.triggers[{index}]"
        if not isinstance(trigger, Mapping):
            conversion.errors.append(f"{path}: must be an object")
            continue
        metric = _trigger(trigger, index, path, conversion)
        if metric is not None:
            metrics.append(metric)
            if metric["type"] == "External":
                scale_to_zero_triggers.append((path, trigger))
    if conversion.errors:
        return conversion
    if not metrics:
        conversion.errors.append("spec.triggers: no trigger could be converted (see the notes)")
        return conversion
    target: dict[str, Any] = {
        "scaleTargetRef": ref,
        "minReplicas": 1,
        "maxReplicas": DEFAULT_MAX_REPLICAS,
        "metrics": metrics,
    }
    _replicas(spec, target, scale_to_zero_triggers, conversion)
    _advanced(spec.get("advanced"), target, conversion)
    _keda_only(spec, target["minReplicas"] == 0, conversion)
    if not conversion.errors:
        finish_target(conversion, target)
    return conversion


def _scale_target_ref(raw: object, conversion: Conversion) -> dict[str, Any]:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str) or not raw.get("name"):
        conversion.errors.append("spec.scaleTargetRef.name: Required value")
        return {}
    for key in raw:
        if key == "envSourceContainerName":
            conversion.changed(
                "spec.scaleTargetRef.envSourceContainerName",
                "not needed: trigger metadata is read as written (no *FromEnv values)",
            )
        elif key not in ("name", "apiVersion", "kind"):
            conversion.lost(f"spec.scaleTargetRef.{key}", "unknown field: not converted")
    return {
        "apiVersion": raw.get("apiVersion") or "apps/v1",
        "kind": raw.get("kind") or "Deployment",
        "name": raw["name"],
    }


def _trigger(trigger: Mapping[str, Any], index: int, path: str, conversion: Conversion) -> dict[str, Any] | None:
    kind = trigger.get("type")
    metadata = trigger.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        conversion.errors.append(f"{path}.metadata: must be an object")
        return None
    if kind not in ("prometheus", "cpu", "memory"):
        conversion.lost(path, f"a {kind!r} trigger: only prometheus, cpu and memory triggers convert")
        return None
    for key in trigger:
        if key == "useCachedMetrics" and trigger[key]:
            conversion.changed(f"{path}.useCachedMetrics", "no cache: every sync queries Prometheus (batched)")
        elif key not in ("type", "name", "metadata", "metricType", "authenticationRef", "useCachedMetrics"):
            conversion.lost(f"{path}.{key}", "unknown field: not converted")
    auth = trigger.get("authenticationRef")
    if isinstance(auth, Mapping):
        conversion.changed(
            f"{path}.authenticationRef",
            f"{auth.get('kind') or 'TriggerAuthentication'} {auth.get('name')!r} is named, not "
            "resolved: credentials for Prometheus go in the autoscaler's prometheus settings "
            "(bearerTokenFile, basicAuth, tls), once for every target",
        )
    if kind == "prometheus":
        return _prometheus(trigger, metadata, index, path, conversion)
    return _resource(kind, trigger, metadata, path, conversion)


def _number_text(value: object, where: str, conversion: Conversion) -> Decimal | None:
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        conversion.errors.append(f"{where}: {value!r} is not a number")
        return None
    if not number.is_finite():
        conversion.errors.append(f"{where}: {value!r} is not a finite number")
        return None
    return number


def _threshold_quantity(number: Decimal) -> str:
    """KEDA's target quantity: the value at milli precision (``fmt.Sprintf("%.3f")``), as text."""
    rounded = number.quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN)
    text = format(rounded, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _prometheus(
    trigger: Mapping[str, Any], metadata: Mapping[str, Any], index: int, path: str, conversion: Conversion
) -> dict[str, Any] | None:
    meta_path = f"{path}.metadata"
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
        _number_text(metadata.get("threshold"), f"{meta_path}.threshold", conversion)
        if metadata.get("threshold")
        else None
    )
    if threshold is not None and threshold <= 0:
        conversion.errors.append(f"{meta_path}.threshold: must be greater than 0")
    activation = metadata.get("activationThreshold")
    if activation is not None:
        _number_text(activation, f"{meta_path}.activationThreshold", conversion)
    for key in metadata:
        if key not in PROMETHEUS_METADATA:
            conversion.lost(
                f"{meta_path}.{key}",
                "not converted (authentication modes, cloud identities and "
                "*FromEnv values have no per-target equivalent here)",
            )
    _prometheus_notes(metadata, meta_path, conversion)
    if conversion.errors or threshold is None:
        return None
    key = "averageValue" if metric_type == "AverageValue" else "value"
    return {
        "type": "External",
        "external": {
            "metric": {"name": f"s{index}-prometheus"},
            "target": {"type": metric_type, key: _threshold_quantity(threshold)},
            "query": str(metadata["query"]),
        },
    }


def _prometheus_notes(metadata: Mapping[str, Any], path: str, conversion: Conversion) -> None:
    conversion.changed(
        f"{path}.serverAddress",
        f"KEDA asked {metadata.get('serverAddress')}; this autoscaler reads "
        "every metric from its settings' prometheus.url",
    )
    if str(metadata.get("ignoreNullValues", "true")).lower() in ("true", "1", "t"):
        conversion.changed(
            f"{path}.ignoreNullValues",
            "an empty result or NaN: KEDA read 0; here the metric fails and does not vote (never a "
            "scale-down on missing data). Write the query as `(…) or vector(0)` to read 0 as KEDA did",
        )
    conversion.changed(f"{path}.query", "several series: KEDA refused them; here their values are summed")
    if metadata.get("timeout"):
        conversion.changed(f"{path}.timeout", "one deadline for every query: prometheus.timeoutSeconds")
    hints = {
        "namespace": "prometheus.queryParameters: {namespace: …}",
        "customHeaders": "prometheus.headers",
        "queryParameters": "prometheus.queryParameters",
        "unsafeSsl": "prometheus.tls.insecureSkipVerify",
    }
    for key, setting in hints.items():
        if metadata.get(key) and not (key == "unsafeSsl" and str(metadata[key]).lower() == "false"):
            conversion.lost(
                f"{path}.{key}",
                f"per-trigger {key} is not converted: the autoscaler's settings have one for all targets ({setting})",
            )


def _resource(
    kind: str, trigger: Mapping[str, Any], metadata: Mapping[str, Any], path: str, conversion: Conversion
) -> dict[str, Any] | None:
    metric_type = trigger.get("metricType") or metadata.get("type")
    if metric_type not in ("Utilization", "AverageValue"):
        conversion.errors.append(
            f"{path}.metricType: {metric_type!r}: a {kind} trigger takes Utilization or AverageValue"
        )
        return None
    value = metadata.get("value")
    if value is None or value == "":
        conversion.errors.append(f"{path}.metadata.value: Required value")
        return None
    for key in metadata:
        if key not in ("type", "value", "containerName"):
            conversion.lost(f"{path}.metadata.{key}", "not converted")
    if metric_type == "Utilization":
        try:
            target: dict[str, Any] = {"type": "Utilization", "averageUtilization": int(str(value))}
        except ValueError:
            conversion.errors.append(f"{path}.metadata.value: {value!r} is not an integer percentage")
            return None
    else:
        target = {"type": "AverageValue", "averageValue": str(value)}
    conversion.changed(path, f"{kind} usage is read with the built-in cAdvisor query (KEDA's HPA read metrics-server)")
    container = metadata.get("containerName")
    if container:
        return {
            "type": "ContainerResource",
            "containerResource": {"name": kind, "container": str(container), "target": target},
        }
    return {"type": "Resource", "resource": {"name": kind, "target": target}}


def _integer(spec: Mapping[str, Any], key: str, conversion: Conversion) -> int | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        conversion.errors.append(f"spec.{key}: must be a non-negative integer")
        return None
    return value


def _replicas(
    spec: Mapping[str, Any],
    target: dict[str, Any],
    external: list[tuple[str, Mapping[str, Any]]],
    conversion: Conversion,
) -> None:
    minimum = _integer(spec, "minReplicaCount", conversion) or 0
    maximum = _integer(spec, "maxReplicaCount", conversion)
    idle = _integer(spec, "idleReplicaCount", conversion)
    target["maxReplicas"] = DEFAULT_MAX_REPLICAS if maximum is None else maximum
    scale_to_zero = minimum == 0 or idle == 0
    if idle is not None and idle != 0:
        conversion.lost("spec.idleReplicaCount", f"{idle} while idle is not converted (only 0 is: scale to zero)")
    if not scale_to_zero:
        target["minReplicas"] = max(minimum, KEDA_MIN_REPLICAS)
        return
    if not external:
        target["minReplicas"] = max(minimum, KEDA_MIN_REPLICAS)
        conversion.lost(
            "spec.minReplicaCount" if idle is None else "spec.idleReplicaCount",
            "scale to zero needs a prometheus trigger (an External metric); with cpu/memory only, "
            f"minReplicas is {target['minReplicas']}",
        )
        return
    target["minReplicas"] = 0
    where = "spec.idleReplicaCount" if idle == 0 else "spec.minReplicaCount"
    conversion.changed(
        where,
        "scale to zero: minReplicas 0 with the External metric(s). KEDA moved the workload "
        "0 → 1 when a trigger became active and 1 → 0 after cooldownPeriod without one; here "
        "the HPA algorithm goes to 0 when the External value is 0 (after the scale-down "
        "stabilization window) and up as soon as it is not",
    )
    if idle == 0 and minimum > 1:
        conversion.lost(
            "spec.minReplicaCount",
            f"{minimum} while active is not converted: with idleReplicaCount 0 the target's floor is 0",
        )
    for path, trigger in external:
        activation = (trigger.get("metadata") or {}).get("activationThreshold")
        if activation is not None and Decimal(str(activation)) != 0:
            conversion.lost(
                f"{path}.metadata.activationThreshold",
                f"{activation}: KEDA woke the workload from zero only above it; here any value above 0 does",
            )


def _advanced(raw: object, target: dict[str, Any], conversion: Conversion) -> None:
    if not isinstance(raw, Mapping):
        return
    for key, value in raw.items():
        path = f"spec.advanced.{key}"
        if key == "horizontalPodAutoscalerConfig" and isinstance(value, Mapping):
            for inner in value:
                if inner == "behavior":
                    target["behavior"] = copy.deepcopy(value["behavior"])
                elif inner != "name":
                    conversion.lost(f"{path}.{inner}", "unknown field: not converted")
        elif key == "scalingModifiers" and value:
            conversion.lost(
                path,
                "KEDA's composite metric (formula over the triggers) is not converted: the "
                "triggers are separate metrics here, and the largest proposal wins, as in an HPA",
            )
        elif key == "restoreToOriginalReplicaCount" and value:
            conversion.lost(path, "when the target is deleted the workload keeps its current count")
        elif key not in ("scalingModifiers", "restoreToOriginalReplicaCount", "horizontalPodAutoscalerConfig"):
            conversion.lost(path, "unknown field: not converted")


def _keda_only(spec: Mapping[str, Any], scale_to_zero: bool, conversion: Conversion) -> None:
    if spec.get("pollingInterval") is not None:
        conversion.lost(
            "spec.pollingInterval",
            f"{spec['pollingInterval']} s: KEDA's own polling (activation, "
            "cached metrics) is not converted; targets sync every "
            "sync.periodSeconds of the autoscaler's settings",
        )
    if spec.get("cooldownPeriod") is not None:
        if scale_to_zero:
            conversion.lost(
                "spec.cooldownPeriod",
                f"{spec['cooldownPeriod']} s before 1 → 0 is not converted: the "
                "scale-down stabilization window (behavior.scaleDown) governs it",
            )
        else:
            conversion.changed("spec.cooldownPeriod", "no effect without scale to zero, in KEDA as here")
    if spec.get("initialCooldownPeriod"):
        conversion.lost("spec.initialCooldownPeriod", "KEDA's delay after creation is not converted")
    if spec.get("fallback") is not None:
        conversion.lost(
            "spec.fallback",
            "KEDA's fallback replicas on failing triggers are not converted: a failed "
            "metric does not vote here, and never causes a scale-down",
        )
