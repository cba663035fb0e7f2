"""prometheus-adapter rules whose ``name.matches`` captures an alternation (``^jvm_threads_(live|peak)_threads$``
→ ``jvm_threads_${1}``) serve their metrics as the adapter does: the converter finds the series behind each
API name by running the naming backwards (autoscaler/convert/naming_inverse.py), checked forward."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from autoscaler.convert.adapter_config import read_adapter_config
from autoscaler.convert.hpa import convert_hpa
from autoscaler.convert.naming import api_name, series_candidates, series_for
from autoscaler.core.observation import PodsReading
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.prometheus import MetricsReader, PrometheusClient, PrometheusSettings
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.values.fields import ErrorList
from autoscaler_sandbox import PrometheusSandbox
from tests.convert.series_data import JVM_THREADS, T_END
from tests.convert.test_naming import rule

JVM = '{__name__=~"^jvm_threads_(live|peak)_threads$",namespace!="",pod!=""}'


def test_each_alternative_is_served_under_its_own_name() -> None:
    threads = rule(JVM, "^jvm_threads_(live|peak)_threads$", "jvm_threads_${1}")
    assert series_for(threads, "jvm_threads_live") == "jvm_threads_live_threads"
    assert series_for(threads, "jvm_threads_peak") == "jvm_threads_peak_threads"
    assert series_for(threads, "jvm_threads_daemon") is None  # not an alternative: the adapter serves no such name
    assert api_name(threads, "jvm_threads_live_threads") == "jvm_threads_live"  # the forward naming agrees


@pytest.mark.parametrize(
    ("matches", "as_", "metric", "series"),
    [
        ("^jvm_(threads|classes)_live$", "", "threads", "jvm_threads_live"),  # the default as: $1
        ("^(?P<kind>live|peak)_threads$", "threads_${kind}", "threads_peak", "peak_threads"),  # a named group
        ("^(jvm|go)_(.*)_total$", "${1}_${2}", "go_gc_runs", "go_gc_runs_total"),  # two groups
        ("^app_(?:http|grpc)_(requests|errors)$", "app_${1}", "app_errors", "app_http_errors"),  # non-capturing
        ("^http\\.(2xx|5xx)_count$", "http_${1}", "http_5xx", "http.5xx_count"),  # an escaped dot
    ],
)
def test_shapes_of_alternation_rules(matches: str, as_: str, metric: str, series: str) -> None:
    found = rule('{__name__=~".+"}', matches, as_)
    assert series_for(found, metric) == series, series_candidates(found, metric)


def test_a_group_the_name_does_not_use_is_each_of_its_alternatives_and_prometheus_decides() -> None:
    either = rule('{__name__=~".+"}', "^(jvm|go)_threads_(live|peak)$", "threads_${2}")
    assert series_candidates(either, "threads_live") == ["jvm_threads_live", "go_threads_live"]
    assert series_for(either, "threads_live", frozenset({"go_threads_live"})) == "go_threads_live"


def test_a_pattern_it_does_not_read_gives_no_guess() -> None:
    classes = rule('{__name__=~".+"}', "^jvm_[a-z]+_(live|peak)$", "jvm_${1}")
    assert series_for(classes, "jvm_live") is None
    # Go reads "$2_" as the group named "2_", which does not exist: the name is "a", never "d_a"
    go_names = rule('{__name__=~".+"}', "^(a|b)_(c|d)$", "$2_$1")
    assert api_name(go_names, "a_d") == "a" and series_for(go_names, "d_a") is None


ADAPTER: dict[str, Any] = {
    "rules": [
        {
            "seriesQuery": JVM,
            "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
            "name": {"matches": "^jvm_threads_(live|peak)_threads$", "as": "jvm_threads_${1}"},
            "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
        }
    ]
}


def hpa(metric: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {"metric": {"name": metric}, "target": {"type": "AverageValue", "averageValue": "20"}},
                }
            ],
        },
    }


@pytest.fixture
async def client(series_prometheus: PrometheusSandbox) -> AsyncIterator[PrometheusClient]:
    async with PrometheusClient(PrometheusSettings(url=series_prometheus.url)) as opened:
        yield opened


@pytest.mark.prometheus
@pytest.mark.parametrize("kind", ["live", "peak"])
async def test_the_converted_metric_reads_the_series_the_adapter_serves(client: PrometheusClient, kind: str) -> None:
    errors = ErrorList()
    config = read_adapter_config(ADAPTER, "adapter", errors)
    assert config is not None, errors.items
    known = frozenset({"jvm_threads_live_threads", "jvm_threads_peak_threads"})  # what --prometheus finds
    conversion = convert_hpa(hpa(f"jvm_threads_{kind}"), "hpas.yaml", config, known)
    assert conversion.target is not None and not conversion.losses, (conversion.errors, conversion.losses)
    spec = parse_target_spec(conversion.target["spec"], "spec")
    assert f"jvm_threads_{kind}_threads" in (spec.metrics[0].query or "")
    reader = MetricsReader(client, client.settings)
    query = TargetQuery("shop", "web", spec.scale_target_ref, "app=web", ("web-1", "web-2"), spec.metrics)
    (reading,) = (await reader.read([query], T_END))[0]
    assert isinstance(reading, PodsReading), reading
    expected = {labels["pod"]: int(value) * 1000 for labels, which, value in JVM_THREADS if which == kind}
    assert {pod: sample.value for pod, sample in reading.pods.items()} == expected
