"""An asyncio client for the Prometheus HTTP API on one shared aiohttp session.

* One :class:`aiohttp.ClientSession` per Prometheus for the life of the app: the connection pool
  does not grow with the number of targets (KEDA's per-scaler transports re-dialled O(N)).
* At most ``concurrency`` requests in flight (Prometheus runs 20 queries at once and queues the
  rest, so more only adds latency).
* Every call has a deadline of ``timeout_seconds`` from the moment it is made (or the caller's
  earlier ``deadline``), covering the wait for a free slot and all its retries: waiting for a slot
  behind another target's slow queries is bounded too. Prometheus is told the budget that is left
  (``timeout=``) so it stops working when we stop waiting. aiohttp's own default (300 s) would be 20
  sync periods.
* Retries only where they are safe and can help: the queries are reads, so repeating one is
  harmless, but only a refused/reset connection, 429, 500, 502, 503 (not a query timeout) and 504
  are retried, with exponential backoff and full jitter, and never past the deadline. A 400/422
  (the query is wrong), a timeout (the budget is spent) or a TLS failure is final at once. A kept-alive
  connection the server closed (a Prometheus restart drops them all) is re-dialled at once (up to three
  times: other pooled connections may be dead too), as
  Go's transport does for idempotent requests, without counting as a retry.
* Queries are POSTed as a form (no URL length limit). A live query (``at=None``) sends no ``time=``:
  Prometheus evaluates it at its own time, so a skewed clock here cannot make the data stale or
  absent. Each answer's ``Date`` header is handed to ``observe_server_time`` to measure the skew.
* No redirect is followed unless ``prometheus.followRedirects`` allows it, and then to the same origin
  only (:mod:`autoscaler.prometheus.redirects`): a redirect must not carry the credentials elsewhere.
* Answers are read up to ``maxResponseBytes`` (past it the call fails with
  :class:`PrometheusResponseTooLarge`); one larger than ``largeResponseBytes`` is decoded on the loop
  ~256 KiB at a time with a turn for the loop between (see :func:`instant_in_slices` and
  :mod:`autoscaler.loop.turns`), so it never stalls the event loop.

What an attempt's outcome means (a body, an error status, a failed connection; whether to try again) is
:mod:`autoscaler.prometheus.answers`; this module makes the calls.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from types import TracebackType
from urllib.parse import urlencode

import aiohttp

from autoscaler.loop.turns import collector_paused, in_turns
from autoscaler.prometheus.answers import Answers, Retry
from autoscaler.prometheus.auth import Credentials, SecretSource, build_ssl_context
from autoscaler.prometheus.errors import (
    PrometheusError,
    PrometheusHTTPError,
    PrometheusMalformedResponse,
    PrometheusPartialAnswer,
    PrometheusTimeout,
)
from autoscaler.prometheus.partial import partial_cause
from autoscaler.prometheus.promql import format_time
from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.prometheus.redirects import REDIRECT_STATUSES, Redirects
from autoscaler.prometheus.results import (
    InstantResult,
    RangeResult,
    SeriesFilter,
    parse_instant,
    parse_range,
)
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.prometheus.slicing import SeriesSink, instant_in_slices
from autoscaler.values.durations import format_prometheus_duration

_BACKOFF_BASE = 0.05
_BACKOFF_CAP = 1.0
USER_AGENT = "autoscaler-prometheus/0.1"
# Connections the server closed (see answers.Retry.dropped_connection) re-dialled at once, per call.
_REDIALS = 3

# (the server's time from its Date header, and this client's clock when the request was sent and when
# the answer's headers arrived), all Unix seconds.
ServerTimeObserver = Callable[[float, float, float], None]


@dataclass
class ClientStats:
    """Counters for the app's own metrics and for benchmarks."""

    calls: int = 0
    http_requests: int = 0
    retries: int = 0
    redials: int = 0
    large_answers: int = 0
    failures: dict[str, int] = field(default_factory=dict)


