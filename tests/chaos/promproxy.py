"""An HTTP proxy in front of the real Prometheus that misbehaves on demand.

``autoscaler run`` is pointed at the proxy; the proxy forwards every request to the real server and,
where a rule matches the PromQL (a regular expression on the ``query`` parameter), changes what comes
back: a delay, an HTTP error with Prometheus' own error document, values turned into NaN or ±Inf, an
empty result, duplicated series, a partial answer (a Thanos store's warning or a VictoriaMetrics cluster's
``isPartial`` on a genuine answer, some of its series dropped as a missing store's would be), a huge
answer, sample times and the ``Date`` header of a server whose clock is off, or a connection dropped
without an answer. Rules apply in the order they were added; the
first matching rule of each kind wins. Everything the proxy saw is kept in :attr:`PrometheusProxy.seen`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any
from urllib.parse import parse_qsl

import aiohttp
import orjson
from aiohttp import web

Transform = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(eq=False)
class Rule:
    pattern: str  # regular expression searched in the PromQL text ("" matches all)
    delay: float = 0.0  # seconds before forwarding
    status: int | None = None  # answer this HTTP status instead of forwarding
    error_type: str = "execution"
    error: str = "injected failure"
    error_of: Callable[[dict[str, str]], str] | None = None  # the error text made from the request's form
    transform: Transform | None = None  # rewrite the decoded answer
    body: bytes | None = None  # answer exactly these bytes (status 200) instead of forwarding
    drop: bool = False  # close the connection without an answer
    times: int | None = None  # apply this many times, then retire (None: until removed)
    hits: int = 0

    def matches(self, promql: str) -> bool:
        return (self.times is None or self.hits < self.times) and bool(re.search(self.pattern, promql))


@dataclass
class Seen:
    path: str
    query: str
    status: int
    started: float
    seconds: float
    rule: Rule | None = None
    connection: int = 0  # which TCP connection carried it (the client's port)


@dataclass
class _Concurrency:
    now: int = 0
    peak: int = 0


class PrometheusProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.rules: list[Rule] = []
        self.seen: list[Seen] = []
        self.clock_offset = 0.0  # seconds this "Prometheus" is ahead (+) or behind (−) the real time
        self.in_flight = _Concurrency()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._site: web.TCPSite | None = None
        self._transports: dict[int, asyncio.BaseTransport] = {}  # client connections, by the client's port
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> PrometheusProxy:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120))
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # shutdown_timeout: a test that ends while a delayed answer is pending must not wait for it
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await self._site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def refuse(self) -> None:
        """Stop listening and drop every open connection: Prometheus is down (connection refused)."""
        if self._site is not None:
            await self._site.stop()
            self._site = None
        self.drop_connections()

    async def accept(self) -> None:
        """Listen again on the same port (Prometheus is back)."""
        if self._site is None and self._runner is not None:
            self._site = web.TCPSite(self._runner, "127.0.0.1", self.port)
            await self._site.start()

    def drop_connections(self) -> int:
        """Abort every open client connection at once (what a Prometheus restart does); returns how many."""
        victims = [t for t in self._transports.values() if not t.is_closing()]
        for transport in victims:
            transport.abort()  # type: ignore[attr-defined]
        self._transports.clear()
        return len(victims)

    def connections(self, since: float = 0.0) -> set[int]:
        """The connections that carried queries since ``since`` (monotonic)."""
        return {s.connection for s in self.seen if s.started >= since and s.path.endswith("/query")}

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> PrometheusProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def add(self, rule: Rule) -> Rule:
        self.rules.append(rule)
        return rule

    def remove(self, rule: Rule) -> None:
        with contextlib.suppress(ValueError):
            self.rules.remove(rule)

    def clear(self) -> None:
        self.rules.clear()
        self.clock_offset = 0.0

    def queries(self, pattern: str = "", since: float = 0.0) -> list[Seen]:
        return [
            s for s in self.seen if s.started >= since and s.path.endswith("/query") and re.search(pattern, s.query)
        ]

    # -- serving -----------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        body = await request.read()
        params = dict(parse_qsl(request.query_string))
        if request.method == "POST":
            params.update(parse_qsl(body.decode("utf-8", "replace")))
        promql = params.get("query", "")
        connection = 0
        if request.transport is not None:
            peer = request.transport.get_extra_info("peername")
            connection = int(peer[1]) if peer else 0  # the client's port: one per connection
            self._transports[connection] = request.transport
        rule = next((r for r in self.rules if r.matches(promql)), None)
        self.in_flight.now += 1
        self.in_flight.peak = max(self.in_flight.peak, self.in_flight.now)
        status = 0
        try:
            if rule is not None:
                rule.hits += 1
                if rule.delay:
                    await asyncio.sleep(rule.delay)
                if rule.drop:
                    if request.transport is not None:
                        request.transport.abort()  # the client sees the connection die, no answer
                    return web.Response()
                if rule.status is not None:
                    status = rule.status
                    error = rule.error_of(params) if rule.error_of is not None else rule.error
                    document = {"status": "error", "errorType": rule.error_type, "error": error}
                    return self._answer(orjson.dumps(document), status)
                if rule.body is not None:
                    status = 200
                    return self._answer(rule.body, 200)
            status, payload, content_type = await self._forward(request, body)
            if (
                status == 200
                and content_type.startswith("application/json")
                and (self.clock_offset or (rule is not None and rule.transform is not None))
            ):
                document = orjson.loads(payload)
                if rule is not None and rule.transform is not None:
                    document = rule.transform(document)
                if self.clock_offset:
                    document = shift_times(document, self.clock_offset)
                payload = orjson.dumps(document)
            return self._answer(payload, status)
        finally:
            self.in_flight.now -= 1
            self.seen.append(Seen(request.path, promql, status, started, time.monotonic() - started, rule, connection))

    async def _forward(self, request: web.Request, body: bytes) -> tuple[int, bytes, str]:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() in ("content-type", "authorization")}
        async with self._session.request(
            request.method, self.upstream + request.path_qs, data=body or None, headers=headers
        ) as response:
            return response.status, await response.read(), response.headers.get("Content-Type", "")

    def _answer(self, payload: bytes, status: int) -> web.Response:
        date = formatdate(time.time() + self.clock_offset, usegmt=True)
        return web.Response(body=payload, status=status, content_type="application/json", headers={"Date": date})


# -- transforms ------------------------------------------------------------------------------------


def _results(document: dict[str, Any]) -> list[dict[str, Any]]:
    data = document.get("data") or {}
    result = data.get("result")
    return result if isinstance(result, list) else []


def values_to(text: str) -> Transform:
    """Every sample's value becomes ``text`` ("NaN", "+Inf", "-Inf")."""

    def transform(document: dict[str, Any]) -> dict[str, Any]:
        for series in _results(document):
            if "value" in series:
                series["value"][1] = text
        return document

    return transform


