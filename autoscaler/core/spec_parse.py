"""Parse, default and validate a target spec (YAML/JSON data → :class:`TargetSpec`).

The rules are upstream's (``pkg/apis/autoscaling/validation``, ``pkg/apis/autoscaling/v2/defaults.go``).
Every violation is reported at once, each with its path. This module reads the spec as a whole: the
scale target, the replica bounds and the rules that span fields, and ``behavior`` (merged over the API's
defaults). The metric sources are :mod:`autoscaler.core.metric_spec_parse`, the ``hvpa`` section
:mod:`autoscaler.core.hvpa.spec_parse`.
"""

from __future__ import annotations

from autoscaler.core.activation_spec import read_activation
from autoscaler.core.composite_spec import read_composite
from autoscaler.core.fallback_spec import read_fallback
from autoscaler.core.gomath import MAX_INT32
from autoscaler.core.hvpa.spec_parse import read_hvpa_spec
from autoscaler.core.metric_spec_parse import read_metrics, read_object_reference
from autoscaler.core.pause_spec import read_pause_spec
from autoscaler.core.prediction.spec import read_prediction
from autoscaler.core.spec import (
    DEFAULT_SCALE_DOWN_RULES,
    DEFAULT_SCALE_UP_RULES,
    Behavior,
    MetricSourceType,
    PolicyType,
    ScalingPolicy,
    ScalingRules,
    SelectPolicy,
    TargetSpec,
)
from autoscaler.values.fields import REQUIRED, ErrorList, Obj
from autoscaler.values.quantity import Quantity

MAX_STABILIZATION_WINDOW_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800
# A target's own sync period (KEDA's pollingInterval): at most an hour, as the service's sync.periodSeconds.
MAX_SYNC_PERIOD_SECONDS = 3600


def parse_target_spec(data: object, path: str = "spec", *, require_queries: bool = True) -> TargetSpec:
    """Parse a target spec; raise :class:`~autoscaler.values.fields.SpecError` listing every problem.

    ``require_queries`` demands ``query`` on Pods/Object/External metrics (and on Resource metrics
    other than cpu/memory); ``autoscaler simulate`` reads no Prometheus and turns it off.
    """
    errors = ErrorList()
    spec = read_target_spec(data, path, errors, require_queries=require_queries)
    errors.raise_if_any()
    assert spec is not None
    return spec


def read_target_spec(data: object, path: str, errors: ErrorList, *, require_queries: bool = True) -> TargetSpec | None:
    """Like :func:`parse_target_spec`, adding problems to ``errors`` (None when any is found)."""
    before = len(errors.items)
    obj = Obj.of(data, path, errors)
    if obj is None:
        return None
    ref = read_object_reference(obj.obj("scaleTargetRef", required=True))
    min_replicas = obj.integer("minReplicas", default=1, minimum=0, maximum=MAX_INT32)
    max_replicas = obj.integer("maxReplicas", required=True, maximum=MAX_INT32)
    if max_replicas is not None and max_replicas < 1:
        obj.error("maxReplicas", "must be greater than 0")
    elif max_replicas is not None and min_replicas is not None and max_replicas < min_replicas:
        obj.error("maxReplicas", "must be greater than or equal to `minReplicas`")
    metrics = read_metrics(obj, require_queries)
    if (
        min_replicas == 0
        and metrics is not None
        and not any(m.type in (MetricSourceType.OBJECT, MetricSourceType.EXTERNAL) for m in metrics)
    ):
        obj.error(
            "metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas (minReplicas: 0)",
        )
    behavior = _behavior(obj.obj("behavior"))
    composite = read_composite(obj, metrics)
    sync_period = obj.integer("syncPeriodSeconds", minimum=1, maximum=MAX_SYNC_PERIOD_SECONDS)
    activation = read_activation(obj, min_replicas=min_replicas, metrics=metrics)
    fallback_obj = obj.obj("fallback")
    fallback = read_fallback(fallback_obj) if fallback_obj is not None else None
    pause_obj = obj.obj("pause")
    pause = read_pause_spec(pause_obj) if pause_obj is not None else None
    prediction_obj = obj.obj("prediction")
    prediction = (
        read_prediction(prediction_obj, metrics=metrics, has_composite=obj.has("composite"))
        if prediction_obj is not None
        else None
    )
    hvpa_obj = obj.obj("hvpa")
    hvpa = (
        read_hvpa_spec(hvpa_obj, spec_path=path, min_replicas=min_replicas, max_replicas=max_replicas, metrics=metrics)
        if hvpa_obj is not None
        else None
    )
    obj.finish()
    if len(errors.items) > before:
        return None
    assert ref is not None and max_replicas is not None and min_replicas is not None and metrics is not None
    return TargetSpec(
        scale_target_ref=ref,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        metrics=metrics,
        behavior=behavior,
        hvpa=hvpa,
        pause=pause,
        composite=composite,
        activation=activation,
        fallback=fallback,
        sync_period_seconds=sync_period,
        prediction=prediction,
    )


def _behavior(obj: Obj | None) -> Behavior | None:
    if obj is None:
        return None
    scale_up = _scaling_rules(obj.obj("scaleUp"), DEFAULT_SCALE_UP_RULES)
    scale_down = _scaling_rules(obj.obj("scaleDown"), DEFAULT_SCALE_DOWN_RULES)
    obj.finish()
    if scale_up is None or scale_down is None:
        return None
    return Behavior(scale_up=scale_up, scale_down=scale_down)


def _scaling_rules(obj: Obj | None, default: ScalingRules) -> ScalingRules | None:
    """Merge one direction over the API defaults field by field, as ``SetDefaults_HPA`` does."""
    if obj is None:
        return default
    errors_before = len(obj.errors.items)
    window = obj.integer("stabilizationWindowSeconds", minimum=0, maximum=MAX_STABILIZATION_WINDOW_SECONDS)
    select = obj.string("selectPolicy", choices=[p.value for p in SelectPolicy])
    policies: list[ScalingPolicy] = []
    raw_policies = obj.value.get("policies")
    for path, element in obj.items("policies"):
        policy = _policy(Obj.of(element, path, obj.errors))
        if policy is not None:
            policies.append(policy)
    if isinstance(raw_policies, list | tuple) and not raw_policies:
        obj.error("policies", f"{REQUIRED}: must specify at least one Policy")
    tolerance: Quantity | None = obj.quantity("tolerance", non_negative=True)
    obj.finish()
    if len(obj.errors.items) > errors_before:
        return None
    return ScalingRules(
        stabilization_window_seconds=window
        if obj.has("stabilizationWindowSeconds")
        else default.stabilization_window_seconds,
        select_policy=SelectPolicy(select) if select else default.select_policy,
        policies=tuple(policies) if raw_policies is not None else default.policies,
        tolerance=tolerance,
    )


def _policy(obj: Obj | None) -> ScalingPolicy | None:
    if obj is None:
        return None
    type_text = obj.string("type", required=True, choices=[p.value for p in PolicyType])
    value = obj.integer("value", required=True, minimum=1, maximum=MAX_INT32)
    period = obj.integer("periodSeconds", required=True, minimum=1, maximum=MAX_PERIOD_SECONDS)
    obj.finish()
    if type_text is None or value is None or period is None:
        return None
    return ScalingPolicy(type=PolicyType(type_text), value=value, period_seconds=period)