class PrometheusClient:
    """Use as ``async with PrometheusClient(settings) as client:`` (or :meth:`start`/:meth:`close`)."""

    def __init__(
        self,
        settings: PrometheusSettings,
        *,
        rng: Callable[[], float] = random.random,
        observe_server_time: ServerTimeObserver | None = None,
        clock: Callable[[], float] | None = None,
        secrets: KnownSecrets | None = None,
        secret_source: SecretSource | None = None,
    ) -> None:
        """``secrets``: the service's one redaction, which learns this client's secrets (its own otherwise);
        every text this client makes is redacted with it (:attr:`secrets`). ``secret_source``: where the
        settings' Secret references are read (the service's SecretStore)."""
        self.settings = settings
        self.stats = ClientStats()
        self._credentials = Credentials(settings, secrets, secret_source)
        self.secrets = self._credentials.secrets
        self._redirects = Redirects(settings.url, settings.follow_redirects)
        self._answers = Answers(settings, self._credentials.redact)
        self._rng = rng
        self._observe_server_time = observe_server_time
        self._clock = clock or time.time
        self._session: aiohttp.ClientSession | None = None
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._skip_headers: tuple[str, ...] = () if settings.compression else ("Accept-Encoding",)

    async def __aenter__(self) -> PrometheusClient:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        if self._session is not None:
            return
        # Reading CA/cert/key files blocks: do it off the event loop, once.
        ssl_context = await asyncio.to_thread(build_ssl_context, self.settings)
        connector = aiohttp.TCPConnector(limit=self.settings.concurrency + 2, ssl=ssl_context)
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None),
            headers={"User-Agent": USER_AGENT},
            raise_for_status=False,
        )

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    # -- public API -----------------------------------------------------------------------------

    async def query(
        self,
        promql: str,
        at: float | None = None,
        *,
        deadline: float | None = None,
        keep: SeriesFilter | None = None,
        sink: SeriesSink | None = None,
    ) -> InstantResult:
        """Evaluate ``promql`` at Unix time ``at``, or at Prometheus' own "now" when ``at`` is None
        (``POST /api/v1/query``). ``deadline`` (event-loop time) ends the call earlier than
        ``timeoutSeconds`` would. ``keep``: the series the caller wants; a large answer is parsed
        without the others (counted in ``left_out``), a small one keeps everything. ``sink``: where a
        vector's series go as they are decoded, whatever the answer's size (see
        :func:`~autoscaler.prometheus.slicing.instant_in_slices`)."""
        form = {"query": promql} if at is None else {"query": promql, "time": format_time(at)}
        payload, content_type = await self._call("/api/v1/query", form, deadline)
        large = len(payload) > self.settings.large_response_bytes
        try:
            if large or sink is not None:
                self.stats.large_answers += large
                return await in_turns(instant_in_slices(payload, keep, sink=sink))
            with collector_paused():  # the decoded answer is freed before the collector could find it
                return parse_instant(self._answers.decode(payload, content_type))
        except PrometheusMalformedResponse:
            self.stats.failures["malformed"] = self.stats.failures.get("malformed", 0) + 1
            if not large:
                self._answers.decode(payload, content_type)  # not JSON at all: its message names the server
            raise

    async def query_range(self, promql: str, start: float, end: float, step: float) -> RangeResult:
        """Evaluate ``promql`` over ``[start, end]`` every ``step`` seconds (``/api/v1/query_range``).
        A partial answer (see :mod:`autoscaler.prometheus.partial`) raises
        :class:`PrometheusPartialAnswer`: history with holes is not history (``autoscaler backtest``)."""
        form = {
            "query": promql,
            "start": format_time(start),
            "end": format_time(end),
            "step": format_prometheus_duration(step),
        }
        payload, content_type = await self._call("/api/v1/query_range", form, None)
        if len(payload) > self.settings.large_response_bytes:
            # History for a backtest (no sync waits on it): in a worker thread, whole.
            result = await asyncio.to_thread(lambda: parse_range(self._answers.decode(payload, content_type)))
        else:
            result = parse_range(self._answers.decode(payload, content_type))
        cause = partial_cause(result)
        if cause is not None:
            self.stats.failures["partial"] = self.stats.failures.get("partial", 0) + 1
            raise PrometheusPartialAnswer(self._redact(f"partial answer from {self.settings.display_url}: {cause}"))
        return result

    async def ready(self) -> bool:
        """Whether ``/-/ready`` answers 200 within the timeout; never raises. Where the URL has no
        ``/-/ready`` beneath it (404: a path prefix that serves only the query API; current vmselect
        serves one under ``/select/<tenant>/prometheus``, older ones did not), whether a trivial query
        (``1``) is answered."""
        self._require_session()
        try:
            async with asyncio.timeout(self.settings.timeout_seconds):
                status, _, _ = await self._exchange("GET", "/-/ready", None, self._credentials.headers())
                if status != 404:
                    return status == 200
                headers = self._credentials.headers()
                headers["Content-Type"] = "application/x-www-form-urlencoded"
                body = urlencode({**self.settings.request_parameters, "query": "1"}).encode()
                status, _, _ = await self._exchange("POST", "/api/v1/query", body, headers)
                return status == 200
        except (TimeoutError, aiohttp.ClientError, OSError, PrometheusError):
            return False

    # -- internals ------------------------------------------------------------------------------

    def _require_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("PrometheusClient used before start() (use it as an async context manager)")
        return self._session

    async def _call(self, path: str, form: Mapping[str, str], deadline: float | None) -> tuple[bytearray, str]:
        """The body and content type of a successful answer; raises a :class:`PrometheusError` otherwise."""
        self._require_session()
        self.stats.calls += 1
        loop = asyncio.get_running_loop()
        own = loop.time() + self.settings.timeout_seconds
        deadline = own if deadline is None else min(own, deadline)
        try:
            try:
                async with asyncio.timeout_at(deadline):
                    await self._slots.acquire()
            except TimeoutError:
                raise PrometheusTimeout(
                    f"no free slot for a query to Prometheus at {self.settings.display_url} before the "
                    f"query's deadline (at most {self.settings.timeout_seconds:g}s): all "
                    f"{self.settings.concurrency} slots (prometheus.concurrency) were busy"
                ) from None
            try:
                return await self._call_with_retries(path, form, deadline)
            finally:
                self._slots.release()
        except PrometheusError as error:
            self.stats.failures[error.kind] = self.stats.failures.get(error.kind, 0) + 1
            raise

    async def _call_with_retries(self, path: str, form: Mapping[str, str], deadline: float) -> tuple[bytearray, str]:
        loop = asyncio.get_running_loop()
        attempt = 0
        refreshed_credentials = False
        redials = _REDIALS
        while True:
            try:
                return await self._attempt(path, form, deadline)
            except Retry as retry:
                error, dropped_connection = retry.error, retry.dropped_connection
            # Decided outside the handler: an error raised in it would keep the Retry (its __context__),
            # which keeps the error, a cycle for the collector; and the local goes with the frame (finally).
            try:
                if dropped_connection and redials:
                    # The server closed a kept-alive connection (a restart): another one, now. The pool may
                    # hand out another connection of the same restart whose reset the loop has not read yet
                    # (seen under load), so a few times, not once.
                    redials -= 1
                    self.stats.redials += 1
                    continue
                if (
                    isinstance(error, PrometheusHTTPError)
                    and error.status == 401
                    and self._credentials.refreshable
                    and not refreshed_credentials
                ):
                    # The token may have rotated under us: re-read it once and try again now.
                    refreshed_credentials = True
                    await self._credentials.refresh()
                    continue
                if isinstance(error, PrometheusHTTPError) and error.status == 401:
                    raise error
                attempt += 1
                delay = self._rng() * min(_BACKOFF_CAP, _BACKOFF_BASE * 2**attempt)
                if attempt > self.settings.retries or loop.time() + delay >= deadline:
                    raise error
                self.stats.retries += 1
                await asyncio.sleep(delay)
            finally:
                del error

    async def _attempt(self, path: str, form: Mapping[str, str], deadline: float) -> tuple[bytearray, str]:
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise self._timeout()
        body = dict(self.settings.request_parameters)
        body.update(form)
        # Tell Prometheus our budget so it abandons the query when we do.
        body["timeout"] = format_prometheus_duration(max(remaining, 0.001))
        headers = self._credentials.headers()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            async with asyncio.timeout(remaining):
                # The form encoded here, not by aiohttp's FormData (a third of a small query's client CPU).
                status, content_type, payload = await self._exchange("POST", path, urlencode(body).encode(), headers)
        except TimeoutError:
            raise self._timeout() from None
        except (aiohttp.ClientError, OSError) as exc:
            failure = self._answers.connection_failure(exc)
        else:
            return self._answers.interpret(status, content_type, payload)
        # Raised outside the handler, so that it does not keep the connection's exception (__context__),
        # whose tracebacks and frames are cycles; and the local goes with the frame (finally).
        try:
            raise failure
        finally:
            del failure

    async def _exchange(
        self, method: str, path: str, data: bytes | None, headers: Mapping[str, str]
    ) -> tuple[int, str, bytearray]:
        """One request to ``path`` under the URL, and the redirects the settings let it follow (never
        aiohttp's own: :mod:`autoscaler.prometheus.redirects`): the status, content type and body of the
        answer that is not a redirect. Accept-Encoding only with the compression setting."""
        session = self._require_session()
        url = self.settings.url + path
        hops = 0
        while True:
            self.stats.http_requests += 1
            sent = self._clock()
            async with session.request(
                method, url, data=data, headers=headers, skip_auto_headers=self._skip_headers, allow_redirects=False
            ) as response:
                self._server_time(response.headers.get("Date"), sent)
                status = response.status
                if status not in REDIRECT_STATUSES:
                    return status, response.headers.get("Content-Type", ""), await self._answers.read_capped(response)
                location = response.headers.get("Location")
            url = self._redirects.next_url(url, status, location, hops, method)
            hops += 1

    def _server_time(self, date: str | None, sent: float) -> None:
        if self._observe_server_time is None or not date:
            return
        try:
            server = parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError, IndexError):
            return
        self._observe_server_time(server, sent, self._clock())

    def _timeout(self) -> PrometheusTimeout:
        return PrometheusTimeout(
            f"Prometheus at {self.settings.display_url} did not answer within {self.settings.timeout_seconds:g}s"
        )

    def _redact(self, text: str) -> str:
        return self._credentials.redact(text)
