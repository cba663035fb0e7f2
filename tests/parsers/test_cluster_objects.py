"""ScalingTargets from the API server that break the limits: each makes its own target invalid (a
condition and an Event say where), never the watch cache or the other targets.

The API emulator, like any Python program, cannot hold an object nested thousands of levels deep; a
real API server keeps up to 10,000 levels in a field with ``x-kubernetes-preserve-unknown-fields``. So
the deep object is made on the wire: a relay between the service and the emulator writes it into every
body (LIST, WATCH and PATCH answers) in place of a marker the stored object holds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from kubernetes_asyncio.client import ApiClient

from autoscaler.core.settings import ControllerSettings
from autoscaler.kube.api import KubeApi
from autoscaler.values.limits import MAX_DEPTH
from kube_emulator import KubeEmulator
from tests.service.cluster import (
    CRD,
    FakeMetrics,
    condition,
    deployment,
    eventually,
    replicas_of,
    status_of,
    target,
)
from tests.service.manager_setup import build_manager

MARKER = b'"deep-marker"'
LEVELS = 3000  # far past what json.loads survives (about 1000, fewer inside a deep asyncio stack)
DEEP = b"[" * LEVELS + b"1" + b"]" * LEVELS
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "content-encoding"}


class DeepeningRelay:
    """HTTP relay to the emulator that replaces :data:`MARKER` in every answer by :data:`DEEP`."""

    def __init__(self, emulator: KubeEmulator) -> None:
        self.emulator = emulator
        self.rewritten = 0
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> DeepeningRelay:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_read=None))
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._relay)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None and self._session is not None
        await self._runner.cleanup()
        await self._session.close()

    def api_client(self) -> ApiClient:
        configuration = self.emulator.client_configuration()
        configuration.host = self.url
        return ApiClient(configuration=configuration)

    def _deepen(self, data: bytes) -> bytes:
        if MARKER in data:
            self.rewritten += 1
            return data.replace(MARKER, DEEP)
        return data

    async def _relay(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        async with self._session.request(
            request.method, self.emulator.url + request.path_qs, headers=headers, data=await request.read()
        ) as answer:
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
            if request.query.get("watch") == "true":
                response = web.StreamResponse(status=answer.status, headers=kept)
                await response.prepare(request)
                with contextlib.suppress(ConnectionResetError, aiohttp.ClientError):
                    async for line in answer.content:  # one event per line
                        await response.write(self._deepen(line))
                return response
            return web.Response(status=answer.status, body=self._deepen(await answer.read()), headers=kept)


@pytest.fixture
async def emu() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.5) as emulator:
        emulator.install_crd(CRD)
        yield emulator


def deep_target(name: str, workload: str) -> dict[str, Any]:
    obj = target(name, workload)
    obj["spec"]["hvpa"] = {"junk": "deep-marker"}  # the CRD keeps unknown fields under spec.hvpa
    return obj


async def test_a_target_nested_thousands_deep_is_invalid_and_the_others_go_on(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(deployment("api", 2))
    emu.create(deployment("late", 2))
    emu.create(deep_target("deep", "api"))  # in the first LIST
    emu.create(target("web", "web"))
    metrics = FakeMetrics()
    metrics.set("queue", 40)  # 40 / 10 per pod: 4 replicas
    async with DeepeningRelay(emu) as relay, relay.api_client() as api:
        manager = build_manager(
            KubeApi(api), metrics.read_many, settings=ControllerSettings(), period=0.3, jitter=0.0, batch_window=0.05
        )
        try:
            # Before the fix the target cache died of RecursionError on its first LIST: never synced.
            await manager.start_caches()
            await asyncio.wait_for(manager.activate(), timeout=20)  # waits for the caches to sync
            await eventually(lambda: replicas_of(emu, "web") == 4, what="the valid target scales")
            await eventually(
                lambda: condition(status_of(emu, "deep"), "ScalingActive") is not None,
                what="the deep target's condition",
            )
            active = condition(status_of(emu, "deep"), "ScalingActive")
            assert active is not None and (active["status"], active["reason"]) == ("False", "InvalidSpec")
            too_deep = "spec.hvpa.junk" + "[0]" * (MAX_DEPTH - 3)
            assert f"{too_deep}: nested too deeply: more than {MAX_DEPTH} levels" in active["message"]
            assert emu.events("default", involved_name="deep", reason="InvalidSpec")
            assert replicas_of(emu, "api") == 2
            # A deep object arriving by WATCH: the cache goes on, and so do targets created after it.
            emu.create(deep_target("deep2", "api"))
            emu.create(target("late", "late"))
            await eventually(lambda: replicas_of(emu, "late") == 4, what="a target created after both scales")
            await eventually(
                lambda: condition(status_of(emu, "deep2"), "ScalingActive") is not None,
                what="the second deep target's condition",
            )
            assert relay.rewritten >= 3  # LIST, WATCH, and the answers to the status writes
            assert all(cache.last_error is None for cache in manager.cluster.targets.values())
        finally:
            await manager.stop()
