"""The adapter's naming, association and templating rules as the converter reads them."""

from __future__ import annotations

import re

import pytest

from autoscaler.convert.adapter_config import DiscoveryRule, GroupResource, ResourceMapping
from autoscaler.convert.adapter_query import AdapterProblem, selector_matchers
from autoscaler.convert.gotemplate import TemplateProblem, render
from autoscaler.convert.naming import api_name, go_expand, label_for_resource, name_matchers, series_for

PODS_NS = ResourceMapping("", (("namespace", GroupResource("", "namespace")), ("pod", GroupResource("", "pod"))), True)


def rule(
    series_query: str,
    matches: str = "",
    as_: str = "",
    filters: tuple[tuple[bool, str], ...] = (),
    resources: ResourceMapping = PODS_NS,
) -> DiscoveryRule:
    return DiscoveryRule("rules[0]", series_query, filters, resources, matches, as_, "<<.Series>>")


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("${1}_per_second", "http_requests_per_second"),
        ("$1_per_second", ""),  # Go reads "$1_per_second" as the group named "1_per_second"
        ("x$$y$1", "x$yhttp_requests"),
        ("${name}", "http_requests"),
        ("$0", "http_requests_total"),
    ],
)
def test_go_expand(template: str, expected: str) -> None:
    match = re.search(r"^(?P<name>(.*))_total$", "http_requests_total")
    assert match is not None
    # group 1 is "name" here as well: both forms must agree
    assert go_expand(template, match) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('http_requests_total{pod!=""}', [("=", "http_requests_total")]),
        ('{__name__=~"^container_.*",container!="POD"}', [("=~", "^container_.*")]),
        ('{__name__="app_sessions",kubernetes_namespace!=""}', [("=", "app_sessions")]),
        ("up", [("=", "up")]),
    ],
)
def test_name_matchers(query: str, expected: list[tuple[str, str]]) -> None:
    assert name_matchers(query) == expected


def test_series_behind_a_renamed_metric() -> None:
    renamed = rule('{__name__=~"^http_.*_total$",pod!=""}', "^(.*)_total$", "${1}_per_second")
    assert series_for(renamed, "http_requests_per_second") == "http_requests_total"
    assert series_for(renamed, "grpc_calls_per_second") is None  # the seriesQuery selects only http_*


def test_default_as_and_filters() -> None:
    one_group = rule(
        '{__name__=~"^container_.*",container!="POD"}',
        "^container_(.*)_total$",
        filters=((False, "^container_.*_seconds_total$"),),
    )
    assert api_name(one_group, "container_network_receive_bytes_total") == "network_receive_bytes"
    assert series_for(one_group, "network_receive_bytes") == "container_network_receive_bytes_total"
    assert api_name(one_group, "container_cpu_usage_seconds_total") is None  # filtered out
    assert series_for(one_group, "cpu_usage_seconds") is None


def test_literal_name_and_identity() -> None:
    assert (
        series_for(rule("nginx_ingress_controller_requests", "^nginx_ingress_controller_requests$", "rps"), "rps")
        == "nginx_ingress_controller_requests"
    )
    assert series_for(rule('{__name__="app_sessions"}'), "app_sessions") == "app_sessions"
    assert series_for(rule('{__name__="app_sessions"}'), "sessions") is None


def test_resource_labels() -> None:
    templated = ResourceMapping("kube_<<.Group>>_<<.Resource>>", (), True)
    assert label_for_resource(templated, "apps", "Deployment") == "kube_apps_deployment"
    assert label_for_resource(templated, "networking.k8s.io", "Ingress") == "kube_networking_k8s_io_ingress"
    assert label_for_resource(PODS_NS, "", "pods") == "pod"
    assert label_for_resource(PODS_NS, "", "namespaces") == "namespace"
    assert label_for_resource(PODS_NS, "apps", "Deployment") is None
    grouped = ResourceMapping("", (("svc", GroupResource("apps", "deployment")),), True)
    assert label_for_resource(grouped, "apps", "Deployment") == "svc"
    assert label_for_resource(grouped, "extensions", "Deployment") is None


def test_selector_matchers_as_the_adapter_writes_them() -> None:
    selector = {
        "matchLabels": {"verb": "GET"},
        "matchExpressions": [
            {"key": "code", "operator": "In", "values": ["500", "200"]},
            {"key": "path", "operator": "NotIn", "values": ["/health"]},
            {"key": "zone", "operator": "Exists"},
            {"key": "canary", "operator": "DoesNotExist"},
        ],
    }
    assert selector_matchers(selector) == ['canary=""', 'code=~"200|500"', 'path!~"/health"', 'verb="GET"', 'zone!=""']
    with pytest.raises(AdapterProblem):
        selector_matchers({"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["1"]}]})


def test_go_template_subset() -> None:
    assert (
        render(
            "sum(<<.Series>>{<<.LabelMatchers>>}) by (<< .GroupBy >>)",
            {"Series": "s", "LabelMatchers": 'a="b"', "GroupBy": "pod"},
        )
        == 'sum(s{a="b"}) by (pod)'
    )
    assert render("x   <<- .Series ->>   y", {"Series": "s"}) == "xsy"
    with pytest.raises(TemplateProblem, match="range"):
        render("<<range .GroupBySlice>><<.>><<end>>", {})
    with pytest.raises(TemplateProblem, match="LabelValuesByName"):
        render("<<.LabelValuesByName>>", {"Series": "s"})
