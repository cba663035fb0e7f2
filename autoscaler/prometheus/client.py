"""An asyncio client for the Prometheus HTTP API on one shared aiohttp session.

* One :class:`aiohttp.ClientSession` per Prometheus for the life of the app: the connection pool
  does not grow with the number of targets (KEDA's per-scaler transports re-dialled O(N)).
* At most ``concurrency`` requests in flight (Prometheus runs 20 queries at once and queues the
  rest, so more only adds latency).
* Every call has a deadline of ``timeout_seconds`` from the moment it gets a slot, covering all
  its retries; Prometheus is told the same budget (``timeout=``) so it stops working when we stop
  waiting. aiohttp's own default (300 s) would be 20 sync periods.
* Retries only where they are safe and can help: the queries are reads, so repeating one is
  harmless, but only a refused/reset connection, 429, 500, 502, 503 (not a query timeout) and 504
  are retried, with exponential backoff and full jitter, and never past the deadline. A 400/422
  (the query is wrong), a timeout (the budget is spent) or a TLS failure is final at once.
* Queries are POSTed as a form (no URL length limit) with an explicit ``time=``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson

from autoscaler.prometheus.auth import Credentials, build_ssl_context
from autoscaler.prometheus.errors import (
    PrometheusBadQuery,
    PrometheusError,
    PrometheusHTTPError,
    PrometheusMalformedResponse,
    PrometheusTimeout,
    PrometheusUnreachable,
)
from autoscaler.prometheus.promql import format_duration, format_time
from autoscaler.prometheus.results import InstantResult, RangeResult, parse_instant, parse_range
from autoscaler.prometheus.settings import PrometheusSettings

_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_BACKOFF_BASE = 0.05
_BACKOFF_CAP = 1.0
_ERROR_TEXT_LIMIT = 500
USER_AGENT = "autoscaler-prometheus/0.1"


@dataclass
class ClientStats:
    """Counters for the app's own metrics and for benchmarks."""

    calls: int = 0
    http_requests: int = 0
    retries: int = 0
    failures: dict[str, int] = field(default_factory=dict)


class _Retry(Exception):
    """An attempt failed in a way another attempt may fix; carries the error to raise otherwise."""

    def __init__(self, error: PrometheusError) -> None:
        super().__init__(str(error))
        self.error = error


