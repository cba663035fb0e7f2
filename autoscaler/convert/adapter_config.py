"""prometheus-adapter's configuration (``rules``, ``resourceRules``, ``externalRules``), read and
checked with path-precise errors, from its config file or from the ConfigMap that holds it.

The fields are the adapter's own (its ``pkg/config``); like the adapter, an unknown field is an
error (it loads the file with a strict YAML decoder). Regular expressions and templates are
checked here so that a broken rule is reported once, where it is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from autoscaler.values.durations import parse_prometheus_duration
from autoscaler.values.fields import ErrorList, Obj
from autoscaler.values.yaml_files import yaml_problem

# The key of the adapter's ConfigMap that holds the configuration (its Helm chart and manifests).
CONFIGMAP_KEY = "config.yaml"
TOP_LEVEL_KEYS = ("rules", "resourceRules", "externalRules")


@dataclass(frozen=True, slots=True)
class GroupResource:
    group: str
    resource: str


@dataclass(frozen=True, slots=True)
class ResourceMapping:
    template: str
    overrides: tuple[tuple[str, GroupResource], ...]  # Prometheus label → group-resource
    namespaced: bool  # external rules: add the namespace matcher


@dataclass(frozen=True, slots=True)
class DiscoveryRule:
    path: str  # rules[2], externalRules[0]: where it is written
    series_query: str
    series_filters: tuple[tuple[bool, str], ...]  # (positive, regex): is / isNot
    resources: ResourceMapping
    name_matches: str
    name_as: str
    metrics_query: str


@dataclass(frozen=True, slots=True)
class ResourceRule:
    path: str  # resourceRules.cpu
    container_query: str
    resources: ResourceMapping
    container_label: str


@dataclass(frozen=True, slots=True)
class AdapterConfig:
    source: str
    rules: tuple[DiscoveryRule, ...]
    external_rules: tuple[DiscoveryRule, ...]
    resource_rules: Mapping[str, ResourceRule]  # cpu, memory
    window: str | None  # resourceRules.window


def is_adapter_config(document: object) -> bool:
    """A mapping with the adapter's top-level keys and no ``kind`` (not a Kubernetes object)."""
    return isinstance(document, Mapping) and "kind" not in document and any(key in document for key in TOP_LEVEL_KEYS)


def is_adapter_configmap(document: object) -> bool:
    if not isinstance(document, Mapping) or document.get("kind") != "ConfigMap":
        return False
    data = document.get("data")
    if not isinstance(data, Mapping) or not isinstance(data.get(CONFIGMAP_KEY), str):
        return False
    try:
        return is_adapter_config(yaml.safe_load(data[CONFIGMAP_KEY]))
    except yaml.YAMLError:
        return True  # the adapter's key is there: read_adapter_configmap reports the YAML problem


def read_adapter_configmap(document: Mapping[str, Any], source: str, errors: ErrorList) -> AdapterConfig | None:
    """The configuration inside the adapter's ConfigMap (``data["config.yaml"]``); error paths start
    at ``data["config.yaml"]``."""
    path = f'data["{CONFIGMAP_KEY}"]'
    try:
        inner = yaml.safe_load(document["data"][CONFIGMAP_KEY])
    except yaml.YAMLError as exc:
        errors.add(path, yaml_problem(exc))
        return None
    return read_adapter_config(inner, source, errors, prefix=path)


def read_adapter_config(document: object, source: str, errors: ErrorList, *, prefix: str = "") -> AdapterConfig | None:
    """The configuration in ``document`` (read from ``source``); every problem goes to ``errors``
    with its path (``rules[0].name.matches``), and the result is None if there was any."""
    before = len(errors.items)
    root = Obj.of(document, prefix, errors)
    if root is None:
        return None
    rules = tuple(_rules(root, "rules"))
    external = tuple(_rules(root, "externalRules"))
    resource_rules: dict[str, ResourceRule] = {}
    window = None
    resource_obj = root.obj("resourceRules")
    if resource_obj is not None:
        for name in ("cpu", "memory"):
            rule_obj = resource_obj.obj(name)
            if rule_obj is not None:
                rule = _resource_rule(rule_obj, f"resourceRules.{name}")
                if rule is not None:
                    resource_rules[name] = rule
        window = resource_obj.string("window")
        if window is not None and parse_prometheus_duration(window) is None:
            resource_obj.error("window", f"{window!r} is not a duration (e.g. 5m)")
        resource_obj.finish()
    root.finish()
    if len(errors.items) > before:
        return None
    return AdapterConfig(source, rules, external, resource_rules, window)


