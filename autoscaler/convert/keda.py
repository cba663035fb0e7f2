"""KEDA ``ScaledObject`` (``keda.sh/v1alpha1``) → ScalingTarget, with no loss for what this autoscaler has.

KEDA drives an HPA it makes itself (``keda-hpa-<name>``): each ``prometheus`` trigger is an External metric
(:mod:`autoscaler.convert.keda_prometheus`, read from a named backend: :mod:`autoscaler.convert.keda_backends`,
its credentials from the TriggerAuthentication: :mod:`autoscaler.convert.keda_auth`); ``cpu``/``memory``
triggers are Resource (or ContainerResource) metrics; ``advanced.horizontalPodAutoscalerConfig.behavior`` is the
HPA's behavior; the HPA's ``minReplicas`` is ``minReplicaCount`` (at least 1), ``maxReplicas``
``maxReplicaCount`` (100). What KEDA does beside the HPA — the activation phase, fallback, pause, the composite
metric, the polling interval — is :mod:`autoscaler.convert.keda_scaling`. Anything else is reported per field,
never silently dropped.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from autoscaler.convert import keda_scaling
from autoscaler.convert.keda_auth import AuthIndex, resolve
from autoscaler.convert.keda_backends import BackendRegistry
from autoscaler.convert.keda_prometheus import PrometheusMetric, prometheus_metric
from autoscaler.convert.keda_values import milli_quantity
from autoscaler.convert.model import Conversion, Origin
from autoscaler.convert.target import finish_target, metadata_of
from autoscaler.values.fields import ErrorList

API_VERSION = "keda.sh/v1alpha1"
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
TRIGGER_FIELDS = ("type", "name", "metadata", "metricType", "authenticationRef", "useCachedMetrics")


def hpa_name(document: Mapping[str, Any]) -> str:
    """The HPA KEDA made for this ScaledObject (``advanced.horizontalPodAutoscalerConfig.name``)."""
    spec = document.get("spec") or {}
    config = (spec.get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}
    name = config.get("name")
    return name if isinstance(name, str) and name else f"keda-hpa-{(document.get('metadata') or {}).get('name')}"


def convert_scaled_object(
    document: Mapping[str, Any],
    source: str,
    auths: AuthIndex | None = None,
    registry: BackendRegistry | None = None,
) -> Conversion:
    """``auths``: the TriggerAuthentications the input holds; ``registry``: the run's backends (each
    prometheus trigger is given one of them)."""
    auths = auths if auths is not None else AuthIndex()
    registry = registry if registry is not None else BackendRegistry()
    errors = ErrorList()
    namespace, name = metadata_of(document, errors)
    conversion = Conversion(Origin("ScaledObject", namespace, name, source), old_hpa=hpa_name(document))
    conversion.errors.extend(str(e) for e in errors.items)
    spec = document.get("spec")
    if not isinstance(spec, Mapping):
        conversion.errors.append("spec: Required value")
        return conversion
    annotations = (document.get("metadata") or {}).get("annotations") or {}
    pause_annotations = keda_scaling.pause(annotations, conversion)
    for key in spec:
        if key not in SPEC_FIELDS:
            conversion.lost(f"spec.{key}", "a field this converter does not know: not converted")
    ref = _scale_target_ref(spec.get("scaleTargetRef"), conversion)
    triggers = spec.get("triggers")
    if not isinstance(triggers, list) or not triggers:
        conversion.errors.append("spec.triggers: Required value: at least one trigger")
        triggers = []
    metrics: list[dict[str, Any]] = []
    prometheus: list[PrometheusMetric] = []
    for index, trigger in enumerate(triggers):
        path = f"spec.triggers[{index}]"
        if not isinstance(trigger, Mapping) or not isinstance(trigger.get("metadata") or {}, Mapping):
            conversion.errors.append(f"{path}: must be an object with a metadata object")
            continue
        if not _known_trigger(trigger, path, conversion):
            continue
        if trigger["type"] == "prometheus":
            auth = (
                resolve(trigger["authenticationRef"], namespace, auths, f"{path}.authenticationRef", conversion)
                if trigger.get("authenticationRef") is not None
                else None
            )
            converted = prometheus_metric(trigger, index, auth, registry, conversion.origin.label, conversion)
            if converted is not None:
                prometheus.append(converted)
                metrics.append(converted.metric)
        else:
            resource = _resource(str(trigger["type"]), trigger, trigger.get("metadata") or {}, path, conversion)
            if resource is not None:
                metrics.append(resource)
    if conversion.errors:
        return conversion
    if not metrics:
        conversion.errors.append("spec.triggers: no trigger could be converted (see the notes)")
        return conversion
    target: dict[str, Any] = {"scaleTargetRef": ref, "minReplicas": 1, "maxReplicas": 100, "metrics": metrics}
    advanced = spec.get("advanced")
    has_composite = _advanced(advanced, target, conversion)
    has_activation = keda_scaling.replicas(spec, target, len(prometheus), conversion, composite=has_composite)
    _activation_thresholds(prometheus, has_activation and not has_composite, has_composite, conversion)
    keda_scaling.polling(spec, target, conversion)
    if spec.get("fallback") is not None and not prometheus:
        conversion.errors.append(
            "spec.fallback: needs a trigger other than cpu or memory (KEDA refuses the fallback without one)"
        )
    keda_scaling.fallback(spec.get("fallback"), target, conversion)
    if not conversion.errors:
        finish_target(conversion, target, pause_annotations)
    return conversion


def _known_trigger(trigger: Mapping[str, Any], path: str, conversion: Conversion) -> bool:
    kind = trigger.get("type")
    if kind not in ("prometheus", "cpu", "memory"):
        conversion.lost(path, f"a {kind!r} trigger: only prometheus, cpu and memory triggers convert")
        return False
    for key in trigger:
        if key == "useCachedMetrics" and trigger[key]:
            conversion.changed(f"{path}.useCachedMetrics", "no cache: every sync queries Prometheus (batched)")
        elif key == "authenticationRef" and kind != "prometheus":
            conversion.changed(f"{path}.authenticationRef", f"not used by a {kind} trigger, in KEDA as here")
        elif key not in TRIGGER_FIELDS:
            conversion.lost(f"{path}.{key}", "unknown field: not converted")
    return True


def _activation_thresholds(
    prometheus: list[PrometheusMetric], written: bool, composite: bool, conversion: Conversion
) -> None:
    """Each trigger's activationThreshold: on its metric with the activation phase; otherwise it decides
    nothing, in KEDA as here (without scale to zero; with scalingModifiers, activationTarget decides)."""
    for converted in prometheus:
        threshold = converted.activation_threshold
        if threshold is None:
            continue
        where = f"{converted.path}.metadata.activationThreshold"
        if written:
            if threshold != 0:
                converted.metric["external"]["activationThreshold"] = milli_quantity(threshold)
        elif composite:
            conversion.changed(where, "ignored with scalingModifiers, in KEDA as here: its activationTarget decides")
        elif threshold != 0:
            conversion.changed(where, "decides nothing without scale to zero or idle replicas, in KEDA as here")


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


def _advanced(raw: object, target: dict[str, Any], conversion: Conversion) -> bool:
    """``advanced``; True when it has a composite metric."""
    if not isinstance(raw, Mapping):
        return False
    has_composite = False
    for key, value in raw.items():
        path = f"spec.advanced.{key}"
        if key == "horizontalPodAutoscalerConfig" and isinstance(value, Mapping):
            for inner in value:
                if inner == "behavior":
                    target["behavior"] = copy.deepcopy(value["behavior"])
                elif inner != "name":
                    conversion.lost(f"{path}.{inner}", "unknown field: not converted")
        elif key == "scalingModifiers":
            has_composite = keda_scaling.composite(value, target, conversion)
        elif key == "restoreToOriginalReplicaCount":
            if value:
                conversion.lost(
                    path,
                    "KEDA reset the workload's replicas when the ScaledObject was deleted; deleting a ScalingTarget "
                    "leaves them as they are (and the cut-over deletes the ScaledObject: set it false first)",
                )
        else:
            conversion.lost(path, "unknown field: not converted")
    return has_composite
