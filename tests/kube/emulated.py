"""The API emulator as the kube layer's tests meet it (the service's tests too, through their conftest): a
plain emulator, a client of it, and a loopback link in front of it that one client can be cut off by (the
emulator's own faults hit every client alike)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from kubernetes_asyncio.client import ApiClient

from kube_emulator import KubeEmulator

# Hop-by-hop headers are the link's own business, not the client's or the emulator's.
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Link:
    """An HTTP relay on 127.0.0.1 to the emulator. ``cut("error")`` answers 500 to matching requests
    without forwarding them; ``cut("hang")`` holds them unanswered (the client's timeout fires);
    ``cut("unanswered")`` forwards them, so the server acts on them, and never passes the answer back
    (not even after ``restore()``: the answer is lost); ``restore()`` heals the link."""

    def __init__(self, emulator: KubeEmulator) -> None:
        self.emulator = emulator
        self.mode: str | None = None
        self.path: re.Pattern[str] = re.compile("")
        self.cut_requests = 0
        self._healed = asyncio.Event()
        self._closing = asyncio.Event()
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._relay)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"

    async def stop(self) -> None:
        self._healed.set()
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def cut(self, mode: str = "error", *, path: str = "") -> None:
        assert mode in ("error", "hang", "unanswered")
        self.path = re.compile(path)
        self._healed.clear()
        self.mode = mode

    def restore(self) -> None:
        self.mode = None
        self._healed.set()

    def api_client(self) -> ApiClient:
        configuration = self.emulator.client_configuration()
        configuration.host = self.url
        return ApiClient(configuration=configuration)

    async def _relay(self, request: web.Request) -> web.StreamResponse:
        lost = self.mode == "unanswered" and self.path.search(request.path) is not None
        if self.mode is not None and not lost and self.path.search(request.path):
            self.cut_requests += 1
            if self.mode == "hang":
                await self._healed.wait()
            return web.json_response(
                {
                    "kind": "Status",
                    "status": "Failure",
                    "code": 500,
                    "reason": "InternalError",
                    "message": "the link is cut",
                },
                status=500,
            )
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        async with self._session.request(
            request.method, self.emulator.url + request.path_qs, headers=headers, data=await request.read()
        ) as answer:
            body = await answer.read()
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP | {"content-encoding"}}
        if lost:
            self.cut_requests += 1
            await self._closing.wait()  # held until the relay stops: the client never hears
        return web.Response(status=answer.status, body=body, headers=kept)


@pytest.fixture
async def emulator() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(seed=7) as emu:
        yield emu


@pytest.fixture
async def api(emulator: KubeEmulator) -> AsyncIterator[ApiClient]:
    async with emulator.api_client() as client:
        yield client


@pytest.fixture
async def link(emulator: KubeEmulator) -> AsyncIterator[Link]:
    relay = Link(emulator)
    await relay.start()
    try:
        yield relay
    finally:
        await relay.stop()
