"""``HorizontalPodAutoscaler`` (``autoscaling/v2``, ``v2beta2``, ``v1``) → ScalingTarget.

The spec is already this project's format (docs/target-spec.md) but for the ``query`` each metric
is read from: ``scaleTargetRef``, ``minReplicas``, ``maxReplicas`` and ``behavior`` carry over
unchanged, and each metric gets the PromQL prometheus-adapter would have run for it
(:mod:`autoscaler.convert.adapter_query`). The HPA's spec is checked first, as this project checks
a target (without queries), so every error names the HPA's own field.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from autoscaler.convert.adapter_config import AdapterConfig
from autoscaler.convert.adapter_query import (
    AdapterProblem,
    AdapterQuery,
    external_query,
    object_query,
    pods_query,
    resource_query,
)
from autoscaler.convert.model import Conversion, Origin
from autoscaler.convert.target import finish_target, metadata_of
from autoscaler.core.metric_spec_parse import BUILTIN_QUERY_RESOURCES
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.values.fields import ErrorList, SpecError

API_VERSIONS = ("autoscaling/v2", "autoscaling/v2beta2", "autoscaling/v1")
V1_DEFAULT_CPU = 80


def convert_hpa(
    document: Mapping[str, Any], source: str, adapter: AdapterConfig | None, known_series: frozenset[str] | None = None
) -> Conversion:
    """``known_series``: the metric names Prometheus holds, when it was asked (``--prometheus``)."""
    errors = ErrorList()
    namespace, name = metadata_of(document, errors)
    conversion = Conversion(Origin("HorizontalPodAutoscaler", namespace, name, source), old_hpa=name)
    api_version = document.get("apiVersion")
    if api_version not in API_VERSIONS:
        conversion.errors.append(
            f"apiVersion: {api_version!r} is not converted (supported: "
            f"{', '.join(API_VERSIONS)}; the API server serves every HPA as autoscaling/v2)"
        )
        return conversion
    spec = document.get("spec")
    if not isinstance(spec, Mapping):
        conversion.errors.append("spec: Required value")
        return conversion
    spec = _v2_spec(spec, conversion) if api_version == "autoscaling/v1" else copy.deepcopy(dict(spec))
    if spec is None:
        return conversion
    try:
        parse_target_spec(spec, "spec", require_queries=False)
    except SpecError as exc:
        conversion.errors.extend(str(e) for e in exc.errors)
    conversion.errors.extend(str(e) for e in errors.items)
    if conversion.errors:
        return conversion
    metrics = []
    for index, metric in enumerate(spec.get("metrics") or []):
        converted = _metric(metric, f"spec.metrics[{index}]", adapter, conversion, known_series)
        if converted is not None:
            metrics.append(converted)
    if spec.get("metrics") and not metrics:
        conversion.errors.append(
            "spec.metrics: no metric could be converted (see the notes), and a target "
            "without its metrics would fall back to cpu at 80 %"
        )
        return conversion
    if metrics:
        spec["metrics"] = metrics
    elif "metrics" in spec:
        del spec["metrics"]
        conversion.changed(
            "spec.metrics",
            "empty: the default (cpu at 80 % utilization) applies, as for the HPA, "
            "read with the built-in cAdvisor query",
        )
    finish_target(conversion, spec)
    return conversion


def _v2_spec(spec: Mapping[str, Any], conversion: Conversion) -> dict[str, Any] | None:
    """An ``autoscaling/v1`` spec as v2: ``targetCPUUtilizationPercentage`` (default 80) → a cpu metric."""
    out = {key: copy.deepcopy(value) for key, value in spec.items() if key != "targetCPUUtilizationPercentage"}
    target = spec.get("targetCPUUtilizationPercentage", V1_DEFAULT_CPU)
    if isinstance(target, bool) or not isinstance(target, int):
        conversion.errors.append(f"spec.targetCPUUtilizationPercentage: must be an integer, not {target!r}")
        return None
    out["metrics"] = [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}},
        }
    ]
    conversion.changed(
        "spec.targetCPUUtilizationPercentage",
        f"became a Resource cpu metric at {target} % utilization (autoscaling/v2's form)",
    )
    return out


def _metric(
    metric: Mapping[str, Any],
    path: str,
    adapter: AdapterConfig | None,
    conversion: Conversion,
    known: frozenset[str] | None,
) -> dict[str, Any] | None:
    kind = metric["type"]
    key = kind[0].lower() + kind[1:]
    out = copy.deepcopy(dict(metric))
    source = out[key]
    try:
        found = _query(kind, source, adapter, known)
    except AdapterProblem as exc:
        conversion.lost(path, f"{kind} metric not converted: {exc}")
        return None
    if found is None:
        if kind in ("Resource", "ContainerResource"):
            if source["name"] not in BUILTIN_QUERY_RESOURCES:
                conversion.lost(
                    path,
                    f"resource {source['name']!r} has no built-in query and the adapter has no resourceRules for it",
                )
                return None
            conversion.changed(
                f"{path}.{key}",
                f"{source['name']} usage is read with the built-in cAdvisor query "
                "(the HPA read the resource metrics API: metrics-server or the "
                "adapter)",
            )
            return out
        conversion.lost(
            path,
            f"{kind} metric {_metric_name(source)!r} not converted: its PromQL is in "
            "prometheus-adapter's configuration; pass it with --adapter-config",
        )
        return None
    source["query"] = found.query
    if kind in ("Resource", "ContainerResource") and source["name"] == "cpu" and adapter is not None and adapter.window:
        conversion.changed(
            f"{path}.{key}",
            f"the adapter reported resource samples with a {adapter.window} window "
            "(resourceRules.window); the HPA's CPU readiness rules use it: set "
            f"prometheus.cpuRateWindow: {adapter.window} to keep them as they were",
        )
    if found.series and not found.checked:
        conversion.changed(
            f"{path}.{key}.query",
            f"series {found.series} is assumed to exist: pass --prometheus "
            "to have the converter check which series the adapter serves",
        )
    what = f"series {found.series}, " if found.series else ""
    conversion.changed(
        f"{path}.{key}.query",
        f"the PromQL of the adapter's {found.rule} ({what}namespace scoped by "
        f"<<scope>>/<<namespace>>{_pods_note(kind)})",
    )
    return out


def _pods_note(kind: str) -> str:
    return (
        "; grouped by namespace and pod instead of listing the pods, the target's own pods are kept"
        if kind in ("Pods", "Resource", "ContainerResource")
        else ""
    )


def _metric_name(source: Mapping[str, Any]) -> str:
    metric = source.get("metric")
    return str(metric.get("name")) if isinstance(metric, Mapping) else "?"


def _query(
    kind: str, source: Mapping[str, Any], adapter: AdapterConfig | None, known: frozenset[str] | None
) -> AdapterQuery | None:
    if adapter is None:
        return None
    if kind in ("Resource", "ContainerResource"):
        return resource_query(adapter, source["name"])
    metric = source["metric"]
    if kind == "Pods":
        return pods_query(adapter, metric["name"], metric.get("selector"), known)
    if kind == "Object":
        described = source["describedObject"]
        return object_query(
            adapter,
            metric["name"],
            metric.get("selector"),
            described["kind"],
            described.get("apiVersion", ""),
            described["name"],
            known,
        )
    return external_query(adapter, metric["name"], metric.get("selector"), known)
