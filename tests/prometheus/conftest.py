"""Fixtures for the Prometheus layer, and the guard that real-server tests never skip in CI.

Tests marked ``@pytest.mark.prometheus`` need the real ``prometheus``/``promtool`` binaries, and the live
ones (``live_prometheus``) also ``victoria-metrics``: they prove the API contract against both backends.
Without them they skip locally, but with ``AUTOSCALER_REQUIRE_SERVERS=1`` (set by ``.ci/run``) they fail,
and the session fails if any of them was skipped anyway or deselected (``-m``/``-k``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from autoscaler.prometheus import PrometheusClient, PrometheusSettings
from autoscaler_sandbox import MetricsExporter, PrometheusSandbox, ScrapeTarget
from tests.guard import Guard, missing_binaries
from tests.prometheus import scenario
from tests.prometheus.fake_server import FakePrometheus
from tests.victoriametrics import BINARY, PACKAGE, VictoriaMetricsSandbox

_guard = Guard(
    {
        "prometheus": missing_binaries("prometheus", "promtool"),
        "victoriametrics": missing_binaries(BINARY, package=PACKAGE),
    },
    str(Path(__file__).parent),
)
# The backends the live tests run against, each with the sandbox that runs it.
BACKENDS = {"prometheus": PrometheusSandbox, "victoriametrics": VictoriaMetricsSandbox}

pytest_runtest_setup, pytest_runtest_logreport, pytest_deselected, pytest_sessionfinish = _guard.hooks()


@pytest.fixture(scope="session")
def exporter() -> Iterator[MetricsExporter]:
    with MetricsExporter() as served:
        scenario.populate(served)
        yield served


@pytest.fixture(scope="session", params=list(BACKENDS))
def live_prometheus(request: pytest.FixtureRequest, exporter: MetricsExporter) -> Iterator[PrometheusSandbox]:
    """One server for the session per backend (Prometheus, VictoriaMetrics), scraping the exporter every
    second; ``.kind`` says which."""
    _guard.require(request.param)
    sandbox = BACKENDS[request.param](scrape_targets=[ScrapeTarget(exporter.address)], scrape_interval=1.0)
    with sandbox as prom:
        # The first scrape lands ~6 s after start; rates need a few more samples in their window.
        prom.wait_for("http_rps", timeout=30)
        prom.wait_for(
            f'count_over_time(container_cpu_usage_seconds_total{{pod="web-1",container="app"}}[{scenario.CPU_WINDOW}])',
            lambda r: bool(r) and float(r[0]["value"][1]) >= 5,
            timeout=30,
        )
        yield prom


@pytest.fixture
async def client(live_prometheus: PrometheusSandbox) -> AsyncIterator[PrometheusClient]:
    """A client of the live server (a module may define its own ``client``, as test_backfill does)."""
    settings = PrometheusSettings(url=live_prometheus.url, cpu_rate_window=5.0)
    async with PrometheusClient(settings) as opened:
        yield opened


@pytest.fixture(scope="session")
def backfilled_prometheus() -> Iterator[PrometheusSandbox]:
    """A Prometheus holding fixed data at fixed times (promtool backfill), nothing scraped."""
    _guard.require("prometheus")
    prom = PrometheusSandbox()
    try:
        prom.backfill(scenario.backfill_openmetrics())
        prom.start()
        yield prom
    finally:
        prom.close()


@pytest.fixture
def make_prometheus() -> Iterator[Callable[[], PrometheusSandbox]]:
    """Private, empty Prometheus servers a test may stop, pause or restart."""
    _guard.require("prometheus")
    started: list[PrometheusSandbox] = []

    def make() -> PrometheusSandbox:
        prom = PrometheusSandbox().start()
        started.append(prom)
        return prom

    yield make
    for prom in started:
        prom.close()


@pytest.fixture
async def fake() -> AsyncIterator[FakePrometheus]:
    """A scriptable fake Prometheus (tests.prometheus.fake_server) on loopback, for one test."""
    server = await FakePrometheus().start()
    yield server
    await server.close()
