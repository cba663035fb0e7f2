"""Prometheus credentials named as Secret references (``bearerTokenSecret``, ``basicAuth.passwordSecret`` and
``usernameSecret``, ``headerSecrets``), read
through the real client from the API emulator (issue 36, item 5): a backend that checks the credential answers,
a rotated Secret is read again at once after the 401 it causes, and a Secret that is absent, lacks its key or
is forbidden fails the backend's metrics with a message naming it, never its content."""

from __future__ import annotations

import asyncio
import base64
import time
from contextlib import AsyncExitStack
from typing import Any

from aiohttp import web
from kubernetes_asyncio.client import ApiClient

from autoscaler.core.observation import ExternalReading, MetricFailure
from autoscaler.core.spec import (
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
)
from autoscaler.kube.api import KubeApi
from autoscaler.loop.clock import SkewMonitor
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.service.backends.router import BackendRouter, open_backends
from autoscaler.service.backends.secret_refs import MIN_REREAD_SECONDS
from autoscaler.service.settings import parse_service_settings
from autoscaler.service.telemetry.metrics import ServiceMetrics
from autoscaler.values.quantity import Quantity
from kube_emulator import KubeEmulator
from tests.prometheus.fake_server import FakePrometheus, Request, json_response, vector


def secret(name: str, **data: str) -> dict[str, Any]:
    encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "monitoring"},
        "data": encoded,
    }


def guarded(expected: dict[str, str]) -> Any:
    """A backend answering only a request whose header ``expected["name"]`` is ``expected["value"]``."""

    async def handle(request: Request) -> web.StreamResponse:
        if request.headers.get(expected["name"]) != expected["value"]:
            return web.Response(status=401, text="Unauthorized")
        return json_response(vector("4", at=time.time()))

    return handle


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def metric(backend: str) -> MetricSpec:
    target = MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("1"))
    return MetricSpec(MetricSourceType.EXTERNAL, backend, target, query="q", backend=backend)


QUERY = TargetQuery(
    "default",
    "worker",
    CrossVersionObjectReference("Deployment", "worker", "apps/v1"),
    "",
    (),
    [metric("bearer"), metric("basic"), metric("custom"), metric("userpass"), metric("absent"), metric("keyless")],
)


def ref(name: str, key: str) -> dict[str, str]:
    return {"namespace": "monitoring", "name": name, "key": key}


async def test_credentials_read_from_secrets_and_read_again_after_a_401(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.create(secret("prom-creds", token="tok-first", password="pw-first", apikey="key-first", user="alice"))
    bearer_check = {"name": "Authorization", "value": "Bearer tok-first"}
    basic_check = {"name": "Authorization", "value": basic("autoscaler", "pw-first")}
    custom_check = {"name": "X-Api-Key", "value": "key-first"}
    userpass_check = {"name": "Authorization", "value": basic("alice", "pw-first")}
    async with AsyncExitStack() as stack:
        servers = []
        for check in (bearer_check, basic_check, custom_check, userpass_check):
            server = await FakePrometheus().start()
            stack.push_async_callback(server.close)
            server.handler = guarded(check)
            servers.append(server)
        backends = {
            "bearer": {"url": servers[0].url, "bearerTokenSecret": ref("prom-creds", "token"), "retries": 0},
            "basic": {
                "url": servers[1].url,
                "basicAuth": {"username": "autoscaler", "passwordSecret": ref("prom-creds", "password")},
                "retries": 0,
            },
            "custom": {
                "url": servers[2].url,
                "headerSecrets": {"X-Api-Key": ref("prom-creds", "apikey")},
                "headers": {"X-Scope-OrgID": "team-a"},
                "retries": 0,
            },
            "userpass": {
                "url": servers[3].url,
                "basicAuth": {
                    "usernameSecret": ref("prom-creds", "user"),
                    "passwordSecret": ref("prom-creds", "password"),
                },
                "retries": 0,
            },
            "absent": {"url": servers[0].url, "bearerTokenSecret": ref("nowhere", "token"), "retries": 0},
            "keyless": {"url": servers[0].url, "bearerTokenSecret": ref("prom-creds", "missing"), "retries": 0},
        }
        settings = parse_service_settings({"prometheus": {"url": servers[0].url, "backends": backends}})
        secrets = KnownSecrets()
        opened = await open_backends(
            settings, ServiceMetrics(), time.time, SkewMonitor("prometheus", 10.0), secrets, stack, KubeApi(api)
        )
        router = BackendRouter(opened)

        [row] = await router.read([QUERY], None)
        assert [sum(r.values) for r in row[:4] if isinstance(r, ExternalReading)] == [4000] * 4, row
        absent, keyless = row[4], row[5]
        assert isinstance(absent, MetricFailure) and isinstance(keyless, MetricFailure)
        assert "cannot read the Secret monitoring/nowhere (key token): the Secret does not exist" in absent.message
        assert "cannot read the Secret monitoring/prom-creds (key missing): the Secret has no key missing" in (
            keyless.message
        )
        assert secrets.redact("tok-first pw-first key-first") == "<redacted> <redacted> <redacted>"

        # Rotated: the backends want the new values; the first request's 401 has the Secret read again at once.
        rotated = secret("prom-creds", token="tok-second", password="pw-second", apikey="key-second", user="bob")
        emulator.patch("secrets", "prom-creds", {"data": rotated["data"]}, namespace="monitoring")
        await asyncio.sleep(MIN_REREAD_SECONDS)  # a Secret is read again after a 401 at most once a second
        bearer_check["value"] = "Bearer tok-second"
        basic_check["value"] = basic("autoscaler", "pw-second")
        custom_check["value"] = "key-second"
        userpass_check["value"] = basic("bob", "pw-second")
        [row] = await router.read([QUERY], None)
        assert [sum(r.values) for r in row[:4] if isinstance(r, ExternalReading)] == [4000] * 4, row
        assert secrets.redact("tok-second") == "<redacted>"
