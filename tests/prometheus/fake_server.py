"""A scriptable stand-in for Prometheus' HTTP API, on loopback in the test's own event loop."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

Handler = Callable[["Request"], Awaitable[web.StreamResponse]]


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    form: dict[str, str]


def vector(*values: str, labels: dict[str, str] | None = None, at: float = 1000.0) -> dict[str, Any]:
    return {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": {**(labels or {}), "i": str(i)}, "value": [at, v]} for i, v in enumerate(values)],
        },
    }


def json_response(document: object, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(document), status=status, content_type="application/json")


def error_response(status: int, error_type: str, error: str) -> web.Response:
    return json_response({"status": "error", "errorType": error_type, "error": error}, status)


class FakePrometheus:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.handler: Handler = self._ok
        self.transport: asyncio.Transport | None = None
        self._runner: web.AppRunner | None = None
        self.url = ""

    @staticmethod
    async def _ok(request: Request) -> web.StreamResponse:
        return json_response(vector("1"))

    async def start(self, ssl_context: ssl.SSLContext | None = None) -> FakePrometheus:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock, ssl_context=ssl_context).start()
        self.url = f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        form = {k: str(v) for k, v in (await request.post()).items()}
        recorded = Request(request.path, dict(request.headers), form)
        self.transport = request.transport  # the connection of the latest request (a test may abort it)
        self.requests.append(recorded)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self.handler(recorded)
        finally:
            self.in_flight -= 1


def sequence(*handlers: Handler) -> Handler:
    """Answer the n-th request with the n-th handler (the last one repeats)."""
    calls = 0

    async def handle(request: Request) -> web.StreamResponse:
        nonlocal calls
        handler = handlers[min(calls, len(handlers) - 1)]
        calls += 1
        return await handler(request)

    return handle


def constant(response: Callable[[], web.StreamResponse], delay: float = 0.0) -> Handler:
    async def handle(request: Request) -> web.StreamResponse:
        if delay:
            await asyncio.sleep(delay)
        return response()

    return handle
