"""Parse and validate a target's ``metrics`` (YAML/JSON data → :class:`MetricSpec` values).

The rules are upstream's (``pkg/apis/autoscaling/validation``) with one deliberate tightening: a metric
target's ``type`` must agree with the fields it sets (``Utilization`` → ``averageUtilization`` on
Resource/ContainerResource metrics only, ``Value`` → ``value`` on Object/External metrics only,
``AverageValue`` → ``averageValue``). Upstream accepts such mismatches and then fails or silently picks
another field at run time; here they are errors up front. Each metric also carries the PromQL it is read
with (``query``), required where there is no built-in one.

Apart from :mod:`autoscaler.core.spec_parse` (the spec as a whole, its replica bounds and behavior)
because the metric sources are most of the spec's rules. Object references (``scaleTargetRef``, a
metric's ``describedObject``) are read here too, for both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from autoscaler.core.gomath import MAX_INT32
from autoscaler.core.spec import (
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    default_metrics,
)
from autoscaler.values.fields import REQUIRED, Obj

# Resources with a built-in Prometheus query; any other resource needs its own ``query``.
BUILTIN_QUERY_RESOURCES = ("cpu", "memory")

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def _path_segment_problems(obj: Obj, key: str, value: str) -> None:
    """``IsValidPathSegmentName``."""
    if value in (".", ".."):
        obj.error(key, f'may not be "{value}"')
    for bad in ("/", "%"):
        if bad in value:
            obj.error(key, f"may not contain '{bad}'")


def read_object_reference(obj: Obj | None) -> CrossVersionObjectReference | None:
    """A ``CrossVersionObjectReference`` (``scaleTargetRef``, a metric's ``describedObject``)."""
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


def read_metrics(obj: Obj, require_queries: bool) -> tuple[MetricSpec, ...] | None:
    """The ``metrics`` of the spec ``obj`` (upstream's default, CPU at 80 %, when there are none); None
    when any is invalid, each problem added with its path. ``require_queries``: see
    :func:`~autoscaler.core.spec_parse.parse_target_spec`."""
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


# A metric's ``backend``: the name of one of the service settings' prometheus.backends, or "default"
# (prometheus.url itself). The names are the settings' to check (the core does not know them): here only
# their form, a DNS-1123 label, as the settings require of a backend's name.
BACKEND_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def read_backend(obj: Obj) -> str | None:
    """A metric source's ``backend``: the named Prometheus it is read from (None: the default one)."""
    name = obj.string("backend", non_empty=True)
    if name is not None and not BACKEND_NAME.match(name):
        obj.error("backend", f"must be a backend name of prometheus.backends (a DNS-1123 label), not {name!r}")
        return None
    return name


def read_ignore_null_values(obj: Obj) -> bool:
    """An Object or External source's ``ignoreNullValues`` (KEDA's): an empty answer or a NaN/infinite value
    reads as 0 instead of failing the metric. False when absent (KEDA's default is true; ``convert`` writes
    it)."""
    return obj.boolean("ignoreNullValues", default=False) is True


def forbid_value_only_fields(obj: Obj, source: MetricSourceType) -> None:
    """A per-pod source's fields that only a one-value metric (Object, External) has: each is an error."""
    if obj.has("ignoreNullValues"):
        obj.mark_known("ignoreNullValues")
        obj.error(
            "ignoreNullValues",
            f"Forbidden: only Object and External metrics (one value) read an empty answer as 0, not {source.value}",
        )
    if obj.has("activationThreshold"):
        obj.mark_known("activationThreshold")
        obj.error(
            "activationThreshold",
            f"Forbidden: only Object and External metrics can make a target active (spec.activation), not "
            f"{source.value}: per-pod metrics have no value while no pod runs",
        )


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
    backend = read_backend(obj)
    forbid_value_only_fields(obj, source)
    if query is None and needs_query and not obj.has("query"):
        obj.error(
            "query",
            f"{REQUIRED}: there is no built-in query for resource {name!r} "
            f"(built in: {', '.join(BUILTIN_QUERY_RESOURCES)})",
        )
    obj.finish()
    if name is None or target is None or (container and container_name is None):
        return None
    return MetricSpec(type=source, name=name, target=target, container=container_name, query=query, backend=backend)


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
    backend = read_backend(obj)
    forbid_value_only_fields(obj, MetricSourceType.PODS)
    obj.finish()
    if ident is None or target is None:
        return None
    return MetricSpec(
        type=MetricSourceType.PODS, name=ident[0], selector=ident[1], target=target, query=query, backend=backend
    )


def _object_source(obj: Obj, require_queries: bool) -> MetricSpec | None:
    described = read_object_reference(obj.obj("describedObject", required=True))
    ident = _metric_identifier(obj.obj("metric", required=True))
    target = _target(
        obj.obj("target", required=True),
        (MetricTargetType.VALUE, MetricTargetType.AVERAGE_VALUE),
        MetricSourceType.OBJECT,
    )
    query = _query(obj, require_queries)
    backend = read_backend(obj)
    ignore_null_values = read_ignore_null_values(obj)
    activation_threshold = obj.quantity("activationThreshold")
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
        backend=backend,
        ignore_null_values=ignore_null_values,
        activation_threshold=activation_threshold,
    )


def _external_source(obj: Obj, require_queries: bool) -> MetricSpec | None:
    ident = _metric_identifier(obj.obj("metric", required=True))
    target = _target(
        obj.obj("target", required=True),
        (MetricTargetType.VALUE, MetricTargetType.AVERAGE_VALUE),
        MetricSourceType.EXTERNAL,
    )
    query = _query(obj, require_queries)
    backend = read_backend(obj)
    ignore_null_values = read_ignore_null_values(obj)
    activation_threshold = obj.quantity("activationThreshold")
    obj.finish()
    if ident is None or target is None:
        return None
    return MetricSpec(
        type=MetricSourceType.EXTERNAL,
        name=ident[0],
        selector=ident[1],
        target=target,
        query=query,
        backend=backend,
        ignore_null_values=ignore_null_values,
        activation_threshold=activation_threshold,
    )


_SOURCE_PARSERS: dict[MetricSourceType, Callable[[Obj, bool], MetricSpec | None]] = {
    MetricSourceType.RESOURCE: lambda o, q: _resource_source(o, q, container=False),
    MetricSourceType.CONTAINER_RESOURCE: lambda o, q: _resource_source(o, q, container=True),
    MetricSourceType.PODS: _pods_source,
    MetricSourceType.OBJECT: _object_source,
    MetricSourceType.EXTERNAL: _external_source,
}
