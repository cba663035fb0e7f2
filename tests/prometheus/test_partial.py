"""Partial answers, without a server: both decoders see ``isPartial`` and ``warnings``, the texts that make an
answer partial are recognized, the reader fails every metric read from a partial answer (every target of a
batched query), other warnings are logged once per text, and the client asks for whole answers.

Against real servers: the live tests run with ``denyPartialResponse`` on (its parameters are harmless to
Prometheus and VictoriaMetrics); through a proxy that makes genuine answers partial: tests/chaos."""

from __future__ import annotations

import json
import logging
from typing import Any, cast

import orjson
import pytest
from aiohttp import web

from autoscaler.core.observation import ExternalReading, MetricFailure, PodsReading
from autoscaler.prometheus import (
    MetricsReader,
    PrometheusBadQuery,
    PrometheusClient,
    PrometheusPartialAnswer,
    PrometheusSettings,
    TargetQuery,
)
from autoscaler.prometheus.partial import other_warnings, partial_cause, says_partial
from autoscaler.prometheus.results import (
    InstantResult,
    Series,
    parse_instant,
    parse_range,
)
from tests.prometheus import scenario as sc
from tests.prometheus.fake_server import FakePrometheus, Request, constant, error_response, json_response
from tests.prometheus.stepping import decoded_in_slices

AT = 1000.0
# Thanos' own texts (pkg/store/proxy_merge.go), as its query API lists them in "warnings".
THANOS_RECEIVE = (
    'receive series from Addr: 10.0.0.7:10901 LabelSets: {replica="a"} MinTime: 0 MaxTime: 9: '
    "rpc error: code = Unavailable desc = connection refused"
)
THANOS_FETCH = 'fetch series for {store="b"} Addr: 10.0.0.8:10901: rpc error: code = DeadlineExceeded'
THANOS_SILENT = "failed to receive any data in 5s from Addr: 10.0.0.9:10901: context canceled"
PROMQL_INFO = 'PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "x"'


def answer(result: list[dict[str, Any]], **envelope: Any) -> dict[str, Any]:
    return {"status": "success", **envelope, "data": {"resultType": "vector", "result": result}}


ITEMS = [{"metric": {"pod": "a"}, "value": [1, "2"]}, {"metric": {"pod": "b"}, "value": [1, "3"]}]


@pytest.mark.parametrize(
    "envelope",
    [
        {"isPartial": True},  # VictoriaMetrics cluster: before "data"
        {"isPartial": False},
        {"warnings": [THANOS_RECEIVE]},
        {"warnings": [PROMQL_INFO], "isPartial": True},
    ],
)
def test_both_decoders_see_the_flags_wherever_they_stand(envelope: dict[str, Any]) -> None:
    before = answer(ITEMS, **envelope)
    after = {"status": "success", "data": before["data"], **envelope}  # Thanos puts "warnings" after "data"
    for document in (before, after):
        payload = json.dumps(document).encode()
        whole = parse_instant(orjson.loads(payload))
        assert decoded_in_slices(payload) == whole
        assert whole.partial is envelope.get("isPartial", False)
        assert whole.warnings == tuple(envelope.get("warnings", ()))
        assert len(whole.vector) == 2


def test_a_range_answer_carries_the_flags_too() -> None:
    document = {
        "status": "success",
        "isPartial": True,
        "warnings": ["w"],
        "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "2"]]}]},
    }
    result = parse_range(document)
    assert result.partial and result.warnings == ("w",)


@pytest.mark.parametrize("flag", ['"true"', "1", "null"])
def test_an_is_partial_that_is_not_a_boolean_is_malformed(flag: str) -> None:
    payload = ('{"status":"success","isPartial":' + flag + ',"data":{"resultType":"vector","result":[]}}').encode()
    for decode in (lambda: parse_instant(orjson.loads(payload)), lambda: decoded_in_slices(payload)):
        with pytest.raises(Exception, match="isPartial"):
            decode()


