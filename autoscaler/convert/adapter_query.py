"""The PromQL prometheus-adapter would run for an HPA metric, as a query template of this project.

The adapter fills a rule's ``metricsQuery`` with ``<<.Series>>`` (the Prometheus series),
``<<.LabelMatchers>>`` (the metric's selector, the namespace and the objects asked for) and
``<<.GroupBy>>`` (the label of the objects' resource). The converted query is that same text with:

* the namespace matcher as this project's ``<<scope>>`` (``<<namespace>>`` when the adapter's
  namespace label is not ``namespace``), so that targets of one template share one query;
* for Pods and Resource metrics, no ``pod=~"a|b|…"`` list: the query groups by namespace and pod
  instead, and the reader keeps only the target's own pods, which gives each pod the value the
  adapter's query gave it;
* labels other than ``pod``/``namespace``/``container`` renamed to those with ``label_replace``,
  the labels this project's reader splits results by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.convert.adapter_config import AdapterConfig, DiscoveryRule, ResourceMapping
from autoscaler.convert.gotemplate import TemplateProblem, render
from autoscaler.convert.naming import group_of, label_for_resource, series_candidates, series_for
from autoscaler.prometheus.promql import string_literal


class AdapterProblem(ValueError):
    """The adapter configuration cannot serve this metric (or the converter cannot tell how)."""


@dataclass(frozen=True, slots=True)
class AdapterQuery:
    query: str
    rule: str  # where the rule is written: rules[1], resourceRules.cpu
    series: str  # the Prometheus series it reads ("" for resource rules)
    checked: bool = True  # whether Prometheus was asked that the series exists


def selector_matchers(selector: Mapping[str, Any] | None) -> list[str]:
    """An HPA metric's label selector as the adapter turns it into matchers, in its order (by key).

    ``In`` with one value and ``Exists`` become regex matches, ``NotIn`` and ``DoesNotExist`` negative
    ones, as the adapter's ``processQueryParts`` does."""
    if not selector:
        return []
    requirements: list[tuple[str, str, list[str]]] = []
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        requirements.append((str(key), "In=", [str(value)]))
    for expr in selector.get("matchExpressions") or []:
        requirements.append((str(expr["key"]), str(expr["operator"]), sorted(str(v) for v in expr.get("values") or [])))
    requirements.sort(key=lambda r: r[0])
    out = []
    for key, operator, values in requirements:
        joined = "|".join(values)
        if operator == "In=":
            out.append(f"{key}={string_literal(joined)}" if len(values) == 1 else f"{key}=~{string_literal(joined)}")
        elif operator == "In":
            out.append(f"{key}=~{string_literal(joined)}")
        elif operator == "NotIn":
            out.append(f"{key}!~{string_literal(joined)}")
        elif operator == "Exists":
            out.append(f'{key}!=""')
        elif operator == "DoesNotExist":
            out.append(f'{key}=""')
        else:
            raise AdapterProblem(f"the adapter cannot turn the selector operator {operator!r} into a matcher")
    return out


def _namespace_label(mapping: ResourceMapping, rule: str) -> str:
    label = label_for_resource(mapping, "", "namespaces")
    if label is None:
        raise AdapterProblem(
            f"{rule} maps no label to namespaces (resources.overrides or resources.template), "
            "so the adapter cannot scope its query to the HPA's namespace"
        )
    return label


def _scope(namespace_label: str) -> str:
    return "<<scope>>" if namespace_label == "namespace" else f"{namespace_label}=<<namespace>>"


def _renamed(query: str, renames: Sequence[tuple[str, str]]) -> str:
    """``query`` with each (from, to) label copied to the name this project's reader splits by."""
    for source, wanted in renames:
        if source != wanted:
            query = f'label_replace({query}, {string_literal(wanted)}, "$1", {string_literal(source)}, "(.*)")'
    return query


def _fill(template: str, rule: str, values: Mapping[str, str]) -> str:
    try:
        return render(template, values)
    except TemplateProblem as exc:
        raise AdapterProblem(f"{rule}.metricsQuery: {exc}") from None


