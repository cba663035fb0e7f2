"""The reader against a real server scraping a test exporter every second: each test runs against Prometheus
and against VictoriaMetrics (``live_prometheus`` is parametrized), the API contract the project relies on.

Where the two differ, the test says so and the reading is safe either way:

* VictoriaMetrics leaves NaN samples out of its answers (a NaN series is absent, not NaN): a NaN pod is missing
  in both, a NaN-only External metric fails as "no series" instead of "has value NaN";
* VictoriaMetrics answers a query that does not parse with HTTP 422 and errorType "422" (Prometheus: 400
  bad_data), and an execution error with errorType "422" (Prometheus: "execution"): an invalid query either way;
* ``scalar(…)`` answers a vector with one label-less series in VictoriaMetrics (Prometheus: a scalar);
* ``rate()`` does not extrapolate in VictoriaMetrics (MetricsQL): a counter growing at a constant rate gives
  the same rate in both, to the tolerance below;
* the order of the series differs: nothing here depends on it (pods are matched by labels, External values
  are compared sorted);
* both write stale markers when a series vanishes from a scrape (test_stale_series_make_the_pod_missing).
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from autoscaler.core.observation import (
    DEFAULT_SAMPLE_WINDOW,
    ExternalReading,
    MetricFailure,
    ObjectReading,
    PodsReading,
    ResourceReading,
)
from autoscaler.prometheus import (
    InstantResult,
    MetricsReader,
    PrometheusBadQuery,
    PrometheusClient,
    PrometheusSettings,
)
from autoscaler.prometheus.promql import regex_literal, string_literal
from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from tests.prometheus import scenario as sc

pytestmark = pytest.mark.prometheus


@pytest.fixture
def backend(live_prometheus: PrometheusSandbox) -> str:
    return live_prometheus.kind


def reader(client: PrometheusClient, *, batch: bool = True) -> MetricsReader:
    return MetricsReader(client, client.settings, batch=batch)


def now() -> float:
    return round(time.time(), 3)


def assert_close(actual: int, expected_cores: float) -> None:
    # Scrape timing makes rate() off by a few parts per billion; exact values: see test_backfill.
    assert abs(actual - expected_cores * 1000) <= 1, (actual, expected_cores)


async def test_cpu_per_pod_per_container(client: PrometheusClient) -> None:
    at = now()
    rows = await reader(client).read([sc.web([sc.cpu_metric()]), sc.api([sc.cpu_metric()])], at)
    web, api = rows[0][0], rows[1][0]
    assert isinstance(web, ResourceReading) and isinstance(api, ResourceReading)
    # Pause ("POD") and pod-level ("") series are excluded; other-1 belongs to no target.
    assert set(web.pods) == {"web-1", "web-2", "web-3"}
    assert set(web.pods["web-1"].containers) == {"app", "sidecar"}
    for (namespace, pod, container), rate in sc.CPU_RATES.items():
        reading = web if namespace == "shop" else api
        if pod in reading.pods and container in ("app", "sidecar"):
            value = reading.pods[pod].containers[container]
            assert value is not None
            assert_close(value, rate)
    usage = web.pods["web-2"]
    assert usage.window == 5.0
    assert usage.timestamp == pytest.approx(at, abs=0.001)


async def test_memory_per_container_is_exact(client: PrometheusClient) -> None:
    rows = await reader(client).read([sc.web([sc.memory_metric()]), sc.api([sc.memory_metric()])], now())
    web, api = rows[0][0], rows[1][0]
    assert isinstance(web, ResourceReading) and isinstance(api, ResourceReading)
    assert web.pods["web-1"].containers == {"app": 104857600000, "sidecar": 2097152000}
    assert web.pods["web-3"].containers == {"app": 1000}
    assert api.pods["api-1"].containers == {"app": 1073741824000}
    assert web.pods["web-1"].window == DEFAULT_SAMPLE_WINDOW


async def test_container_resource_reports_every_container_of_the_pod(client: PrometheusClient) -> None:
    # The engine picks the container (and needs the others to tell "pod missing" from "container missing").
    rows = await reader(client).read([sc.web([sc.cpu_metric(), sc.container_cpu_metric("sidecar")])], now())
    resource, container = rows[0]
    assert isinstance(container, ResourceReading) and isinstance(resource, ResourceReading)
    assert set(container.pods["web-1"].containers) == {"app", "sidecar"}
    assert client.stats.calls == 1  # both metrics share the one CPU query


async def test_pods_metric_values_are_exact(client: PrometheusClient) -> None:
    at = now()
    rows = await reader(client).read(
        [sc.web([sc.pods_metric(sc.rps_query("http_rps"))]), sc.api([sc.pods_metric(sc.rps_query("http_rps"))])], at
    )
    web, api = rows[0][0], rows[1][0]
    assert isinstance(web, PodsReading) and isinstance(api, PodsReading)
    assert {pod: s.value for pod, s in web.pods.items()} == {"web-1": 300, "web-2": 1500, "web-3": 12000}
    assert {pod: s.value for pod, s in api.pods.items()} == {"api-1": 7000, "api-2": 1}
    assert web.pods["web-1"].timestamp == pytest.approx(at, abs=0.001)
    assert web.pods["web-1"].window == DEFAULT_SAMPLE_WINDOW


async def test_external_sums_series_and_object_sums_too(client: PrometheusClient) -> None:
    rows = await reader(client).read(
        [sc.web([sc.external_metric("queue_depth"), sc.object_metric("queue_depth")])], now()
    )
    external, obj = rows[0]
    assert isinstance(external, ExternalReading) and sorted(external.values) == [8500, 42000]
    assert isinstance(obj, ObjectReading) and obj.value == 50500
    assert client.stats.calls == 1  # the same rendered query is sent once


async def test_batched_queries_do_not_grow_with_targets_and_match_unbatched(client: PrometheusClient) -> None:
    metrics = [sc.cpu_metric(), sc.memory_metric(), sc.pods_metric(sc.rps_query("http_rps"))]
    targets = [sc.web(metrics), sc.api(metrics)]
    # A few seconds back: both reads must see the same samples, and a sample scraped just before "now"
    # may reach a loaded backend between them (VictoriaMetrics then gave a rate 1 milli apart, in CI).
    at = now() - 5.0
    batched = await reader(client).read(targets, at)
    assert client.stats.calls == 3  # one per template, both namespaces in each
    before = client.stats.calls
    unbatched = await reader(client, batch=False).read(targets, at)
    assert client.stats.calls - before == 6  # one per metric per target
    assert batched == unbatched


async def test_template_with_namespace_and_selector(client: PrometheusClient) -> None:
    # web's selector is "app=web,tier in (front,back)": web-3 (tier=batch) and other-1 (app=other) are out.
    query = "sum by (pod) (selector_rps{namespace=<<namespace>>, <<selector>>})"
    rows = await reader(client).read([sc.web([sc.pods_metric(query)])], now())
    reading = rows[0][0]
    assert isinstance(reading, PodsReading)
    assert {pod: s.value for pod, s in reading.pods.items()} == {"web-1": 10000, "web-2": 20000}


async def test_template_with_pod_names_and_target_name(client: PrometheusClient) -> None:
    query = (
        'sum by (namespace, pod) (label_replace(http_rps{pod=~<<pods>>}, "hpa", <<name>>, "", "")'
        " * on (namespace, pod) group_left() (0 * http_rps + 1))"
    )
    rows = await reader(client).read([sc.web([sc.pods_metric(query)], pods=("web-1", "web-3"))], now())
    reading = rows[0][0]
    assert isinstance(reading, PodsReading)
    assert {pod: s.value for pod, s in reading.pods.items()} == {"web-1": 300, "web-3": 12000}


async def test_nan_and_inf_make_the_pod_missing(client: PrometheusClient) -> None:
    rows = await reader(client).read(
        [
            sc.web([sc.pods_metric(sc.rps_query("bad_rps"))]),
            sc.api([sc.pods_metric(sc.rps_query("bad_rps"))], pods=("api-1",)),
        ],
        now(),
    )
    web, api = rows[0][0], rows[1][0]
    assert isinstance(web, PodsReading) and set(web.pods) == {"web-3"}
    assert isinstance(api, MetricFailure)
    assert "every series for the target's pods is NaN or infinite" in api.message


async def test_pod_without_series_is_missing(client: PrometheusClient) -> None:
    rows = await reader(client).read([sc.web([sc.pods_metric(sc.rps_query("partial_rps"))])], now())
    reading = rows[0][0]
    assert isinstance(reading, PodsReading) and set(reading.pods) == {"web-1", "web-2"}


async def test_duplicate_series_fail_the_metric_naming_the_pod(client: PrometheusClient) -> None:
    rows = await reader(client).read([sc.web([sc.pods_metric("dup_rps{<<scope>>}")])], now())
    failure = rows[0][0]
    assert isinstance(failure, MetricFailure)
    assert 'duplicate series for pod "web-1"' in failure.message
    assert 'path="/a"' in failure.message and 'path="/b"' in failure.message


async def test_empty_result_fails_pods_and_external_metrics(client: PrometheusClient) -> None:
    rows = await reader(client).read(
        [sc.web([sc.pods_metric(sc.rps_query("no_such_metric")), sc.external_metric("no_such_metric")])], now()
    )
    pods, external = rows[0]
    assert isinstance(pods, MetricFailure) and "the query returned no series" in pods.message
    assert isinstance(external, MetricFailure) and "the query returned no series" in external.message


async def test_nan_or_inf_external_fails(client: PrometheusClient, backend: str) -> None:
    rows = await reader(client).read(
        [
            sc.web(
                [
                    sc.external_metric("nan_gauge"),
                    sc.object_metric("inf_gauge"),
                    sc.external_metric("scalar(nan_gauge)"),
                ]
            )
        ],
        now(),
    )
    texts = ("has value NaN", "has value +Inf", "the scalar has value NaN")
    if backend == "victoriametrics":  # NaN samples are left out of the answer: nothing to read
        texts = ("the query returned no series", "has value +Inf", "the query returned no series")
    for failure, text in zip(rows[0], texts, strict=True):
        assert isinstance(failure, MetricFailure) and text in failure.message


async def test_ignore_null_values_reads_an_empty_nan_or_inf_answer_as_zero(client: PrometheusClient) -> None:
    """KEDA's ignoreNullValues: what KEDA's Prometheus scaler reads as 0 reads 0 (an empty answer, NaN, ±Inf;
    VictoriaMetrics leaves the NaN out: empty, 0 all the same); a metric without it that shares the empty
    query still fails, and an answer that is not a value (a range vector) fails either way."""
    lenient = [
        replace(sc.external_metric("no_such_metric"), ignore_null_values=True),
        replace(sc.external_metric("nan_gauge"), ignore_null_values=True),
        replace(sc.external_metric("scalar(nan_gauge)"), ignore_null_values=True),
        replace(sc.object_metric("inf_gauge"), ignore_null_values=True),
        replace(sc.external_metric("queue_depth"), ignore_null_values=True),
        replace(sc.external_metric("queue_depth[1m]"), ignore_null_values=True),
    ]
    strict = sc.external_metric("no_such_metric", name="strict")
    at = now()
    empty, nan, scalar_nan, inf, values, matrix, failed = (await reader(client).read([sc.web([*lenient, strict])], at))[
        0
    ]
    for reading in (empty, nan, scalar_nan):
        assert isinstance(reading, ExternalReading) and reading.values == (0,), reading
    assert isinstance(inf, ObjectReading) and inf.value == 0
    assert isinstance(values, ExternalReading) and sorted(values.values) == [8500, 42000]
    assert isinstance(matrix, MetricFailure) and "it must return an instant vector or a scalar" in matrix.message
    assert isinstance(failed, MetricFailure) and "the query returned no series" in failed.message
    assert abs(empty.timestamp - at) < 1  # an empty answer is stamped at the query's evaluation time


async def test_stale_series_make_the_pod_missing(
    client: PrometheusClient, exporter: MetricsExporter, live_prometheus: PrometheusSandbox
) -> None:
    exporter.remove("stale_rps", {"namespace": "shop", "pod": "web-2"})
    try:
        # The next scrape writes a staleness marker; from then on the series is gone.
        live_prometheus.wait_for("stale_rps", lambda r: len(r) == 1, timeout=10)
        rows = await reader(client).read([sc.web([sc.pods_metric(sc.rps_query("stale_rps"))])], now())
        reading = rows[0][0]
        assert isinstance(reading, PodsReading) and set(reading.pods) == {"web-1"}
    finally:
        exporter.set("stale_rps", {"namespace": "shop", "pod": "web-2"}, "2")


async def test_bad_query_gives_prometheus_error_text(client: PrometheusClient, backend: str) -> None:
    # Each server's own words: the status, errorType and text differ, the verdict (an invalid query) does not.
    status, error_type, text = (
        (400, "bad_data", "parse error") if backend == "prometheus" else (422, "422", "unexpected token")
    )
    with pytest.raises(PrometheusBadQuery) as raised:
        await client.query("sum(http_rps", now())
    assert raised.value.status == status and raised.value.error_type == error_type
    assert text in str(raised.value)
    rows = await reader(client).read([sc.web([sc.pods_metric("sum(http_rps{<<scope>>}")])], now())
    failure = rows[0][0]
    assert isinstance(failure, MetricFailure)
    assert f"rejected the query (HTTP {status}, {error_type}:" in failure.message
    assert "query: sum(http_rps{" in failure.message


async def test_execution_error_is_a_bad_query(client: PrometheusClient, backend: str) -> None:
    with pytest.raises(PrometheusBadQuery) as raised:
        await client.query("http_rps * on (namespace) http_rps", now())
    assert raised.value.status == 422
    assert raised.value.error_type == ("execution" if backend == "prometheus" else "422")


async def test_escaped_values_cannot_inject(client: PrometheusClient) -> None:
    for index, value in enumerate(sc.NASTY_VALUES):
        result = await client.query(f"nasty{{pod={string_literal(value)}}}", now())
        assert [s.labels["index"] for s in result.vector] == [str(index)], value
        result = await client.query(f"nasty{{pod=~{regex_literal([value])}}}", now())
        assert [s.labels["index"] for s in result.vector] == [str(index)], value
        result = await client.query(f'label_replace(vector(1), "v", {string_literal(value)}, "", "")', now())
        assert result.vector[0].labels["v"] == value


async def test_an_empty_pod_list_regex_matches_nothing(client: PrometheusClient) -> None:
    for selector in (f"nasty{{pod=~{regex_literal([])}}}", f"nasty{{absent_label=~{regex_literal([])}}}"):
        assert (await client.query(selector, now())).vector == ()
    assert len((await client.query('nasty{absent_label=~""}', now())).vector) == len(sc.NASTY_VALUES)


async def test_query_range_and_ready(client: PrometheusClient) -> None:
    end = now()
    result = await client.query_range('http_rps{pod="web-1"}', end - 2, end, 1)
    assert len(result.series) == 1
    assert [value for _, value in result.series[0].points] == ["0.3"] * 3
    assert await client.ready()


async def test_the_parameters_that_deny_partial_answers_are_harmless(live_prometheus: PrometheusSandbox) -> None:
    """Every test here sends partial_response=false and deny_partial_response=1 (denyPartialResponse is on by
    default); without them a server that is never partial answers the same."""
    at = now()
    answers = []
    for deny in (True, False):
        settings = PrometheusSettings(url=live_prometheus.url, deny_partial_response=deny)
        async with PrometheusClient(settings) as opened:
            answers.append(await opened.query('http_rps{namespace="shop"}', at))

    def values(result: InstantResult) -> list[tuple[str, str]]:
        return sorted((s.labels["pod"], s.value) for s in result.vector)

    assert values(answers[0]) and values(answers[0]) == values(answers[1])
    assert not answers[0].partial and not answers[0].warnings


class AnswerRecorder:
    """The client, with the pods of each answer kept as the server sent them (no filter asked for)."""

    def __init__(self, client: PrometheusClient) -> None:
        self.client = client
        self.answers: list[tuple[str, set[str]]] = []

    async def query(self, promql: str, at: float | None, **_options: object) -> InstantResult:
        result = await self.client.query(promql, at)
        self.answers.append((promql, {s.labels.get("pod", "") for s in result.vector}))
        return result


async def test_a_batch_reading_part_of_a_namespace_is_answered_only_its_pods(client: PrometheusClient) -> None:
    """A target reading two pods of a namespace the service knows 40 pods in names them, and the server
    sends those two only (``shop`` has four with ``http_rps``); reading three of four, it asks for the
    namespace and is sent all four."""
    metric = sc.pods_metric(sc.rps_query("http_rps"))
    for pods, known, named, sent in (
        (("web-1", "web-3"), 40, True, {"web-1", "web-3"}),
        (("web-1", "web-2", "web-3"), 4, False, {"web-1", "web-2", "web-3", "other-1"}),
    ):
        recorder = AnswerRecorder(client)
        web = replace(sc.web([metric], pods), namespace_pods=known)
        rows = await MetricsReader(recorder, client.settings).read([web], now())
        [(query, answered)] = recorder.answers
        assert ("pod=~" in query) is named and answered == sent, query
        reading = rows[0][0]
        assert isinstance(reading, PodsReading)
        assert {p: s.value for p, s in reading.pods.items()} == {
            pod: int(float(sc.POD_GAUGES["http_rps"][("shop", pod)]) * 1000) for pod in pods
        }
