"""A synthetic Prometheus: the HTTP query API on loopback, answering from a function instead of a TSDB.

It speaks the real envelope (``POST``/``GET /api/v1/query`` with ``query`` and ``time``, ``/-/ready``),
so the service's own :class:`~autoscaler.prometheus.client.PrometheusClient` and
:class:`~autoscaler.prometheus.reader.MetricsReader` read it over HTTP exactly as they read Prometheus.
It does not evaluate PromQL: the answering function recognises the queries it knows (the demo's) and
anything else is answered as Prometheus answers a query it cannot run (HTTP 400, ``bad_data``).
It runs on the caller's event loop, like the Kubernetes API emulator beside it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

Labels = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Sample:
    labels: Labels
    value: float


class UnknownQuery(Exception):
    """The function cannot answer this query; the message says which ones it can."""


Answer = Callable[[str, float], Sequence[Sample]]


def _value_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _error(status: int, error_type: str, message: str) -> web.Response:
    return web.json_response({"status": "error", "errorType": error_type, "error": message}, status=status)


class SyntheticPrometheus:
    def __init__(self, answer: Answer, *, host: str = "127.0.0.1") -> None:
        self.answer = answer
        self.host = host
        self.port: int | None = None
        self.queries = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the synthetic Prometheus is not started")
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/v1/query", self._query)
        app.router.add_get("/-/ready", self._ready)
        app.router.add_get("/-/healthy", self._ready)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, 0)
        await site.start()
        self._runner = runner
        self.port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> SyntheticPrometheus:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _ready(self, request: web.Request) -> web.Response:
        return web.Response(text="Prometheus Server is Ready.\n")

    async def _query(self, request: web.Request) -> web.Response:
        if request.method not in ("GET", "POST"):
            return _error(405, "bad_data", f"method {request.method} not allowed")
        params: dict[str, Any] = dict(request.query)
        if request.method == "POST":
            params.update(await request.post())
        promql = str(params.get("query") or "")
        if not promql:
            return _error(400, "bad_data", 'invalid parameter "query": empty query')
        try:
            at = float(params["time"]) if params.get("time") else time.time()
        except ValueError:
            return _error(400, "bad_data", f'invalid parameter "time": cannot parse {params["time"]!r}')
        self.queries += 1
        try:
            samples = self.answer(promql, at)
        except UnknownQuery as exc:
            return _error(400, "bad_data", str(exc))
        result = [{"metric": dict(sample.labels), "value": [at, _value_text(sample.value)]} for sample in samples]
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": result}})
