"""The HTTP server on a real loopback port, exercised with an aiohttp client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from autoscaler.service.http import CheckResult, HttpServer, ProbeTiming, ReadinessCheck, StatusMap
from autoscaler.service.settings import HttpSettings
from autoscaler.service.telemetry.metrics import ServiceMetrics
from tests.loop_turns import LoopTurns
from tests.service.cluster import eventually

LOOPBACK = HttpSettings(address="127.0.0.1", port=0)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Running:
    def __init__(self, server: HttpServer, session: aiohttp.ClientSession) -> None:
        self.server = server
        self.session = session

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.port}{path}"

    async def get(self, path: str, **options: Any) -> tuple[int, Any, aiohttp.ClientResponse]:
        async with self.session.get(self.url(path), **options) as response:
            is_json = response.content_type == "application/json"
            body = await (response.json() if is_json else response.text())
            return response.status, body, response


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as client:
        yield client


async def serve(
    session: aiohttp.ClientSession,
    *,
    readiness: Sequence[ReadinessCheck] = (),
    targets: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    metrics: ServiceMetrics | None = None,
    **options: Any,
) -> Running:
    documents = targets or {}
    server = HttpServer(
        LOOPBACK,
        metrics or ServiceMetrics(process_metrics=False),
        readiness=readiness,
        targets=StatusMap(documents),
        **options,
    )
    await server.start()
    return Running(server, session)


async def test_healthz_follows_the_heartbeat(session: aiohttp.ClientSession) -> None:
    clock = Clock()
    running = await serve(session, timing=ProbeTiming(heartbeat_interval=60, liveness_timeout=10, clock=clock))
    try:
        status, body, _ = await running.get("/healthz")
        assert (status, body["alive"]) == (200, True)
        clock.now += 11  # the heartbeat has not run for 11 s: the loop is starved
        status, body, _ = await running.get("/healthz")
        assert (status, body) == (503, {"alive": False, "heartbeat_age_seconds": 11.0})
    finally:
        await running.server.stop()


async def test_readyz_lists_every_check_and_fails_if_any_does(session: aiohttp.ClientSession) -> None:
    state = {"synced": False}

    async def prometheus() -> CheckResult:
        await asyncio.sleep(0)
        return True, "last query 2s ago"

    checks = [
        ReadinessCheck("caches", lambda: (state["synced"], "synced" if state["synced"] else "pods not synced")),
        ReadinessCheck("leader", lambda: (True, "standby; leader is autoscaler-0")),
        ReadinessCheck("prometheus", prometheus),
    ]
    running = await serve(session, readiness=checks)
    try:
        status, body, _ = await running.get("/readyz")
        assert status == 503
        assert body == {
            "ready": False,
            "checks": [
                {"name": "caches", "ok": False, "detail": "pods not synced"},
                {"name": "leader", "ok": True, "detail": "standby; leader is autoscaler-0"},
                {"name": "prometheus", "ok": True, "detail": "last query 2s ago"},
            ],
        }
        state["synced"] = True
        status, body, _ = await running.get("/readyz")
        assert (status, body["ready"]) == (200, True)
    finally:
        await running.server.stop()


async def test_a_hung_or_broken_check_fails_without_hanging_the_probe(session: aiohttp.ClientSession) -> None:
    async def hangs() -> CheckResult:
        await asyncio.sleep(3600)
        return True, "never"

    stubborn_finished: list[float] = []

    async def ignores_cancellation() -> CheckResult:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await asyncio.sleep(0.3)  # misbehaves: keeps going for a while after being cancelled
        stubborn_finished.append(time.monotonic())
        return True, "late"

    def raises() -> CheckResult:
        raise ConnectionError("GET http://prometheus:9090 failed, Authorization: Bearer abcdefghijklmnop")

    checks = [
        ReadinessCheck("hangs", hangs, timeout=0.1),
        ReadinessCheck("stubborn", ignores_cancellation, timeout=0.1),
        ReadinessCheck("raises", raises),
    ]
    running = await serve(session, readiness=checks)
    try:
        started = time.monotonic()
        status, body, _ = await running.get("/readyz")
        # Answered at the checks' timeouts: neither the hung check nor the stubborn one's 0.3 s after its
        # cancellation held the answer (timed by the stubborn check itself, not by the machine's speed).
        assert not stubborn_finished, f"the probe waited for the stubborn check ({time.monotonic() - started:.2f}s)"
        assert status == 503
        details = {check["name"]: (check["ok"], check["detail"]) for check in body["checks"]}
        assert details["hangs"] == (False, "timed out after 0.1s")
        assert details["stubborn"] == (False, "timed out after 0.1s")
        assert details["raises"] == (
            False,
            "ConnectionError: GET http://prometheus:9090 failed, Authorization: Bearer [REDACTED]",
        )
        status, _, _ = await running.get("/healthz")  # the server is still answering
        assert status == 200
        await eventually(lambda: bool(stubborn_finished))  # the stubborn check finishes before the loop closes
    finally:
        await running.server.stop()


async def test_no_checks_means_ready(session: aiohttp.ClientSession) -> None:
    running = await serve(session)
    try:
        assert (await running.get("/readyz"))[:2] == (200, {"ready": True, "checks": []})
    finally:
        await running.server.stop()


async def test_metrics_in_both_exposition_formats(session: aiohttp.ClientSession) -> None:
    metrics = ServiceMetrics(process_metrics=False)
    metrics.set_leader(True)
    metrics.count_scale_event("shop", "web", "up")
    running = await serve(session, metrics=metrics)
    try:
        status, text, response = await running.get("/metrics")
        assert status == 200 and response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert response.headers.get("Content-Encoding") == "gzip"  # aiohttp's client asks for it
        families = {family.name: family for family in text_string_to_metric_families(text)}
        assert families["autoscaler_leader"].samples[0].value == 1.0
        assert families["autoscaler_target_scale_events"].samples[0].labels == {
            "namespace": "shop",
            "name": "web",
            "direction": "up",
        }
        assert "_created" not in text

        status, text, response = await running.get(
            "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0", "Accept-Encoding": ""}
        )
        assert status == 200 and response.headers["Content-Type"].startswith("application/openmetrics-text")
        assert "Content-Encoding" not in response.headers
        assert text.endswith("# EOF\n")
    finally:
        await running.server.stop()


async def test_target_status_documents(session: aiohttp.ClientSession) -> None:
    documents: dict[tuple[str, str], dict[str, Any]] = {
        ("shop", "web"): {"currentReplicas": 3, "lastScaleTime": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)},
        ("shop", "api"): {"currentReplicas": 1},
        ("blog", "web"): {"currentReplicas": 2},
    }
    running = await serve(session, targets=documents)
    try:
        status, body, _ = await running.get("/api/targets")
        assert status == 200
        assert [(item["namespace"], item["name"]) for item in body["items"]] == [
            ("blog", "web"),
            ("shop", "api"),
            ("shop", "web"),
        ]
        assert body["items"][2]["status"]["lastScaleTime"] == "2026-01-02 03:04:05+00:00"
        status, body, _ = await running.get("/api/targets", params={"namespace": "shop"})
        assert [item["name"] for item in body["items"]] == ["api", "web"]
        status, body, _ = await running.get("/api/targets/shop/api")
        assert (status, body) == (200, {"namespace": "shop", "name": "api", "status": {"currentReplicas": 1}})
        status, body, _ = await running.get("/api/targets/shop/missing")
        assert (status, body) == (404, {"error": "no target shop/missing"})
    finally:
        await running.server.stop()


class CountingStatuses(StatusMap):
    """Statuses that count how many were asked for (each one a decompression and a parse in the service)."""

    def __init__(self, documents: Mapping[tuple[str, str], Mapping[str, Any]]) -> None:
        super().__init__(documents)
        self.asked = 0

    def status_of(self, key: tuple[str, str]) -> Mapping[str, Any] | None:
        self.asked += 1
        return super().status_of(key)


async def test_a_target_or_a_namespace_is_read_alone_and_the_whole_list_in_turns(
    session: aiohttp.ClientSession,
) -> None:
    """One target's GET reads that target's status only and a namespace's GET that namespace's (each
    read parsed every target's before); the whole list gives the loop turns while it is made."""
    statuses = CountingStatuses({(f"ns-{i % 10}", f"t-{i:04d}"): {"currentReplicas": i} for i in range(1000)})
    running = await serve(session)
    running.server.targets = statuses
    try:
        status, body, _ = await running.get("/api/targets/ns-3/t-0013")
        assert (status, body["status"], statuses.asked) == (200, {"currentReplicas": 13}, 1)
        statuses.asked = 0
        async with LoopTurns() as one_step:  # 100 items: made in one go, the turns are the request's I/O
            status, body, _ = await running.get("/api/targets", params={"namespace": "ns-3"})
        assert len(body["items"]) == 100 and statuses.asked == 100
        async with LoopTurns() as turns:
            status, body, _ = await running.get("/api/targets")
        items = [(item["namespace"], item["name"], item["status"]["currentReplicas"]) for item in body["items"]]
        assert items == sorted((ns, name, doc["currentReplicas"]) for (ns, name), doc in statuses.documents.items())
        assert turns.count >= one_step.count + 9  # a turn after each hundred items
    finally:
        await running.server.stop()


async def test_start_binds_a_free_port_and_stop_releases_it(session: aiohttp.ClientSession) -> None:
    server = HttpServer(LOOPBACK, ServiceMetrics(process_metrics=False))
    with pytest.raises(RuntimeError):
        _ = server.port
    await server.start()
    port = server.port
    assert port > 0
    with pytest.raises(RuntimeError):
        await server.start()
    await server.stop()
    await server.stop()  # idempotent
    with pytest.raises(aiohttp.ClientConnectionError):
        async with session.get(f"http://127.0.0.1:{port}/healthz"):
            pass
