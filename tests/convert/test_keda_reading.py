"""A converted prometheus trigger, read by this project's reader against a real Prometheus, reads what KEDA's
prometheus scaler read: the query's value, and with ``ignoreNullValues`` (KEDA's default) an empty answer as 0;
with ``ignoreNullValues: "false"`` an empty answer fails the metric, as it failed the trigger in KEDA."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from autoscaler.core.observation import ExternalReading, MetricFailure
from autoscaler.core.spec import CrossVersionObjectReference
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.prometheus import MetricsReader, PrometheusClient, PrometheusSettings
from autoscaler.prometheus.queries import TargetQuery
from autoscaler_sandbox import PrometheusSandbox
from tests.convert.keda_helpers import queue_worker, run
from tests.convert.series_data import T_END

pytestmark = pytest.mark.prometheus


@pytest.fixture
async def client(series_prometheus: PrometheusSandbox) -> AsyncIterator[PrometheusClient]:
    async with PrometheusClient(PrometheusSettings(url=series_prometheus.url)) as opened:
        yield opened


async def read(client: PrometheusClient, query: str, ignore_null_values: str | None) -> Any:
    document = queue_worker()
    metadata = document["spec"]["triggers"][0]["metadata"]
    metadata["query"] = query
    if ignore_null_values is not None:
        metadata["ignoreNullValues"] = ignore_null_values
    conversion, _ = run(document)
    assert conversion.target is not None, conversion.errors
    spec = parse_target_spec(conversion.target["spec"], "spec", require_queries=True)
    reader = MetricsReader(client, client.settings)  # the backend's own client, as the service routes it
    ref = CrossVersionObjectReference(kind="Deployment", name="worker", api_version="apps/v1")
    rows = await reader.read([TargetQuery("jobs", "worker", ref, "app=worker", (), spec.metrics)], T_END)
    return rows[0][0]


async def test_a_value_an_empty_answer_and_ignore_null_values(client: PrometheusClient) -> None:
    value = await read(client, 'sum(queue_messages_ready{namespace="shop",queue="jobs"})', None)
    assert isinstance(value, ExternalReading) and sum(value.values) == 42_000
    empty = 'sum(queue_messages_ready{queue="no-such-queue"})'
    as_keda_default = await read(client, empty, None)
    assert isinstance(as_keda_default, ExternalReading) and sum(as_keda_default.values) == 0
    refused = await read(client, empty, "false")
    assert isinstance(refused, MetricFailure), refused