@pytest.mark.parametrize(
    ("warning", "partial"),
    [
        (THANOS_RECEIVE, True),
        (THANOS_FETCH, True),
        (THANOS_SILENT, True),
        ("No StoreAPIs available", True),
        ("partial response: store gateway 3 of 4 answered", True),
        ("Partial data returned", True),
        (PROMQL_INFO, False),
        ("PromQL warning: encountered a mix of histograms and floats", False),
        ("No StoreAPIs matched for this query", False),  # nothing to read, not missing stores (Thanos' docs)
    ],
)
def test_which_warnings_make_an_answer_partial(warning: str, partial: bool) -> None:
    assert says_partial(warning) is partial
    result = InstantResult("vector", warnings=(PROMQL_INFO, warning))
    assert (partial_cause(result) == warning) is partial
    assert other_warnings(result) == [PROMQL_INFO] + ([] if partial else [warning])


def test_is_partial_is_its_own_cause() -> None:
    cause = partial_cause(InstantResult("vector", partial=True))
    assert cause is not None and "isPartial" in cause and "vmstorage" in cause
    assert partial_cause(InstantResult("vector", warnings=(PROMQL_INFO,))) is None


# -- the reader ---------------------------------------------------------------------------------------------


class FakeClient:
    def __init__(self, result: InstantResult) -> None:
        self.result = result
        self.queries: list[str] = []

    async def query(self, promql: str, at: float | None, **_options: object) -> InstantResult:
        self.queries.append(promql)
        return self.result


def reader_for(result: InstantResult) -> tuple[MetricsReader, FakeClient]:
    client = FakeClient(result)
    settings = PrometheusSettings(url="http://thanos-query:9090")
    return MetricsReader(cast(PrometheusClient, client), settings), client


def target(namespace: str, name: str, pods: tuple[str, ...], metrics: list[object]) -> TargetQuery:
    return TargetQuery(namespace, name, sc.ref(name), f"app={name}", pods, tuple(metrics))  # type: ignore[arg-type]


def pods_vector(**flags: Any) -> InstantResult:
    items = (Series({"namespace": "a", "pod": "p"}, AT, "1"), Series({"namespace": "b", "pod": "q"}, AT, "2"))
    return InstantResult("vector", vector=items, **flags)


async def test_a_partial_batched_answer_fails_the_metric_of_every_target_it_serves() -> None:
    for flags, cause in (
        ({"warnings": (THANOS_RECEIVE,)}, "receive series from Addr: 10.0.0.7:10901"),
        ({"partial": True}, '"isPartial": true'),
    ):
        reader, client = reader_for(pods_vector(**flags))
        rows = await reader.read(
            [
                target("a", "x", ("p",), [sc.pods_metric(sc.rps_query("m"))]),
                target("b", "y", ("q",), [sc.pods_metric(sc.rps_query("m"))]),
            ],
            AT,
        )
        assert len(client.queries) == 1  # one batched query served both
        for row in rows:
            failure = row[0]
            assert isinstance(failure, MetricFailure), failure
            assert "partial answer from http://thanos-query:9090: " + cause in failure.message
            assert "cannot vote" in failure.message


async def test_a_partial_external_answer_fails_not_a_smaller_sum() -> None:
    shrunk = InstantResult("vector", vector=(Series({}, AT, "10"),), warnings=(THANOS_FETCH,))
    reader, _ = reader_for(shrunk)
    rows = await reader.read([target("a", "x", ("p",), [sc.external_metric("queue_depth")])], AT)
    failure = rows[0][0]
    assert isinstance(failure, MetricFailure) and "fetch series for" in failure.message


async def test_other_warnings_are_logged_once_per_text_with_the_targets(caplog: pytest.LogCaptureFixture) -> None:
    result = InstantResult("vector", vector=(Series({}, AT, "10"),), warnings=(PROMQL_INFO,))
    reader, _ = reader_for(result)
    caplog.set_level(logging.WARNING, logger="autoscaler.prometheus.reader")
    for _ in range(3):
        rows = await reader.read(
            [
                target("a", "x", ("p",), [sc.external_metric("queue_depth")]),
                target("b", "y", ("q",), [sc.external_metric("queue_depth")]),
            ],
            AT,
        )
        assert [type(row[0]) for row in rows] == [ExternalReading, ExternalReading]  # the value stands
    logged = [r.getMessage() for r in caplog.records if "answered with a warning" in r.getMessage()]
    assert len(logged) == 1, logged  # once per distinct text, with every target the answer served
    assert "PromQL info: metric might not be a counter" in logged[0] and "targets: a/x, b/y" in logged[0]


