"""Parse, default and validate a target spec (YAML/JSON data → :class:`TargetSpec`).

The rules are upstream's (``pkg/apis/autoscaling/validation``, ``pkg/apis/autoscaling/v2/defaults.go``)
with one deliberate tightening: a metric target's ``type`` must agree with the fields it sets
(``Utilization`` → ``averageUtilization`` on Resource/ContainerResource metrics only, ``Value`` →
``value`` on Object/External metrics only, ``AverageValue`` → ``averageValue``). Upstream accepts
such mismatches and then fails or silently picks another field at run time; here they are errors
up front. Every violation is reported at once, each with its path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from autoscaler.core.hvpa.spec_parse import read_hvpa_spec
from autoscaler.core.spec import (
    DEFAULT_SCALE_DOWN_RULES,
    DEFAULT_SCALE_UP_RULES,
    Behavior,
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    PolicyType,
    ScalingPolicy,
    ScalingRules,
    SelectPolicy,
    TargetSpec,
    default_metrics,
)
from autoscaler.values.fields import REQUIRED, ErrorList, Obj
from autoscaler.values.quantity import Quantity

MAX_INT32 = 2**31 - 1
MAX_STABILIZATION_WINDOW_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800
# Resources with a built-in Prometheus query; any other resource needs its own ``query``.
BUILTIN_QUERY_RESOURCES = ("cpu", "memory")

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


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
    ref = _scale_target_ref(obj.obj("scaleTargetRef", required=True))
    min_replicas = obj.integer("minReplicas", default=1, minimum=0, maximum=MAX_INT32)
    max_replicas = obj.integer("maxReplicas", required=True, maximum=MAX_INT32)
    if max_replicas is not None and max_replicas < 1:
        obj.error("maxReplicas", "must be greater than 0")
    elif max_replicas is not None and min_replicas is not None and max_replicas < min_replicas:
        obj.error("maxReplicas", "must be greater than or equal to `minReplicas`")
    metrics = _metrics(obj, require_queries)
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
    )


def _path_segment_problems(obj: Obj, key: str, value: str) -> None:
    """``IsValidPathSegmentName``."""
    if value in (".", ".."):
        obj.error(key, f'may not be "{value}"')
    for bad in ("/", "%"):
        if bad in value:
            obj.error(key, f"may not contain '{bad}'")


def _scale_target_ref(obj: Obj | None) -> CrossVersionObjectReference | None:
    if obj is None:
        return None
    kind = obj.string("kind", required=True, non_empty=True)
    name = obj.string("name", required=True, non_empty=True)
    api_version = obj.string("apiVersion", default="") or ""
    for key, value in (("kind", kind), ("name", name)):
        if value:
            _path_segment_problems(obj, key, value)
    obj.finish()
    if kind is None or name is None:
        return None
    return CrossVersionObjectReference(kind=kind, name=name, api_version=api_version)


# Each metric is a Prometheus query every period. A target with hundreds of them (the HPA has no limit)
# would take a large share of Prometheus' concurrency by itself, and no real workload scales on that many
# signals: the cap keeps one target's cost bounded and is checked like any other field.
MAX_METRICS_PER_TARGET = 30


def _metrics(obj: Obj, require_queries: bool) -> tuple[MetricSpec, ...] | None:
    raw = obj.raw("metrics")
    if raw is None or raw == []:
        obj.mark_known("metrics")
        return default_metrics()
    if isinstance(raw, list | tuple) and len(raw) > MAX_METRICS_PER_TARGET:
        obj.error("metrics", f"Too many: {len(raw)}: must have at most {MAX_METRICS_PER_TARGET} items")
        return None
    result: list[MetricSpec] = []
    ok = True
    for path, element in obj.items("metrics"):
        metric = _metric(Obj.of(element, path, obj.errors), require_queries)
        if metric is None:
            ok = False
        else:
            result.append(metric)
    if not isinstance(raw, list | tuple):
        return None
    return tuple(result) if ok else None


_SOURCE_KEYS = {t.source_key: t for t in MetricSourceType}


def _metric(obj: Obj | None, require_queries: bool) -> MetricSpec | None:
    if obj is None:
        return None
    errors_before = len(obj.errors.items)
    type_text = obj.string("type", required=True, choices=sorted(t.value for t in MetricSourceType))
    metric_type = MetricSourceType(type_text) if type_text else None
    present = [key for key in _SOURCE_KEYS if obj.has(key)]
    metric: MetricSpec | None = None
    if metric_type is not None:
        expected = metric_type.source_key
        source = obj.obj(expected)
        if source is None and not obj.has(expected):
            obj.error(expected, f"{REQUIRED}: must populate information for the given metric source")
        elif source is not None:
            metric = _SOURCE_PARSERS[metric_type](source, require_queries)
        for key in present:
            if key != expected:
                obj.mark_known(key)
                obj.error(key, "Forbidden: must populate the given metric source only")
    else:
        obj.mark_known(*present)
    obj.finish()
    if len(obj.errors.items) > errors_before:
        return None
    return metric


def _target(obj: Obj | None, allowed: tuple[MetricTargetType, ...], source: MetricSourceType) -> MetricTarget | None:
    if obj is None:
        return None
    type_text = obj.string("type", required=True, choices=[t.value for t in MetricTargetType])
    value = obj.quantity("value", positive=True)
    average_value = obj.quantity("averageValue", positive=True)
    utilization = obj.integer("averageUtilization", minimum=1, maximum=MAX_INT32)
    obj.finish()
    if type_text is None:
        return None
    target_type = MetricTargetType(type_text)
    if target_type not in allowed:
        kinds = {
            MetricTargetType.UTILIZATION: "Resource and ContainerResource",
            MetricTargetType.VALUE: "Object and External",
        }.get(target_type, "")
        obj.error(
            "type",
            f"{target_type.value} is not a valid target type for a {source.value} metric "
            f"(valid only for {kinds} metrics; use one of "
            f"{', '.join(t.value for t in allowed)})",
        )
        return None
    field_of = {
        MetricTargetType.UTILIZATION: ("averageUtilization", utilization),
        MetricTargetType.VALUE: ("value", value),
        MetricTargetType.AVERAGE_VALUE: ("averageValue", average_value),
    }
    wanted_key, wanted_value = field_of[target_type]
    if wanted_value is None and not obj.has(wanted_key):
        obj.error(wanted_key, f"{REQUIRED}: a {target_type.value} target must set {wanted_key}")
    for other_type, (key, _) in field_of.items():
        if other_type is not target_type and obj.has(key):
            obj.error(key, f"Forbidden: a {target_type.value} target must not set {key} (it would be ignored)")
    return MetricTarget(type=target_type, value=value, average_value=average_value, average_utilization=utilization)


def _resource_name(obj: Obj) -> str | None:
    name = obj.string("name", required=True, non_empty=True)
    if name and not _QUALIFIED_NAME.match(name):
        obj.error("name", "must be a valid resource name (e.g. cpu, memory)")
        return None
    return name


def _query(obj: Obj, required: bool) -> str | None:
    query = obj.string("query", non_empty=True)
    if query is None and required and not obj.has("query"):
        obj.error("query", f"{REQUIRED}: the PromQL this metric is read from")
    return query


def _resource_source(obj: Obj, require_queries: bool, *, container: bool) -> MetricSpec | None:
    name = _resource_name(obj)
    container_name = None
    if container:
        container_name = obj.string("container", required=True, non_empty=True)
        if container_name and not _DNS1123_LABEL.match(container_name):
            obj.error("container", "must be a valid container name (a DNS-1123 label)")
    source = MetricSourceType.CONTAINER_RESOURCE if container else MetricSourceType.RESOURCE
    target = _target(
        obj.obj("target", required=True), (MetricTargetType.UTILIZATION, MetricTargetType.AVERAGE_VALUE), source
    )
    needs_query = require_queries and name is not None and name not in BUILTIN_QUERY_RESOURCES
    query = obj.string("query", non_empty=True)
    if query is None and needs_query and not obj.has("query"):
        obj.error(
            "query",
            f"{REQUIRED}: there is no built-in query for resource {name!r} "
            f"(built in: {', '.join(BUILTIN_QUERY_RESOURCES)})",
        )
    obj.finish()
    if name is None or target is None or (container and container_name is None):
        return None
    return MetricSpec(type=source, name=name, target=target, container=container_name, query=query)


def _metric_identifier(obj: Obj | None) -> tuple[str, Mapping[str, Any] | None] | None:
    if obj is None:
        return None
    name = obj.string("name", required=True, non_empty=True)
    if name:
        _path_segment_problems(obj, "name", name)
    selector_obj = obj.obj("selector")
    selector = _label_selector(selector_obj) if selector_obj is not None else None
    obj.finish()
    if name is None:
        return None
    return name, selector


_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _label_selector(obj: Obj) -> Mapping[str, Any]:
    match_labels = obj.obj("matchLabels")
    if match_labels is not None:
        for key, value in match_labels.value.items():
            if not isinstance(value, str):
                match_labels.error(str(key), "must be a string")
            match_labels.mark_known(key)
    for path, element in obj.items("matchExpressions"):
        expr = Obj.of(element, path, obj.errors)
        if expr is None:
            continue
        expr.string("key", required=True, non_empty=True)
        operator = expr.string("operator", required=True, choices=_SELECTOR_OPERATORS)
        values = list(expr.items("values"))
        for value_path, value in values:
            if not isinstance(value, str):
                obj.errors.add(value_path, "must be a string")
        if operator in ("In", "NotIn") and not values:
            expr.error("values", f"{REQUIRED}: must be specified when `operator` is 'In' or 'NotIn'")
        if operator in ("Exists", "DoesNotExist") and values:
            expr.error("values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        expr.finish()
    obj.finish()
    return dict(obj.value)


def _pods_source(obj: Obj, require_queries: bool) -> MetricSpec | None:
    ident = _metric_identifier(obj.obj("metric", required=True))
    target = _target(obj.obj("target", required=True), (MetricTargetType.AVERAGE_VALUE,), MetricSourceType.PODS)
    query = _query(obj, require_queries)
    obj.finish()
    if ident is None or target is None:
        return None
    return MetricSpec(type=MetricSourceType.PODS, name=ident[0], selector=ident[1], target=target, query=query)


def _object_source(obj: Obj, require_queries: bool) -> MetricSpec | None:
    described = _scale_target_ref(obj.obj("describedObject", required=True))
    ident = _metric_identifier(obj.obj("metric", required=True))
    target = _target(
        obj.obj("target", required=True),
        (MetricTargetType.VALUE, MetricTargetType.AVERAGE_VALUE),
        MetricSourceType.OBJECT,
    )
    query = _query(obj, require_queries)
    obj.finish()
    if described is None or ident is None or target is None:
        return None
    return MetricSpec(
        type=MetricSourceType.OBJECT,
        name=ident[0],
        selector=ident[1],
        target=target,
        described_object=described,
        query=query,
    )


def _external_source(obj: Obj, require_queries: bool) -> MetricSpec | None:
    ident = _metric_identifier(obj.obj("metric", required=True))
    target = _target(
        obj.obj("target", required=True),
        (MetricTargetType.VALUE, MetricTargetType.AVERAGE_VALUE),
        MetricSourceType.EXTERNAL,
    )
    query = _query(obj, require_queries)
    obj.finish()
    if ident is None or target is None:
        return None
    return MetricSpec(type=MetricSourceType.EXTERNAL, name=ident[0], selector=ident[1], target=target, query=query)


_SOURCE_PARSERS: dict[MetricSourceType, Callable[[Obj, bool], MetricSpec | None]] = {
    MetricSourceType.RESOURCE: lambda o, q: _resource_source(o, q, container=False),
    MetricSourceType.CONTAINER_RESOURCE: lambda o, q: _resource_source(o, q, container=True),
    MetricSourceType.PODS: _pods_source,
    MetricSourceType.OBJECT: _object_source,
    MetricSourceType.EXTERNAL: _external_source,
}


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
