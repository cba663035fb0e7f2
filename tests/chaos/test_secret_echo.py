"""F40: a backend whose error text echoes the request. Whatever it echoes, no configured secret reaches
the target's status, its Events, ``/api/targets`` or the log.

A 400 whose text repeated the request put the ``access_token`` query parameter into the ScalingActive
message: the log copy was redacted (a pattern caught ``access_token=…``), the status, the Event and
``/api/targets`` were not, and a value echoed bare (not after its name) reached the log too. Now one
redaction, that knows every value the Prometheus settings hold as a secret (the bearer token file's
current token, header values, query parameter values, basic auth), is applied to every one of them.

The backend is a small aiohttp server of the test's own: it answers every query 400 ``bad_data`` with
the values of the form and of the headers it received, bare, in its error text.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qsl

import orjson
from aiohttp import web

from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.service import wait_until
from tests.chaos.watch import scaling_active
from tests.chaos.world import target
from tests.service.cluster import deployment

BEARER_TOKEN = "bearer-token-from-file-7c1e93ad"
API_KEY = "api-key-value-41d7be20"
ACCESS_TOKEN = "access-token-value-9f3a0c55"
SECRETS = (BEARER_TOKEN, API_KEY, ACCESS_TOKEN)


async def echoing_backend(request: web.Request) -> web.StreamResponse:
    """Prometheus' bad_data answer, its text repeating every value of the request (the secrets first, so
    that no cut of a long text hides them)."""
    if request.path.endswith("/-/ready"):
        return web.Response(text="ready\n")
    form = dict(parse_qsl((await request.read()).decode("utf-8", "replace")))
    echoed = [
        form.pop("access_token", ""),
        request.headers.get("X-Api-Key", ""),
        request.headers.get("Authorization", ""),
    ]
    echoed += form.values()
    document = {"status": "error", "errorType": "bad_data", "error": f"cannot parse the request: {' '.join(echoed)}"}
    return web.Response(status=400, body=orjson.dumps(document), content_type="application/json")


async def test_f40_a_secret_echoed_by_the_backend_reaches_no_sink(
    chaos: Chaos, cluster: KubeEmulator, tmp_path: Path
) -> None:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", echoing_backend)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    backend = f"http://127.0.0.1:{runner.addresses[0][1]}"
    token = tmp_path / "prometheus-token"
    token.write_text(BEARER_TOKEN + "\n")
    try:
        cluster.create(deployment("web", 3))
        cluster.create(target("web"))
        instance = await chaos.service(
            "one",
            prometheus={
                "url": backend,
                "bearerTokenFile": str(token),
                "headers": {"X-Api-Key": API_KEY},
                "queryParameters": {"access_token": ACCESS_TOKEN},
            },
        )
        await wait_until(
            lambda: "rejected the query" in scaling_active(cluster, "web").get("message", ""),
            30,
            "ScalingActive False with the backend's text",
        )
        await wait_until(
            lambda: cluster.events("default", involved_name="web", reason="FailedGetExternalMetric"),
            15,
            "the FailedGetExternalMetric Event",
        )
        await wait_until(lambda: instance.events("http.started"), 15, "the HTTP server")
        message = scaling_active(cluster, "web")["message"]
        assert "<redacted>" in message, f"the backend's echo is in the message, redacted: {message!r}"

        _, listed = await instance.get("/api/targets")
        _, one = await instance.get("/api/targets/default/web")
        assert "rejected the query" in listed and "rejected the query" in one
        sinks = {
            "status (every version written)": json.dumps(cluster.history("scalingtargets.autoscaler.dev", "web")),
            "Events": json.dumps(cluster.events("default")),
            "/api/targets": listed,
            "/api/targets/default/web": one,
            "log": instance.log.read_text(errors="replace"),
        }
        leaks = [(sink, secret) for sink, text in sinks.items() for secret in SECRETS if secret in text]
        assert not leaks, f"secrets reached: {leaks}"
    finally:
        await runner.cleanup()