def _serving_rule(
    rules: Sequence[DiscoveryRule],
    metric: str,
    resource: tuple[str, str] | None,
    what: str,
    source: str,
    known: frozenset[str] | None,
) -> tuple[DiscoveryRule, str]:
    """The rule that serves ``metric`` (for ``resource``, a (group, kind) pair; None for external
    rules) and its series. The adapter keeps the last rule that registers a name, so the last wins;
    ``known`` (the metric names Prometheus holds, when it was asked) rules out series it lacks."""
    for rule in reversed(rules):
        if resource is not None and label_for_resource(rule.resources, *resource) is None:
            continue
        series = series_for(rule, metric, known)
        if series is not None:
            return rule, series
    held = " that Prometheus holds" if known is not None else ""
    raise AdapterProblem(
        f"no rule in {source} serves {what} {metric!r}: none both names a series{held} {metric!r} "
        "(name.matches/as, seriesFilters and the metric name in seriesQuery) and maps a label to its resource "
        f"({len(rules)} rule{'s' if len(rules) != 1 else ''} checked)"
    )


def pods_query(
    config: AdapterConfig, metric: str, selector: Mapping[str, Any] | None, known: frozenset[str] | None = None
) -> AdapterQuery:
    rule, series = _serving_rule(config.rules, metric, ("", "pods"), "pods metric", config.source, known)
    pod_label = label_for_resource(rule.resources, "", "pods")
    assert pod_label is not None
    ns_label = _namespace_label(rule.resources, rule.path)
    matchers = [*selector_matchers(selector), _scope(ns_label)]
    query = _fill(
        rule.metrics_query,
        rule.path,
        {"Series": series, "LabelMatchers": ",".join(matchers), "GroupBy": f"{ns_label},{pod_label}"},
    )
    return AdapterQuery(
        _renamed(query, [(pod_label, "pod"), (ns_label, "namespace")]), rule.path, series, known is not None
    )


def object_query(
    config: AdapterConfig,
    metric: str,
    selector: Mapping[str, Any] | None,
    kind: str,
    api_version: str,
    name: str,
    known: frozenset[str] | None = None,
) -> AdapterQuery:
    group = group_of(api_version)
    rule, series = _serving_rule(config.rules, metric, (group, kind), f"{kind} metric", config.source, known)
    label = label_for_resource(rule.resources, group, kind)
    assert label is not None
    matchers = selector_matchers(selector)
    if kind != "Namespace":
        matchers.append(f"{_namespace_label(rule.resources, rule.path)}=<<namespace>>")
    matchers.append(f"{label}={string_literal(name)}")
    query = _fill(
        rule.metrics_query, rule.path, {"Series": series, "LabelMatchers": ",".join(matchers), "GroupBy": label}
    )
    return AdapterQuery(query, rule.path, series, known is not None)


def external_query(
    config: AdapterConfig, metric: str, selector: Mapping[str, Any] | None, known: frozenset[str] | None = None
) -> AdapterQuery:
    rule, series = _serving_rule(config.external_rules, metric, None, "external metric", config.source, known)
    matchers = selector_matchers(selector)
    if rule.resources.namespaced:
        matchers.append(f"{_namespace_label(rule.resources, rule.path)}=<<namespace>>")
    query = _fill(rule.metrics_query, rule.path, {"Series": series, "LabelMatchers": ",".join(matchers), "GroupBy": ""})
    return AdapterQuery(query, rule.path, series, known is not None)


def resource_query(config: AdapterConfig, resource: str) -> AdapterQuery | None:
    """The adapter's ``resourceRules`` query for cpu or memory; None when it has none (the HPA then
    read metrics-server, and the built-in cAdvisor query stands in)."""
    rule = config.resource_rules.get(resource)
    if rule is None:
        return None
    if not rule.container_label:
        raise AdapterProblem(f"{rule.path}.containerLabel: Required value: the label of the container name")
    pod_label = label_for_resource(rule.resources, "", "pods")
    if pod_label is None:
        raise AdapterProblem(f"{rule.path} maps no label to pods (resources.overrides or resources.template)")
    ns_label = _namespace_label(rule.resources, rule.path)
    query = _fill(
        rule.container_query,
        rule.path,
        {"Series": "", "LabelMatchers": _scope(ns_label), "GroupBy": f"{ns_label},{pod_label},{rule.container_label}"},
    )
    return AdapterQuery(
        _renamed(query, [(pod_label, "pod"), (ns_label, "namespace"), (rule.container_label, "container")]),
        rule.path,
        "",
    )


def candidate_series(config: AdapterConfig, metric: str) -> list[str]:
    """Every series some rule could serve as ``metric``: what to ask Prometheus about."""
    return [c for rule in (*config.rules, *config.external_rules) for c in series_candidates(rule, metric)]