def _rules(root: Obj, key: str) -> list[DiscoveryRule]:
    out: list[DiscoveryRule] = []
    raw = root.raw(key)
    if raw is None:
        return out
    if not isinstance(raw, list):
        root.error(key, "must be a list")
        return out
    for index, element in enumerate(raw):
        rule_obj = Obj.of(element, root.at(f"{key}[{index}]"), root.errors)
        if rule_obj is not None:
            rule = _rule(rule_obj, f"{key}[{index}]")
            if rule is not None:
                out.append(rule)
    return out


def _regex(obj: Obj, key: str, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        re.compile(value)
    except re.error as exc:
        obj.error(key, f"not a valid regular expression: {exc}")
        return None
    return value


def _rule(obj: Obj, where: str) -> DiscoveryRule | None:
    before = len(obj.errors.items)
    series_query = obj.string("seriesQuery", required=True, non_empty=True)
    filters: list[tuple[bool, str]] = []
    for path, element in obj.items("seriesFilters"):
        flt = Obj.of(element, path, obj.errors)
        if flt is None:
            continue
        is_ = _regex(flt, "is", flt.string("is"))
        is_not = _regex(flt, "isNot", flt.string("isNot"))
        if flt.has("is") and flt.has("isNot"):
            flt.errors.add(path, "cannot have both an `is` and an `isNot` expression in a single filter")
        elif not flt.has("is") and not flt.has("isNot"):
            flt.errors.add(path, "must have either an `is` or `isNot` expression")
        elif is_ is not None:
            filters.append((True, is_))
        elif is_not is not None:
            filters.append((False, is_not))
        flt.finish()
    resources = _resources(obj.obj("resources"))
    name_matches, name_as = "", ""
    name_obj = obj.obj("name")
    if name_obj is not None:
        name_matches = _regex(name_obj, "matches", name_obj.string("matches")) or ""
        name_as = name_obj.string("as") or ""
        if name_matches and not name_as and re.compile(name_matches).groups > 1:
            name_obj.error("as", "must be given when `matches` has more than one capture group")
        name_obj.finish()
    metrics_query = obj.string("metricsQuery", non_empty=True)
    if metrics_query is None and not obj.has("metricsQuery"):
        obj.error("metricsQuery", "Required value: the adapter cannot serve a rule without one")
    obj.finish()
    if len(obj.errors.items) > before or series_query is None or metrics_query is None:
        return None
    return DiscoveryRule(where, series_query, tuple(filters), resources, name_matches, name_as, metrics_query)


def _resources(obj: Obj | None) -> ResourceMapping:
    if obj is None:
        return ResourceMapping("", (), True)
    template = obj.string("template") or ""
    overrides: list[tuple[str, GroupResource]] = []
    over = obj.obj("overrides")
    if over is not None:
        for label, value in over.value.items():
            gr = Obj.of(value, over.at(str(label)), obj.errors)
            over.mark_known(label)
            if gr is None:
                continue
            resource = gr.string("resource", required=True, non_empty=True)
            group = gr.string("group") or ""
            gr.finish()
            if resource:
                overrides.append((str(label), GroupResource(group, resource)))
        over.finish()
    namespaced = obj.boolean("namespaced", default=True)
    obj.finish()
    return ResourceMapping(template, tuple(overrides), True if namespaced is None else namespaced)


def _resource_rule(obj: Obj, where: str) -> ResourceRule | None:
    before = len(obj.errors.items)
    query = obj.string("containerQuery", required=True, non_empty=True)
    obj.string("nodeQuery")  # node metrics: the HPA never asks for them
    resources = _resources(obj.obj("resources"))
    container_label = obj.string("containerLabel", default="") or ""
    obj.finish()
    if len(obj.errors.items) > before or query is None:
        return None
    return ResourceRule(where, query, resources, container_label)
