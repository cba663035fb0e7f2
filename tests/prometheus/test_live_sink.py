"""Per-pod answers read into the reader's sink as they are decoded, against a real server (Prometheus and
VictoriaMetrics, as in test_live.py): the same readings as the decoded vector's, and counted as answers."""

from __future__ import annotations

import asyncio

import pytest

from autoscaler.core.observation import PodsReading, ResourceReading
from autoscaler.prometheus import InstantResult, MetricsReader, PrometheusClient
from autoscaler.prometheus.extract import LabelNames, PodReadings
from autoscaler.prometheus.results import SeriesFilter
from autoscaler.prometheus.slicing import SeriesSink
from autoscaler.service.backends.timed_reads import TimedQuerier
from autoscaler.service.telemetry.metrics import ServiceMetrics
from tests.prometheus import scenario as sc
from tests.prometheus.test_live import now
from tests.service.test_metrics import value as metric_value

pytestmark = pytest.mark.prometheus


class SinkRecorder:
    """The client, handing the reader's sink on (or not), and keeping how many series each answer sank."""

    def __init__(self, client: PrometheusClient, *, pass_sink: bool) -> None:
        self.client = client
        self.pass_sink = pass_sink
        self.sunk: list[int | None] = []

    async def query(
        self,
        promql: str,
        at: float | None,
        *,
        keep: SeriesFilter | None = None,
        sink: SeriesSink | None = None,
        **_: object,
    ) -> InstantResult:
        result = await self.client.query(promql, at, keep=keep, sink=sink if self.pass_sink else None)
        self.sunk.append(result.sunk)
        return result


async def test_per_pod_answers_are_read_as_they_are_decoded_and_equal_the_vector_path(
    client: PrometheusClient,
) -> None:
    """The reader reads a per-pod answer into readings while it is decoded (no vector in between): every
    per-pod answer went to its sink, and the readings are those read from the decoded vector."""
    metrics = [sc.cpu_metric(), sc.memory_metric(), sc.pods_metric(sc.rps_query("http_rps"))]
    targets = [sc.web(metrics), sc.api(metrics)]
    for _ in range(20):  # a server just started has no sample a few seconds back yet
        at = now() - 2.0
        sunk = SinkRecorder(client, pass_sink=True)
        read_sunk = await MetricsReader(sunk, client.settings).read(targets, at)
        if all(count for count in sunk.sunk):
            break
        await asyncio.sleep(0.5)
    assert len(sunk.sunk) == 3 and all(count is not None and count >= 4 for count in sunk.sunk), sunk.sunk
    decoded = SinkRecorder(client, pass_sink=False)
    read_decoded = await MetricsReader(decoded, client.settings).read(targets, at)
    assert decoded.sunk == [None, None, None]
    assert read_sunk == read_decoded
    assert all(isinstance(reading, ResourceReading | PodsReading) for row in read_sunk for reading in row)


async def test_an_answer_read_into_a_sink_counts_as_answered_not_empty(client: PrometheusClient) -> None:
    """The service's query counter says "ok" for an answer whose series went to the reader's sink (its vector
    is empty), and "empty" only for an answer without series."""
    metrics = ServiceMetrics()
    querier = TimedQuerier(client, metrics)
    wanted = [("shop", frozenset({"web-1", "web-2", "web-3"}))]
    for _ in range(20):  # a server just started has no sample yet
        sink = PodReadings(wanted, LabelNames(), 60.0, per_container=False)
        result = await querier.query('http_rps{namespace="shop"}', now(), sink=sink)
        if result.sunk:
            break
        await asyncio.sleep(0.5)
    assert result.sunk and not result.vector
    await querier.query('no_such_metric{namespace="shop"}', now(), sink=sink)
    assert metric_value(metrics, "autoscaler_prometheus_queries_total", outcome="ok") == 1.0
    assert metric_value(metrics, "autoscaler_prometheus_queries_total", outcome="empty") == 1.0