class PrometheusClient:
    """Use as ``async with PrometheusClient(settings) as client:`` (or :meth:`start`/:meth:`close`)."""

    def __init__(self, settings: PrometheusSettings, *,
                 rng: Callable[[], float] = random.random) -> None:
        self.settings = settings
        self.stats = ClientStats()
        self._credentials = Credentials(settings)
        self._rng = rng
        self._session: aiohttp.ClientSession | None = None
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._skip_headers: tuple[str, ...] = () if settings.compression else ("Accept-Encoding",)

    async def __aenter__(self) -> PrometheusClient:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def start(self) -> None:
        if self._session is not None:
            return
        # Reading CA/cert/key files blocks: do it off the event loop, once.
        ssl_context = await asyncio.to_thread(build_ssl_context, self.settings)
        connector = aiohttp.TCPConnector(limit=self.settings.concurrency + 2, ssl=ssl_context)
        self._session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=None),
            headers={"User-Agent": USER_AGENT}, raise_for_status=False)

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    # -- public API -----------------------------------------------------------------------------

    async def query(self, promql: str, at: float) -> InstantResult:
        """Evaluate ``promql`` at Unix time ``at`` (``POST /api/v1/query``)."""
        document = await self._call("/api/v1/query", {"query": promql, "time": format_time(at)})
        return parse_instant(document)

    async def query_range(self, promql: str, start: float, end: float, step: float) -> RangeResult:
        """Evaluate ``promql`` over ``[start, end]`` every ``step`` seconds (``/api/v1/query_range``)."""
        form = {"query": promql, "start": format_time(start), "end": format_time(end),
                "step": format_duration(step)}
        return parse_range(await self._call("/api/v1/query_range", form))

    async def ready(self) -> bool:
        """Whether ``/-/ready`` answers 200 within the timeout; never raises."""
        session = self._require_session()
        try:
            async with asyncio.timeout(self.settings.timeout_seconds):
                async with session.get(self.settings.url + "/-/ready",
                                       headers=self._credentials.headers()) as response:
                    await response.read()
                    return response.status == 200
        except (TimeoutError, aiohttp.ClientError, OSError, PrometheusError):
            return False

    # -- internals ------------------------------------------------------------------------------

    def _require_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("PrometheusClient used before start() (use it as an async context manager)")
        return self._session

    async def _call(self, path: str, form: Mapping[str, str]) -> Any:
        self._require_session()
        self.stats.calls += 1
        try:
            async with self._slots:
                return await self._call_with_retries(path, form)
        except PrometheusError as error:
            self.stats.failures[error.kind] = self.stats.failures.get(error.kind, 0) + 1
            raise

    async def _call_with_retries(self, path: str, form: Mapping[str, str]) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.timeout_seconds
        attempt = 0
        refreshed_credentials = False
        while True:
            try:
                return await self._attempt(path, form, deadline)
            except _Retry as retry:
                error = retry.error
                if (isinstance(error, PrometheusHTTPError) and error.status == 401
                        and self._credentials.refreshable and not refreshed_credentials):
                    # The token may have rotated under us: re-read it once and try again now.
                    refreshed_credentials = True
                    self._credentials.refresh()
                    continue
                if isinstance(error, PrometheusHTTPError) and error.status == 401:
                    raise error from None
                attempt += 1
                delay = self._rng() * min(_BACKOFF_CAP, _BACKOFF_BASE * 2 ** attempt)
                if attempt > self.settings.retries or loop.time() + delay >= deadline:
                    raise error from None
                self.stats.retries += 1
                await asyncio.sleep(delay)

    async def _attempt(self, path: str, form: Mapping[str, str], deadline: float) -> Any:
        session = self._require_session()
        url = self.settings.url + path
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise self._timeout()
        body = dict(self.settings.query_parameters)
        body.update(form)
        # Tell Prometheus our budget so it abandons the query when we do.
        body["timeout"] = format_duration(max(remaining, 0.001))
        headers = self._credentials.headers()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.stats.http_requests += 1
        try:
            async with asyncio.timeout(remaining):
                # The form encoded here, not by aiohttp's FormData (a third of a small query's client
                # CPU); Accept-Encoding only with the compression setting (see PrometheusSettings).
                async with session.post(url, data=urlencode(body).encode(), headers=headers,
                                        skip_auto_headers=self._skip_headers) as response:
                    payload = await response.read()
                    status = response.status
                    content_type = response.headers.get("Content-Type", "")
        except TimeoutError:
            raise self._timeout() from None
        except aiohttp.ClientSSLError as exc:
            raise PrometheusUnreachable(self._redact(
                f"TLS handshake with Prometheus at {self.settings.display_url} failed: {exc}")) from None
        except aiohttp.ClientConnectorError as exc:
            raise _Retry(PrometheusUnreachable(self._redact(
                f"Prometheus at {self.settings.display_url} is unreachable: {_reason(exc)}"))) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise _Retry(PrometheusUnreachable(self._redact(
                f"connection to Prometheus at {self.settings.display_url} failed: "
                f"{type(exc).__name__}: {_reason(exc)}"))) from None
        return self._interpret(status, content_type, payload)

    def _timeout(self) -> PrometheusTimeout:
        return PrometheusTimeout(f"Prometheus at {self.settings.display_url} did not answer within "
                                 f"{self.settings.timeout_seconds:g}s")

    def _redact(self, text: str) -> str:
        return self._credentials.redact(text)

    def _interpret(self, status: int, content_type: str, payload: bytes) -> Any:
        document: Any = None
        try:
            # orjson: Prometheus' answers are the service's largest input (tens of thousands of
            # series a sync period), and it decodes them in less than half json's time.
            document = orjson.loads(payload)
        except (ValueError, UnicodeDecodeError):
            document = None
        if 200 <= status < 300:
            if document is None:
                snippet = _snippet(payload)
                raise PrometheusMalformedResponse(self._redact(
                    f"malformed Prometheus response from {self.settings.display_url}: not JSON "
                    f"({content_type or 'no content type'}): {snippet!r}"))
            return document
        error_type = error_text = ""
        if isinstance(document, dict):
            error_type = str(document.get("errorType") or "")
            error_text = str(document.get("error") or "")
        detail = error_text or _snippet(payload)
        detail = self._redact(detail[:_ERROR_TEXT_LIMIT])
        where = f"Prometheus at {self.settings.display_url}"
        label = f"{error_type}: " if error_type else ""
        if status in (400, 422):
            raise PrometheusBadQuery(f"{where} rejected the query (HTTP {status}, {label}{detail})",
                                     status=status, error_type=error_type, error=detail)
        if status == 503 and error_type == "timeout":
            raise PrometheusTimeout(f"{where} timed the query out (HTTP 503, {label}{detail})")
        hint = " (check the credentials)" if status in (401, 403) else ""
        error = PrometheusHTTPError(f"{where} answered HTTP {status}{hint}: {label}{detail}",
                                    status=status, error_type=error_type, error=detail)
        if status in _RETRYABLE_STATUS or status == 401:
            raise _Retry(error)
        raise error


def _snippet(payload: bytes) -> str:
    text = payload[:200].decode("utf-8", errors="replace")
    return " ".join(text.split()) or "(empty body)"


def _reason(exc: BaseException) -> str:
    os_error = getattr(exc, "os_error", None)
    if isinstance(os_error, OSError) and os_error.strerror:
        return os_error.strerror
    return str(exc) or type(exc).__name__