async def test_a_whole_answer_is_read_as_before() -> None:
    reader, _ = reader_for(pods_vector(partial=False))
    rows = await reader.read([target("a", "x", ("p",), [sc.pods_metric(sc.rps_query("m"))])], AT)
    reading = rows[0][0]
    assert isinstance(reading, PodsReading) and reading.pods["p"].value == 1000


# -- the client ---------------------------------------------------------------------------------------------


async def test_whole_answers_are_asked_for_unless_told_otherwise(fake: FakePrometheus) -> None:
    async with PrometheusClient(PrometheusSettings(url=fake.url)) as client:
        await client.query("up", AT)
    assert fake.requests[-1].form["partial_response"] == "false"
    assert fake.requests[-1].form["deny_partial_response"] == "1"
    settings = PrometheusSettings(url=fake.url, deny_partial_response=False)
    async with PrometheusClient(settings) as client:
        await client.query("up", AT)
    assert "partial_response" not in fake.requests[-1].form
    assert "deny_partial_response" not in fake.requests[-1].form
    own = PrometheusSettings(url=fake.url, query_parameters={"partial_response": "true"})
    async with PrometheusClient(own) as client:
        await client.query("up", AT)
    assert fake.requests[-1].form["partial_response"] == "true"  # the user's own word wins


async def test_a_thanos_refusal_naming_a_store_is_partial_not_an_invalid_query(fake: FakePrometheus) -> None:
    fake.handler = constant(lambda: error_response(422, "execution", f"expanding series: {THANOS_RECEIVE}"))
    async with PrometheusClient(PrometheusSettings(url=fake.url, retries=0)) as client:
        with pytest.raises(PrometheusPartialAnswer) as raised:
            await client.query("sum(queue_depth)", AT)
        assert "partial answer from " + fake.url in str(raised.value)
        assert "denyPartialResponse" in str(raised.value)
        reader = MetricsReader(client, client.settings)
        for _ in range(2):
            rows = await reader.read([target("a", "x", ("p",), [sc.external_metric("queue_depth")])], AT)
            failure = rows[0][0]
            assert isinstance(failure, MetricFailure) and "partial answer" in failure.message
            assert "slow backoff" not in failure.message
    assert len(fake.requests) == 3  # asked again the next time: not held back as an invalid query
    fake.handler = constant(lambda: error_response(422, "execution", "many-to-many matching not allowed"))
    async with PrometheusClient(PrometheusSettings(url=fake.url, retries=0)) as client:
        with pytest.raises(PrometheusBadQuery):
            await client.query("a * on (x) b", AT)


async def test_a_partial_range_answer_is_an_error(fake: FakePrometheus) -> None:
    document = {
        "status": "success",
        "warnings": [THANOS_SILENT],
        "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "2"]]}]},
    }
    fake.handler = constant(lambda: json_response(document))
    async with PrometheusClient(PrometheusSettings(url=fake.url)) as client:
        with pytest.raises(PrometheusPartialAnswer, match="failed to receive any data"):
            await client.query_range("up", 0, 10, 1)


async def test_ready_without_a_ready_endpoint_under_the_prefix_asks_a_trivial_query(fake: FakePrometheus) -> None:
    """A path prefix that serves only the query API (an old vmselect's /select/0/prometheus) answers 404."""

    async def no_ready_endpoint(request: Request) -> web.StreamResponse:
        if request.path.endswith("/-/ready"):
            return web.Response(status=404, text="404 page not found")
        return json_response({"status": "success", "data": {"resultType": "scalar", "result": [1, "1"]}})

    fake.handler = no_ready_endpoint
    async with PrometheusClient(PrometheusSettings(url=fake.url + "/select/0/prometheus")) as client:
        assert await client.ready()
    assert [r.path for r in fake.requests] == ["/select/0/prometheus/-/ready", "/select/0/prometheus/api/v1/query"]
    assert fake.requests[-1].form["query"] == "1" and fake.requests[-1].form["partial_response"] == "false"
    fake.handler = constant(lambda: web.Response(status=404, text="404 page not found"))
    async with PrometheusClient(PrometheusSettings(url=fake.url)) as client:
        assert not await client.ready()
