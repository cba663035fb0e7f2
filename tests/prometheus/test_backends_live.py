"""Named Prometheus backends against a real Prometheus behind small auth-checking proxies (issue 36, item 5).

Each proxy answers only a request that carries its backend's credential (a bearer token read from a file,
basic auth with the password from a file, a tenant header, a query parameter, a client certificate over TLS)
and forwards it to the real server. One read of the service's router (service/backends/router.py) sends every metric
to the backend it names; a wrong credential fails that backend's metrics with a clear per-backend error, and
the others read on.
"""

from __future__ import annotations

import base64
import shutil
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from autoscaler.core.observation import ExternalReading, MetricFailure, MetricReading
from autoscaler.core.spec import (
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
)
from autoscaler.loop.clock import SkewMonitor
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.service.backends.router import BackendRouter, open_backends
from autoscaler.service.settings import parse_service_settings
from autoscaler.service.telemetry.metrics import ServiceMetrics
from autoscaler.values.quantity import Quantity
from autoscaler_sandbox import PrometheusSandbox
from tests.guard import REQUIRE_SERVERS
from tests.prometheus.conftest import _guard
from tests.prometheus.fake_server import FakePrometheus, Request
from tests.prometheus.test_client_credentials import make_pki

pytestmark = pytest.mark.prometheus

TOKEN = "tok-3f9a1c"
USER, PASSWORD = "autoscaler", "pw-71be0d"
TENANT = "tenant-b"

Check = Callable[[Request], str | None]  # None: let it through; else why not (the 401's text)


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusSandbox]:
    """One private, empty Prometheus for the module (the metrics are constant expressions)."""
    _guard.require("prometheus")
    with PrometheusSandbox() as prom:
        yield prom


def _proxy_handler(upstream: str, session: aiohttp.ClientSession, check: Check) -> Callable[[Request], Awaitable[Any]]:
    async def handle(request: Request) -> web.StreamResponse:
        problem = check(request)
        if problem is not None:
            return web.Response(status=401, text=f"Unauthorized: {problem}")
        method = "POST" if request.path.startswith("/api/") else "GET"
        async with session.request(method, upstream + request.path, data=request.form or None) as answer:
            body = await answer.read()
            return web.Response(body=body, status=answer.status, content_type=answer.content_type)

    return handle


def _header(name: str, value: str) -> Check:
    return lambda request: None if request.headers.get(name) == value else f"{name} is not {value!r}"


def _parameter(name: str, value: str) -> Check:
    return lambda request: (
        None if request.path != "/api/v1/query" or request.form.get(name) == value else f"{name} missing"
    )


def _anyone(request: Request) -> str | None:
    return None


async def _proxy(
    stack: AsyncExitStack,
    upstream: str,
    session: aiohttp.ClientSession,
    check: Check,
    ssl_context: ssl.SSLContext | None = None,
) -> str:
    server = await FakePrometheus().start(ssl_context=ssl_context)
    stack.push_async_callback(server.close)
    server.handler = _proxy_handler(upstream, session, check)
    return server.url


def _server_tls(pki: Path, *, client_certificate: bool) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    if client_certificate:
        context.load_verify_locations(pki / "ca.crt")
        context.verify_mode = ssl.CERT_REQUIRED
    return context


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        if REQUIRE_SERVERS:
            pytest.fail("openssl is not installed and AUTOSCALER_REQUIRE_SERVERS=1 forbids skipping the TLS tests")
        pytest.skip("openssl is not installed")
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
async def proxies(prometheus: PrometheusSandbox, pki: Path, tmp_path: Path) -> AsyncIterator[dict[str, dict[str, Any]]]:
    """Each backend's settings, its proxy in front of the real Prometheus checking the credential it needs."""
    (tmp_path / "token").write_text(TOKEN + "\n")
    (tmp_path / "password").write_text(PASSWORD + "\n")
    (tmp_path / "wrong-token").write_text("not-the-token\n")
    basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    async with AsyncExitStack() as stack:
        session = await stack.enter_async_context(aiohttp.ClientSession())
        up = prometheus.url
        bearer = await _proxy(stack, up, session, _header("Authorization", f"Bearer {TOKEN}"))
        ca = str(pki / "ca.crt")
        yield {
            "bearer": {"url": bearer, "bearerTokenFile": str(tmp_path / "token")},
            "basic": {
                "url": await _proxy(stack, up, session, _header("Authorization", basic)),
                "basicAuth": {"username": USER, "passwordFile": str(tmp_path / "password")},
            },
            "tenant": {
                "url": await _proxy(stack, up, session, _header("X-Scope-OrgID", TENANT)),
                "headers": {"X-Scope-OrgID": TENANT},
            },
            "params": {
                "url": await _proxy(stack, up, session, _parameter("tenant", TENANT)),
                "queryParameters": {"tenant": TENANT},
            },
            "tls-ca": {
                "url": await _proxy(stack, up, session, _anyone, _server_tls(pki, client_certificate=False)),
                "tls": {"caFile": ca},
            },
            "mtls": {
                "url": await _proxy(stack, up, session, _anyone, _server_tls(pki, client_certificate=True)),
                "tls": {"caFile": ca, "certFile": str(pki / "client.crt"), "keyFile": str(pki / "client.key")},
            },
            "skip-verify": {
                "url": await _proxy(stack, up, session, _anyone, _server_tls(pki, client_certificate=False)),
                "tls": {"insecureSkipVerify": True},
            },
            # Its tenant header's value is its name: a secret everywhere but in "backend wrong:".
            "wrong": {
                "url": bearer,
                "bearerTokenFile": str(tmp_path / "wrong-token"),
                "retries": 0,
                "headers": {"X-Scope-OrgID": "wrong"},
            },
        }


