"""HPAs and ScaledObjects converted: what carries over unchanged, each query, each note, and errors
with the source object's own paths. Every converted target must pass the project's validation."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from autoscaler.convert.adapter_config import read_adapter_config
from autoscaler.convert.hpa import convert_hpa
from autoscaler.convert.keda import convert_scaled_object
from autoscaler.convert.model import Conversion
from autoscaler.prometheus.templates import validate_template
from autoscaler.values.fields import ErrorList
from tests.convert.helpers import ADAPTER_CONFIG, HPAS, SCALED_OBJECTS, documents, load_written


def adapter() -> Any:
    errors = ErrorList()
    config = read_adapter_config(yaml.safe_load(ADAPTER_CONFIG.read_text()), "adapter.yaml", errors)
    assert not errors.items and config is not None
    return config


def hpa(name: str) -> dict[str, Any]:
    return next(d for d in documents(HPAS.read_text()) if d["metadata"]["name"] == name)


def scaled_object(name: str) -> dict[str, Any]:
    return next(d for d in documents(SCALED_OBJECTS.read_text()) if d["metadata"]["name"] == name)


def converted(conversion: Conversion, tmp_path: Path) -> dict[str, Any]:
    assert conversion.errors == []
    assert conversion.target is not None
    load_written(tmp_path, conversion.target)  # the project's own validation, queries required
    for metric in conversion.target["spec"].get("metrics", []):
        source = metric[metric["type"][0].lower() + metric["type"][1:]]
        if "query" in source:
            assert validate_template(source["query"]) == []
    return conversion.target["spec"]


def notes(conversion: Conversion) -> dict[str, str]:
    """Each path's notes, joined."""
    out: dict[str, str] = {}
    for n in conversion.notes:
        out[n.path] = (out[n.path] + " | " if n.path in out else "") + f"{n.kind.value}: {n.message}"
    return out


def test_hpa_v2_with_every_metric_type(tmp_path: Path) -> None:
    source = hpa("web")
    conversion = convert_hpa(source, "hpas.yaml", adapter())
    spec = converted(conversion, tmp_path)
    for key in ("scaleTargetRef", "minReplicas", "maxReplicas", "behavior"):
        assert spec[key] == source["spec"][key]  # unchanged
    queries = [m[m["type"][0].lower() + m["type"][1:]]["query"] for m in spec["metrics"]]
    assert queries[0].split() == [
        "sum",
        "by",
        "(namespace,pod,container)",
        "(",
        'rate(container_cpu_usage_seconds_total{<<scope>>,container!="",pod!=""}[3m])',
        ")",
    ]
    assert queries[1] == 'sum(rate(http_requests_total{verb="GET",<<scope>>}[1m])) by (namespace,pod)'
    assert queries[2] == (
        'sum(rate(nginx_ingress_controller_requests{namespace=<<namespace>>,ingress="main-route"}[2m])) by (ingress)'
    )
    assert queries[3] == 'sum(queue_messages_ready{queue=~"jobs",namespace=<<namespace>>}) by ()'
    # the rest of each metric is the HPA's, as written
    for ours, theirs in zip(spec["metrics"], source["spec"]["metrics"], strict=True):
        key = theirs["type"][0].lower() + theirs["type"][1:]
        assert {k: v for k, v in ours[key].items() if k != "query"} == theirs[key]
    assert "rules[1]" in notes(conversion)["spec.metrics[1].pods.query"]
    assert "cpuRateWindow: 3m" in notes(conversion)["spec.metrics[0].resource"]
    assert conversion.old_hpa == "web"


def test_hpa_v1_and_builtin_queries_without_adapter(tmp_path: Path) -> None:
    conversion = convert_hpa(hpa("api"), "hpas.yaml", None)
    spec = converted(conversion, tmp_path)
    assert spec["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}
    ]
    assert "built-in cAdvisor query" in notes(conversion)["spec.metrics[0].resource"]
    v1_default = copy.deepcopy(hpa("api"))
    del v1_default["spec"]["targetCPUUtilizationPercentage"]
    spec = converted(convert_hpa(v1_default, "hpas.yaml", None), tmp_path)
    assert spec["metrics"][0]["resource"]["target"]["averageUtilization"] == 80


def test_v2beta2_and_label_renames(tmp_path: Path) -> None:
    source = {
        "apiVersion": "autoscaling/v2beta2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "chat", "namespace": "im"},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "chat"},
            "maxReplicas": 5,
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": "app_sessions"},
                        "target": {"type": "AverageValue", "averageValue": "200"},
                    },
                }
            ],
        },
    }
    spec = converted(convert_hpa(source, "x.yaml", adapter()), tmp_path)
    assert spec["metrics"][0]["pods"]["query"] == (
        "label_replace(label_replace(max(app_sessions{kubernetes_namespace=<<namespace>>}) by "
        '(kubernetes_namespace,kubernetes_pod_name), "pod", "$1", "kubernetes_pod_name", "(.*)"), '
        '"namespace", "$1", "kubernetes_namespace", "(.*)")'
    )


