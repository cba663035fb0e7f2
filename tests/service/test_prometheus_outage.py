"""An unreachable Prometheus is said once per outage at warning, and at info when it answers again: through
the service's own query path (PrometheusClient → TimedQuerier → CountingQuerier), against a port where
nothing listens and then a server that answers there."""

from __future__ import annotations

import socket
from typing import Any

from aiohttp import web
from structlog.testing import capture_logs

from autoscaler.prometheus.client import PrometheusClient
from autoscaler.prometheus.errors import PrometheusError, PrometheusHTTPError, PrometheusUnreachable
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.service.backends.outage import OutageLog
from autoscaler.service.backends.router import CountingQuerier
from autoscaler.service.backends.timed_reads import TimedQuerier
from autoscaler.service.telemetry.metrics import ServiceMetrics


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _answer(request: web.Request) -> web.Response:
    return web.json_response({"status": "success", "data": {"resultType": "vector", "result": []}})


async def _start_prometheus(port: int) -> web.AppRunner:
    app = web.Application()
    app.router.add_route("*", "/api/v1/query", _answer)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


async def _ask(querier: CountingQuerier) -> bool:
    try:
        await querier.query("vector(1)", None)
    except PrometheusError:
        return False
    return True


def _said(logs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["log_level"], e["event"]) for e in logs if e.get("name") == "default"]


async def test_warned_once_per_outage_and_told_when_it_answers_again() -> None:
    port = _free_port()
    settings = PrometheusSettings(url=f"http://127.0.0.1:{port}", timeout_seconds=10.0, retries=0)
    down = ("warning", "Prometheus cannot be reached: its metrics fail until it answers (said once until then)")
    up = ("info", "Prometheus answers again")
    async with PrometheusClient(settings) as client:
        querier = CountingQuerier(
            TimedQuerier(client, ServiceMetrics(process_metrics=False)), OutageLog("default", settings.display_url)
        )
        with capture_logs() as logs:
            assert not await _ask(querier)
            assert not await _ask(querier)
            assert not await _ask(querier)
            assert _said(logs) == [down]
            warning = next(e for e in logs if e["log_level"] == "warning")
            assert warning["backend"] == settings.display_url and warning["error"]
            runner = await _start_prometheus(port)
            try:
                assert await _ask(querier)
                assert await _ask(querier)
            finally:
                await runner.cleanup()
            assert _said(logs) == [down, up]
            recovered = logs[-1]
            assert recovered["failed_queries"] == 3 and recovered["down_seconds"] >= 0
            assert not await _ask(querier)  # a new outage: said again
            assert _said(logs) == [down, up, down]


def test_an_error_answer_ends_an_outage_and_starts_none() -> None:
    outage = OutageLog("default", "http://prometheus:9090", clock=iter([0.0, 2.5]).__next__)
    with capture_logs() as logs:
        outage.failed(PrometheusHTTPError("503 from http://prometheus:9090", status=503))
        assert not outage.down and logs == []
        outage.failed(PrometheusUnreachable("connection refused"))
        assert outage.down
        outage.failed(PrometheusHTTPError("503 from http://prometheus:9090", status=503))
        assert not outage.down
    assert [(e["log_level"], e.get("down_seconds")) for e in logs] == [("warning", None), ("info", 2.5)]