def _metric(name: str, backend: str | None, value: int) -> MetricSpec:
    return MetricSpec(
        MetricSourceType.EXTERNAL,
        name,
        MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("1")),
        query=f"vector({value})",
        backend=backend,
    )


def _target(name: str, metrics: list[MetricSpec]) -> TargetQuery:
    return TargetQuery("default", name, CrossVersionObjectReference("Deployment", name, "apps/v1"), "", (), metrics)


async def _router(prometheus: PrometheusSandbox, backends: dict[str, Any], stack: AsyncExitStack) -> BackendRouter:
    settings = parse_service_settings({"prometheus": {"url": prometheus.url, "retries": 0, "backends": backends}})
    secrets = KnownSecrets()
    opened = await open_backends(
        settings, ServiceMetrics(), lambda: 0.0, SkewMonitor("prometheus", 10.0), secrets, stack
    )
    return BackendRouter(opened)


def _values(row: list[MetricReading]) -> list[object]:
    """Each External reading's value (the sum of its series), or the failure's message."""
    return [
        sum(reading.values) / 1000 if isinstance(reading, ExternalReading) else getattr(reading, "message", reading)
        for reading in row
    ]


async def test_each_auth_mode_reads_through_its_backend(
    prometheus: PrometheusSandbox, proxies: dict[str, dict[str, Any]]
) -> None:
    names = [name for name in proxies if name != "wrong"]
    async with AsyncExitStack() as stack:
        router = await _router(prometheus, {name: proxies[name] for name in names}, stack)
        # One target reads a metric from every backend (the default one too), another from two of them.
        every = _target(
            "every", [_metric("m-default", None, 1)] + [_metric(f"m-{n}", n, i + 2) for i, n in enumerate(names)]
        )
        two = _target("two", [_metric("a", "tenant", 40), _metric("b", "default", 41)])
        handed: dict[int, list[MetricReading]] = {}
        rows = await router.read([every, two], None, on_ready=lambda i, row: handed.setdefault(i, row))
    assert _values(rows[0]) == [float(value) for value in range(1, len(names) + 2)]
    assert _values(rows[1]) == [40.0, 41.0]
    assert handed == {0: rows[0], 1: rows[1]}  # each target handed over once all its backends had read


async def test_a_wrong_credential_fails_only_its_backends_metrics(
    prometheus: PrometheusSandbox, proxies: dict[str, dict[str, Any]]
) -> None:
    async with AsyncExitStack() as stack:
        router = await _router(prometheus, {"bearer": proxies["bearer"], "wrong": proxies["wrong"]}, stack)
        rows = await router.read(
            [
                _target(
                    "mixed", [_metric("good", "bearer", 5), _metric("bad", "wrong", 6), _metric("lost", "nowhere", 7)]
                ),
                _target("default-only", [_metric("plain", None, 8)]),
            ],
            None,
        )
        failed = rows[0][1]
        assert isinstance(failed, MetricFailure) and failed.message.startswith('backend wrong: External metric "bad": ')
        assert "401" in failed.message and "not-the-token" not in failed.message
        # What every sink does to it: the tenant header's value is redacted, but not as the backend's name.
        secrets = router.backends["wrong"].client.secrets
        assert secrets.redact(failed.message).startswith("backend wrong: ") and secrets.redact("wrongful") == "wrongful"
        assert secrets.redact(TOKEN) == "<redacted>"
        unknown = rows[0][2]
        assert isinstance(unknown, MetricFailure)
        assert unknown.message == (
            'External metric "lost": backend nowhere is not configured: the service\'s settings have default, '
            "bearer, wrong (prometheus.backends)"
        )
        assert _values([rows[0][0]]) == [5.0] and _values(rows[1]) == [8.0]
        counts = {name: backend.counted.counts for name, backend in router.backends.items()}
        assert counts == {
            "default": {"answered": 1, "error": 0},
            "bearer": {"answered": 1, "error": 0},
            "wrong": {"answered": 0, "error": 1},
        }
        ok, detail = await router.backends["wrong"].readiness()
        assert not ok and "401" in detail
        assert (await router.backends["bearer"].readiness())[0]
