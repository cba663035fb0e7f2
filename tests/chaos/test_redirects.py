"""F39: a Prometheus URL that answers with a redirect. Credentials never leave for another host, and a
metric read from wherever a redirect points is never scaled on unless the operator allowed it.

The Prometheus client used to follow redirects (aiohttp's default): a 307 re-sent the query's form, the
``access_token`` query parameter in it, and the ``X-Api-Key`` / ``X-Scope-OrgID`` headers to the host the
``Location`` named, and the service scaled on that host's answer (4 → 8 here). Now no redirect is followed
by default (the metric fails, naming the Location); ``prometheus.followRedirects: sameOrigin`` follows one
that stays on the same scheme, host and port, and a redirect to any other origin fails even then.

Each test runs two small servers of its own on loopback: the URL the service is given, which redirects,
and another host (127.0.0.2, another loopback address) that records everything it receives and answers a
queue long enough to scale the Deployment.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

import aiohttp
import orjson
import pytest
from aiohttp import web

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.service import wait_until
from tests.chaos.watch import scaling_active
from tests.chaos.world import replicas_of, set_load, target
from tests.service.cluster import deployment

API_KEY = "api-key-5be1d07c9e"
TENANT = "tenant-8d2f6a"
ACCESS_TOKEN = "access-token-c0ffee9a41"
LOCATION_PASSWORD = "hunter2-in-the-location"
CREDENTIALS = (API_KEY, TENANT, ACCESS_TOKEN)
HOLD = 6.0  # seconds the test watches that nothing scales (past the 4 s stabilization window)

# How a test server answers one request (its body already read).
Handler = Callable[[web.Request, bytes], Awaitable[web.StreamResponse]]


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    parameters: dict[str, str]  # the URL's query string and the form, together


@dataclass
class Server:
    """A small aiohttp server on ``host``; ``answer`` answers every request, ``received`` records them."""

    host: str
    received: list[Received] = field(default_factory=list)
    port: int = 0
    runner: web.AppRunner | None = None

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self, answer: Handler) -> Server:
        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            parameters = dict(parse_qsl(request.query_string))
            parameters.update(parse_qsl(body.decode("utf-8", "replace")))
            self.received.append(Received(request.method, request.path, dict(request.headers), parameters))
            return await answer(request, body)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, self.host, 0)
        await site.start()
        self.port = int(self.runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


async def queue_of_80(request: web.Request, body: bytes) -> web.StreamResponse:
    """What the other host answers: a queue of 80 (8 pods at 10 a pod), to any query, and ready."""
    if request.path.endswith("/-/ready"):
        return web.Response(text="Prometheus Server is Ready.\n")
    document = {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [0, "80"]}]}}
    return web.Response(body=orjson.dumps(document), content_type="application/json")


@pytest.fixture
async def elsewhere() -> AsyncIterator[Server]:
    server = await Server("127.0.0.2").start(queue_of_80)
    try:
        yield server
    finally:
        await server.stop()


def prometheus_settings(url: str, follow: str | None) -> dict[str, object]:
    settings: dict[str, object] = {
        "url": url,
        "headers": {"X-Api-Key": API_KEY, "X-Scope-OrgID": TENANT},
        "queryParameters": {"access_token": ACCESS_TOKEN},
    }
    if follow is not None:
        settings["followRedirects"] = follow
    return settings


@pytest.mark.parametrize(
    ("status", "follow"), [(307, None), (302, None), (307, "sameOrigin")], ids=["307", "302", "307-sameOrigin"]
)
async def test_f39_a_redirect_to_another_host_gets_no_credential_and_scales_nothing(
    chaos: Chaos, cluster: KubeEmulator, elsewhere: Server, status: int, follow: str | None
) -> None:
    """The URL redirects every request to another host, the Location echoing the form (the access token
    in it) and carrying a password of its own. Nothing reaches that host, nothing scales, and the target's
    ScalingActive message names the Location without a credential in it."""

    async def redirect(request: web.Request, body: bytes) -> web.StreamResponse:
        echoed = body.decode("utf-8", "replace") or request.query_string
        location = f"http://someone:{LOCATION_PASSWORD}@{elsewhere.host}:{elsewhere.port}{request.path}?{echoed}"
        return web.Response(status=status, headers={"Location": location})

    redirecting = await Server("127.0.0.1").start(redirect)
    try:
        cluster.create(deployment("web", 4))
        cluster.create(target("web"))
        await chaos.service("one", prometheus=prometheus_settings(redirecting.origin, follow))
        shown = f"{elsewhere.host}:{elsewhere.port}/api/v1/query"

        def told_or_leaked() -> bool:
            return bool(elsewhere.received) or shown in scaling_active(cluster, "web").get("message", "")

        await wait_until(told_or_leaked, 30, "the redirect refused (or followed)")
        await asyncio.sleep(HOLD)  # time for a scale on the other host's answer, were it followed
        leaked = [
            (r.method, r.path, secret)
            for r in elsewhere.received
            for secret in CREDENTIALS
            if secret in str(r.headers) or secret in str(r.parameters)
        ]
        assert not elsewhere.received, (
            f"{len(elsewhere.received)} requests reached {elsewhere.origin}; credentials among them: {leaked}; "
            f"replicas now {replicas_of(cluster, 'web')}"
        )
        assert replicas_of(cluster, "web") == 4
        active = scaling_active(cluster, "web")
        assert active["status"] == "False" and active["reason"] == "FailedGetExternalMetric", active
        message = active["message"]
        assert shown in message and "redirect" in message, message
        for secret in (*CREDENTIALS, LOCATION_PASSWORD):
            assert secret not in message, f"{secret} in {message!r}"
        assert redirecting.received, "the service asked the URL it was given"
        assert all(r.headers.get("X-Api-Key") == API_KEY for r in redirecting.received)
    finally:
        await redirecting.stop()


async def test_f39_same_origin_redirects_are_followed_when_allowed(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """``followRedirects: sameOrigin``: a proxy that moved the API under a path prefix on the same host
    (307 to ``/moved/…``) is followed, the query's form and credentials re-sent there, and the answer
    (the real Prometheus' behind it) scales the Deployment 2 → 4."""
    upstream = aiohttp.ClientSession()

    async def moved(request: web.Request, body: bytes) -> web.StreamResponse:
        if not request.path.startswith("/moved/"):
            return web.Response(status=307, headers={"Location": "/moved" + request.path_qs})
        forwarded = request.path.removeprefix("/moved")
        headers = {"Content-Type": request.headers.get("Content-Type", "application/x-www-form-urlencoded")}
        async with upstream.request(request.method, prometheus.url + forwarded, data=body, headers=headers) as answer:
            payload = await answer.read()
            return web.Response(body=payload, status=answer.status, content_type="application/json")

    same_origin = await Server("127.0.0.1").start(moved)
    try:
        await set_load(exporter, prometheus, 40)
        cluster.create(deployment("web", 2))
        cluster.create(target("web"))
        await chaos.service("one", prometheus=prometheus_settings(same_origin.origin, "sameOrigin"))
        await wait_until(lambda: replicas_of(cluster, "web") == 4, 30, "a scale on the redirected answer")
        assert scaling_active(cluster, "web")["status"] == "True"
        followed = [r for r in same_origin.received if r.path == "/moved/api/v1/query"]
        assert followed, "the redirected query reached /moved/api/v1/query"
        assert all(r.method == "POST" and r.parameters.get("access_token") == ACCESS_TOKEN for r in followed)
        assert all(r.headers.get("X-Api-Key") == API_KEY for r in followed)
    finally:
        await same_origin.stop()
        await upstream.close()
