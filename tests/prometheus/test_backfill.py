"""Exact values at fixed times, from data loaded with promtool (no scrape timing involved).

Prometheus only: promtool writes Prometheus' own TSDB blocks, and the exact values pinned here are Prometheus'
arithmetic (extrapolated ``rate()``, the 5-minute lookback); VictoriaMetrics imports history over HTTP and
computes both differently by design. The API contract both serve is tested in test_live.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from autoscaler.core.observation import MetricFailure, PodsReading, ResourceReading
from autoscaler.prometheus import (
    MetricsReader,
    PrometheusClient,
    PrometheusSettings,
    PrometheusTimeout,
    PrometheusUnreachable,
)
from autoscaler_sandbox import PrometheusSandbox
from tests.prometheus import scenario as sc

pytestmark = pytest.mark.prometheus


@pytest.fixture
async def client(backfilled_prometheus: PrometheusSandbox) -> AsyncIterator[PrometheusClient]:
    settings = PrometheusSettings(url=backfilled_prometheus.url, cpu_rate_window=60.0)
    async with PrometheusClient(settings) as opened:
        yield opened


async def test_cpu_rates_are_exact_with_window_and_timestamp(client: PrometheusClient) -> None:
    reader = MetricsReader(client, client.settings)
    rows = await reader.read([sc.web([sc.cpu_metric()], pods=("web-1", "web-2"))], sc.T0)
    reading = rows[0][0]
    assert isinstance(reading, ResourceReading)
    assert reading.pods["web-1"].containers == {"app": 250, "sidecar": 125}
    assert reading.pods["web-2"].containers == {"app": 500}
    assert reading.pods["web-1"].timestamp == sc.T0
    assert reading.pods["web-1"].window == 60.0


async def test_evaluation_time_is_explicit(client: PrometheusClient) -> None:
    # Long after the data ends there is nothing: the query really ran at the time asked for.
    reader = MetricsReader(client, client.settings)
    rows = await reader.read([sc.web([sc.pods_metric(sc.rps_query("http_rps"))])], sc.T0 + 3600)
    assert isinstance(rows[0][0], MetricFailure)
    rows = await reader.read([sc.web([sc.pods_metric(sc.rps_query("http_rps"))])], sc.T0 - 30)
    reading = rows[0][0]
    assert isinstance(reading, PodsReading)
    assert {p: s.value for p, s in reading.pods.items()} == {"web-1": 300, "web-2": 1500}
    assert reading.pods["web-1"].timestamp == sc.T0 - 30


async def test_series_older_than_the_lookback_are_stale(client: PrometheusClient) -> None:
    reader = MetricsReader(client, client.settings)
    rows = await reader.read([sc.web([sc.pods_metric(sc.rps_query("old_rps"))])], sc.T0)
    reading = rows[0][0]
    assert isinstance(reading, PodsReading) and set(reading.pods) == {"web-2"}


async def test_query_range_returns_every_step(client: PrometheusClient) -> None:
    result = await client.query_range('http_rps{pod="web-1"}', sc.T0 - 120, sc.T0, 60)
    assert [(t, v) for t, v in result.series[0].points] == [(sc.T0 - 120, "0.3"), (sc.T0 - 60, "0.3"), (sc.T0, "0.3")]


async def test_stopped_prometheus_is_unreachable_then_recovers(
    make_prometheus: Callable[[], PrometheusSandbox],
) -> None:
    prom = make_prometheus()
    async with PrometheusClient(PrometheusSettings(url=prom.url, retries=1)) as client:
        assert (await client.query("vector(1)", sc.T0)).vector[0].value == "1"
        await prom.astop()
        with pytest.raises(PrometheusUnreachable) as raised:
            await client.query("vector(1)", sc.T0)
        assert prom.url in str(raised.value) and "unreachable" in str(raised.value)
        assert client.stats.retries == 1
        assert not await client.ready()
        rows = await MetricsReader(client, client.settings).read(
            [sc.web([sc.cpu_metric(), sc.external_metric("vector(1)")])], sc.T0
        )
        assert all(isinstance(r, MetricFailure) and "unreachable" in r.message for r in rows[0])
        await prom.astart()  # same port: the shared session reconnects by itself
        assert (await client.query("vector(2)", sc.T0)).vector[0].value == "2"
        assert await client.ready()


async def test_paused_prometheus_times_out_within_the_deadline(
    make_prometheus: Callable[[], PrometheusSandbox],
) -> None:
    import time

    prom = make_prometheus()
    async with PrometheusClient(PrometheusSettings(url=prom.url, timeout_seconds=0.5)) as client:
        with prom.paused():
            started = time.monotonic()
            rows = await MetricsReader(client, client.settings).read(
                [sc.web([sc.cpu_metric(), sc.pods_metric(sc.rps_query("x"))])], sc.T0
            )
            elapsed = time.monotonic() - started
            # the query's deadline passed: waiting for the answer, or (on a loaded machine) for a slot first
            assert all(
                isinstance(r, MetricFailure)
                and ("did not answer within 0.5s" in r.message or "before the query's deadline" in r.message)
                for r in rows[0]
            ), [getattr(r, "message", r) for r in rows[0]]
            # bounded by the 0.5 s deadline, not by TCP (which would wait minutes); the slack is for a
            # loaded machine running four test workers on two cores
            assert elapsed < 3.0
            with pytest.raises(PrometheusTimeout):
                await client.query("vector(1)", sc.T0)
        assert (await client.query("vector(1)", sc.T0)).vector[0].value == "1"
