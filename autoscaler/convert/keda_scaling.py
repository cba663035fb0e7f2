"""What KEDA does beside its HPA, as a ScalingTarget says it: the activation phase (0 ↔ 1: ``minReplicaCount``,
``idleReplicaCount``, ``cooldownPeriod``, ``initialCooldownPeriod``, each trigger's ``activationThreshold``),
``fallback``, the pause annotations, ``advanced.scalingModifiers`` (the composite metric) and
``pollingInterval``. Each reads KEDA's own rules (``pkg/scaling/executor/scale_scaledobjects.go``,
``pkg/fallback/fallback.go``, ``apis/keda/v1alpha1/scaledobject_types.go`` and its webhook) so that the
converted target decides what KEDA would have.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.convert.keda_values import annotation_bool, milli_quantity, number
from autoscaler.convert.model import Conversion
from autoscaler.core.composite_keda import keda_formula_to_cel

DEFAULT_MAX_REPLICAS = 100  # KEDA's defaultHPAMaxReplicas
FALLBACK_BEHAVIORS = ("static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower")
# KEDA's pause annotations and the target's own (the names issue 36 fixed; read by core/pause_spec.py).
KEDA_PAUSE = {
    "autoscaling.keda.sh/paused": "autoscaler.dev/paused",
    "autoscaling.keda.sh/paused-replicas": "autoscaler.dev/paused-replicas",
    "autoscaling.keda.sh/paused-scale-in": "autoscaler.dev/paused-scale-in",
    "autoscaling.keda.sh/paused-scale-out": "autoscaler.dev/paused-scale-out",
}
MAX_INT32 = 2**31 - 1


def integer(spec: Mapping[str, Any], key: str, conversion: Conversion, minimum: int = 0) -> int | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_INT32:
        conversion.errors.append(f"spec.{key}: must be an integer from {minimum} to {MAX_INT32}")
        return None
    return value


def replicas(
    spec: Mapping[str, Any], target: dict[str, Any], wakers: int, conversion: Conversion, *, composite: bool = False
) -> bool:
    """``minReplicas``, ``maxReplicas`` and ``activation``; True when the target has the activation phase.
    ``wakers``: how many metrics can make it active (External ones); ``composite``: the composite metric's value
    decides activity instead."""
    minimum = integer(spec, "minReplicaCount", conversion)
    maximum = integer(spec, "maxReplicaCount", conversion, minimum=1)
    idle = integer(spec, "idleReplicaCount", conversion)
    target["maxReplicas"] = DEFAULT_MAX_REPLICAS if maximum is None else maximum
    # KEDA's CheckReplicaCountBoundsAreValid: the floor is 0 when minReplicaCount is absent, else max(it, 1).
    floor = 0 if minimum is None else max(minimum, 1)
    if floor > target["maxReplicas"]:
        conversion.errors.append(
            f"spec.minReplicaCount: {minimum} must not exceed maxReplicaCount ({target['maxReplicas']})"
        )
    if idle is not None and idle >= floor:
        conversion.errors.append(
            f"spec.idleReplicaCount: {idle} must be less than minReplicaCount ({minimum or 0}; KEDA refuses it)"
        )
    target["minReplicas"] = max(minimum or 0, 1)
    if idle is None and minimum:  # no activation phase: KEDA's HPA alone, from minReplicaCount up
        _cooldowns_without_activation(spec, conversion)
        conversion.changed(
            "spec.minReplicaCount",
            f"a workload someone scales to 0 by hand: KEDA set it back to {minimum}; here it stays at 0 until "
            "scaled up by hand (upstream's rule, the ScaledToZero condition), as under any HPA",
        )
        return False
    if not wakers:  # KEDA's webhook refuses cpu/memory-only with minReplicaCount 0
        conversion.errors.append(
            "spec.minReplicaCount: scale to zero needs a trigger other than cpu or memory (KEDA refuses a "
            "ScaledObject with only cpu/memory triggers and minReplicaCount 0)"
        )
        return False
    activation: dict[str, Any] = {"idleReplicas": idle or 0}
    cooldown = integer(spec, "cooldownPeriod", conversion)
    initial = integer(spec, "initialCooldownPeriod", conversion)
    if cooldown is not None:
        activation["cooldownSeconds"] = cooldown
    if initial is not None:
        activation["initialCooldownSeconds"] = initial
    target["activation"] = activation
    trigger, threshold = (
        ("the composite value", "activationTarget") if composite else ("a metric", "its activationThreshold")
    )
    conversion.changed(
        "spec.idleReplicaCount" if idle is not None else "spec.minReplicaCount",
        f"KEDA's activation phase: spec.activation (idle at {idle or 0}; active when {trigger} is strictly above "
        f"{threshold}, then at least minReplicas {target['minReplicas']}; back to idle "
        f"{cooldown if cooldown is not None else 300} s after the last active sync). It wakes the workload from "
        "idle whoever scaled it there, as KEDA does",
    )
    return True


def _cooldowns_without_activation(spec: Mapping[str, Any], conversion: Conversion) -> None:
    for key in ("cooldownPeriod", "initialCooldownPeriod"):
        if spec.get(key) is not None:
            conversion.changed(f"spec.{key}", "no effect without scale to zero or idle replicas, in KEDA as here")


def polling(spec: Mapping[str, Any], target: dict[str, Any], conversion: Conversion) -> None:
    interval = integer(spec, "pollingInterval", conversion, minimum=1)
    if interval is None:
        return
    target["syncPeriodSeconds"] = interval
    conversion.changed(
        "spec.pollingInterval",
        f"syncPeriodSeconds {interval}: the target syncs (reads its metrics, decides) every {interval} s. In KEDA "
        "the activation ran every pollingInterval and its HPA every 15 s (the controller's period)",
    )


def fallback(raw: object, target: dict[str, Any], conversion: Conversion) -> None:
    if raw is None:
        return
    path = "spec.fallback"
    if not isinstance(raw, Mapping):
        conversion.errors.append(f"{path}: must be an object")
        return
    out: dict[str, Any] = {}
    for key in ("failureThreshold", "replicas"):
        value = raw.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT32:
            conversion.errors.append(f"{path}.{key}: Required value: an integer from 0 to {MAX_INT32}")
        else:
            out[key] = value
    behavior = raw.get("behavior") or "static"
    if behavior == "scalingModifiers":
        conversion.lost(
            f"{path}.behavior",
            "scalingModifiers (a failed input read as nil in the formula's ?? operator) has no equivalent: the "
            "composite metric fails when an input fails, and fallback then scales to fallback.replicas (static)",
        )
        behavior = "static"
    elif behavior not in FALLBACK_BEHAVIORS:
        conversion.errors.append(f"{path}.behavior: {behavior!r}: must be one of {', '.join(FALLBACK_BEHAVIORS)}")
    for key in raw:
        if key not in ("failureThreshold", "replicas", "behavior"):
            conversion.lost(f"{path}.{key}", "unknown field: not converted")
    if "replicas" in out and "failureThreshold" in out:
        target["fallback"] = {
            "replicas": out["replicas"],
            "behavior": behavior,
            "failureThreshold": out["failureThreshold"],
        }


def pause(annotations: Mapping[str, Any], conversion: Conversion) -> dict[str, str]:
    """KEDA's pause annotations as the target's ``autoscaler.dev/`` ones (values as KEDA reads them)."""
    out: dict[str, str] = {}
    for keda, ours in KEDA_PAUSE.items():
        if keda not in annotations:
            continue
        value = str(annotations[keda]).strip()
        path = f"metadata.annotations[{keda!r}]"
        if keda.endswith("paused-replicas"):
            if not value.isdigit() or int(value) > MAX_INT32:
                conversion.errors.append(f"{path}: {value!r} is not a replica count (KEDA refuses it)")
                continue
            out[ours] = str(int(value))
        elif annotation_bool(value):
            out[ours] = "true"
        else:
            continue  # "false": not paused, in KEDA as here
        conversion.changed(
            path, f"the target's annotation {ours}: {out[ours]!r} (kubectl annotate pauses it as before)"
        )
    if "autoscaling.keda.sh/force-activation" in annotations:
        conversion.lost(
            "metadata.annotations['autoscaling.keda.sh/force-activation']",
            "forcing the target active has no equivalent here",
        )
    return out


def composite(raw: object, target: dict[str, Any], conversion: Conversion) -> bool:
    """``advanced.scalingModifiers`` as ``spec.composite``; True when there is one."""
    path = "spec.advanced.scalingModifiers"
    if not isinstance(raw, Mapping) or not any(raw.get(k) for k in raw):
        return False
    formula = raw.get("formula")
    if not isinstance(formula, str) or not formula.strip():
        conversion.errors.append(f"{path}.formula: Required value (KEDA refuses scalingModifiers without one)")
        return False
    value = number(raw.get("target"), f"{path}.target", conversion) if raw.get("target") else None
    if value is None or value <= 0:
        conversion.errors.append(f"{path}.target: Required value: a number greater than 0")
        return False
    metric_type = raw.get("metricType") or "AverageValue"
    if metric_type not in ("AverageValue", "Value"):
        conversion.errors.append(f"{path}.metricType: {metric_type!r}: must be AverageValue or Value")
        return False
    converted = keda_formula_to_cel(formula.strip())
    if converted.cel is None:
        conversion.errors.append(f"{path}.formula: {converted.problem}")
        return False
    if converted.cel != formula.strip():
        conversion.changed(f"{path}.formula", f"written as the composite's CEL: {converted.cel}")
    key = "averageValue" if metric_type == "AverageValue" else "value"
    out: dict[str, Any] = {
        "formula": converted.cel,
        "target": {"type": metric_type, key: milli_quantity(value, truncate=True)},
        "name": "composite-metric",
    }
    if raw.get("activationTarget"):
        activation = number(raw["activationTarget"], f"{path}.activationTarget", conversion)
        if activation is not None:
            out["activationTarget"] = milli_quantity(activation)
    for key_name in raw:
        if key_name not in ("formula", "target", "metricType", "activationTarget"):
            conversion.lost(f"{path}.{key_name}", "unknown field: not converted")
    target["composite"] = out
    conversion.changed(
        path,
        "spec.composite: the named prometheus triggers are the formula's inputs (each an External metric by the "
        "trigger's name) and the target scales on the formula's value, as KEDA's composite-metric",
    )
    return True