def empty(document: dict[str, Any]) -> dict[str, Any]:
    document.setdefault("data", {})["result"] = []
    return document


def duplicated(document: dict[str, Any]) -> dict[str, Any]:
    """Every series twice (same labels): what two replicas behind a careless query frontend return."""
    data = document.get("data") or {}
    data["result"] = [s for series in _results(document) for s in (series, series)]
    return document


def _drop_some(document: dict[str, Any], keep: float) -> None:
    """Keep a ``keep`` share of the series, spread over the answer (every other one for a half): a store that
    did not answer took the others with it. A single series (a ``sum``) keeps its labels and loses ``1 - keep``
    of its value, as a sum over fewer stores does."""
    data = document.get("data") or {}
    result = _results(document)
    if len(result) == 1 and "value" in result[0]:
        result[0]["value"][1] = repr(float(result[0]["value"][1]) * keep)
        return
    data["result"] = [s for i, s in enumerate(result) if int((i + 1) * keep) > int(i * keep)]


def thanos_partial(warning: str, keep: float = 0.5) -> Transform:
    """A genuine answer made partial as Thanos makes it: ``warning`` in ``warnings`` (after ``data``, where
    Thanos puts it), and only ``keep`` of the data."""

    def transform(document: dict[str, Any]) -> dict[str, Any]:
        _drop_some(document, keep)
        document["warnings"] = [*document.get("warnings", []), warning]
        return document

    return transform


def vm_partial(keep: float = 0.5) -> Transform:
    """A genuine answer made partial as a VictoriaMetrics cluster makes it: ``"isPartial": true`` (before
    ``data``, where vmselect puts it), and only ``keep`` of the data."""

    def transform(document: dict[str, Any]) -> dict[str, Any]:
        _drop_some(document, keep)
        return {
            "status": document.get("status"),
            "isPartial": True,
            **{k: v for k, v in document.items() if k != "status"},
        }

    return transform


def with_warning(warning: str) -> Transform:
    """A genuine, whole answer with a warning that does not say it is partial (a PromQL annotation)."""

    def transform(document: dict[str, Any]) -> dict[str, Any]:
        document["warnings"] = [*document.get("warnings", []), warning]
        return document

    return transform


def shift_times(document: dict[str, Any], offset: float) -> dict[str, Any]:
    for series in _results(document):
        if "value" in series:
            series["value"][0] = float(series["value"][0]) + offset
        for point in series.get("values") or []:
            point[0] = float(point[0]) + offset
    return document


def huge_vector(series: int, *, labels: int = 8, namespace: str = "default") -> bytes:
    """A valid instant-query answer of ``series`` series with ``labels`` labels each (~135 bytes a series
    at 8 labels: 200,000 series ≈ 27 MB), for pods no target owns."""
    now = time.time()
    result = [
        {
            "metric": {
                "namespace": namespace,
                "pod": f"stranger-{i}",
                **{f"label_{k}": f"value-{k}-{i % 97}" for k in range(labels - 2)},
            },
            "value": [now, str(i % 1000)],
        }
        for i in range(series)
    ]
    return orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})


@dataclass
class ProxyLog:
    """What a test asserts on: the queries between two moments (monotonic)."""

    proxy: PrometheusProxy
    since: float = field(default_factory=time.monotonic)

    def count(self, pattern: str = "") -> int:
        return len(self.proxy.queries(pattern, self.since))
