"""An HTTP proxy in front of the API emulator that answers more than was asked: the scope leak.

A namespaced LIST or WATCH (``/api/v1/namespaces/team-a/pods``, ``/apis/<group>/<version>/namespaces/team-a/
<plural>``) is sent to the server cluster-wide, and without its ``labelSelector``: the answers carry every
namespace's objects, and every shard's targets. An API server (or an aggregated API, or a proxy) that leaks
so is a bug — the emulator had one (issue 37, item 12: its replay of a resumed watch skipped the namespace
filter) — and this makes the same leak on the wire, on every request, so that a test can check that the
service's own guard drops what is not its own, whatever the server sends. Everything else passes as it is;
answers stream through unchanged (a watch stays a watch).
"""

from __future__ import annotations

import re

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, MultiDict

_NAMESPACED_COLLECTION = re.compile(r"^(/api/v1|/apis/[^/]+/[^/]+)/namespaces/[^/]+/([^/]+)$")
_REQUEST_HEADERS = ("Authorization", "Accept", "Content-Type")
_ANSWER_HEADERS = ("Content-Type", "Retry-After")


class LeakyApi:
    """Listens on 127.0.0.1 (a free port); every request goes to ``upstream`` (the emulator's URL)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.port = 0
        self.widened = 0  # requests sent cluster-wide or without their selector
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> LeakyApi:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=5))
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def _widen(self, request: web.Request) -> tuple[str, MultiDict[str]]:
        path, query = request.path, MultiDict(request.query)
        if request.method != "GET":
            return path, query
        collection = _NAMESPACED_COLLECTION.match(path)
        if collection is not None:
            path = f"{collection[1]}/{collection[2]}"
        if collection is not None or "labelSelector" in query:
            query.popall("labelSelector", None)
            self.widened += 1
        return path, query

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        path, query = self._widen(request)
        headers = CIMultiDict((name, request.headers[name]) for name in _REQUEST_HEADERS if name in request.headers)
        body = await request.read()
        async with self._session.request(
            request.method, self.upstream + path, params=query, headers=headers, data=body or None
        ) as answer:
            response = web.StreamResponse(
                status=answer.status,
                headers={name: answer.headers[name] for name in _ANSWER_HEADERS if name in answer.headers},
            )
            response.enable_chunked_encoding()
            await response.prepare(request)
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