def test_a_series_prometheus_lacks_is_not_assumed(tmp_path: Path) -> None:
    source = copy.deepcopy(hpa("web"))
    source["spec"]["metrics"][1]["pods"]["metric"]["name"] = "grpc_calls_per_second"
    # Unasked, the cAdvisor rule could serve it from container_grpc_calls_per_second_total: said so.
    assumed = convert_hpa(source, "hpas.yaml", adapter())
    assert "container_grpc_calls_per_second_total is assumed to exist" in notes(assumed)["spec.metrics[1].pods.query"]
    known = frozenset({"http_requests_total", "nginx_ingress_controller_requests", "queue_messages_ready"})
    checked = convert_hpa(hpa("web"), "hpas.yaml", adapter(), known)
    assert "assumed" not in notes(checked)["spec.metrics[1].pods.query"]
    conversion = convert_hpa(source, "hpas.yaml", adapter(), known)
    spec = converted(conversion, tmp_path)
    assert [m["type"] for m in spec["metrics"]] == ["Resource", "Object", "External"]
    lost = [n for n in conversion.losses if n.path == "spec.metrics[1]"]
    assert (
        lost
        and (
            "no rule in adapter.yaml serves pods metric 'grpc_calls_per_second': none both names a series "
            "that Prometheus holds"
        )
        in lost[0].message
    )
    without = convert_hpa(hpa("web"), "hpas.yaml", None)
    assert {n.path for n in without.losses} == {"spec.metrics[1]", "spec.metrics[2]", "spec.metrics[3]"}
    assert all("--adapter-config" in n.message for n in without.losses)


def test_all_metrics_lost_is_an_error_not_a_cpu_default() -> None:
    source = copy.deepcopy(hpa("web"))
    source["spec"]["metrics"] = source["spec"]["metrics"][1:2]
    conversion = convert_hpa(source, "hpas.yaml", None)
    assert conversion.target is None
    assert any("no metric could be converted" in e for e in conversion.errors)


def test_invalid_hpa_errors_name_its_fields() -> None:
    source = copy.deepcopy(hpa("web"))
    source["spec"]["maxReplicas"] = 0
    source["spec"]["behavior"]["scaleDown"]["polices"] = []
    source["spec"]["metrics"][1]["pods"]["target"] = {"type": "Utilization", "averageUtilization": 5}
    conversion = convert_hpa(source, "hpas.yaml", adapter())
    assert conversion.target is None
    assert "spec.maxReplicas: must be greater than 0" in conversion.errors
    assert any(e.startswith("spec.behavior.scaleDown.polices: unknown field") for e in conversion.errors)
    assert any(
        e.startswith("spec.metrics[1].pods.target.type: Utilization is not a valid target type")
        for e in conversion.errors
    )
    unsupported = convert_hpa({**hpa("web"), "apiVersion": "autoscaling/v2beta1"}, "x", None)
    assert unsupported.errors and unsupported.errors[0].startswith("apiVersion:")


def test_keda_invalid_input_errors_name_the_field() -> None:
    source = copy.deepcopy(scaled_object("api"))
    source["spec"]["triggers"][0]["metricType"] = "Value"
    source["spec"]["triggers"][2]["metadata"]["threshold"] = "lots"
    del source["spec"]["triggers"][2]["metadata"]["query"]
    conversion = convert_scaled_object(source, "so.yaml")
    assert conversion.target is None
    assert any(e.startswith("spec.triggers[0].metricType: 'Value'") for e in conversion.errors)
    assert "spec.triggers[2].metadata.query: Required value" in conversion.errors
    assert "spec.triggers[2].metadata.threshold: 'lots' is not a number" in conversion.errors


def test_adapter_config_errors_have_paths() -> None:
    errors = ErrorList()
    bad = {
        "rules": [
            {"seriesQuery": "x", "name": {"matches": "(a)(b"}, "metricsQuery": "q"},
            {
                "seriesQuery": "y",
                "seriesFilters": [{"is": "a", "isNot": "b"}],
                "metricsQuery": "q",
                "resources": {"overides": {}},
            },
        ],
        "resourceRules": {"cpu": {"containerQuery": "q"}, "window": "soon"},
    }
    assert read_adapter_config(bad, "adapter.yaml", errors) is None
    messages = [str(e) for e in errors.items]
    assert any(m.startswith("rules[0].name.matches: not a valid regular expression") for m in messages)
    assert any(m.startswith("rules[1].seriesFilters[0]: cannot have both") for m in messages)
    assert any(m.startswith('rules[1].resources.overides: unknown field (did you mean "overrides"?)') for m in messages)
    assert "resourceRules.window: 'soon' is not a duration (e.g. 5m)" in messages
