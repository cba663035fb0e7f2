"""Sending the reader's queries, so that one target's trouble stays its own.

* A target's own queries (Object/External) take at most ``targetConcurrency`` of the client's slots at
  once, and waiting for one counts against the query's deadline: a target with many slow queries cannot
  starve the others.
* A query Prometheus rejects as invalid (HTTP 400/422) is not sent again until a slow, jittered backoff
  has passed (``invalidQueryBackoffSeconds``, doubling up to ``invalidQueryBackoffMaxSeconds``); until
  then its metrics fail at once with Prometheus' text.
* A failure that lasts reads the same at every sync (its metrics' condition is written once, not every
  period): every timeout is "did not answer within Ns", whether the deadline passed waiting for a slot,
  for this target's share of them, for the answer, or Prometheus gave up first (HTTP 503 ``timeout``); and
  the values a backend's own error text changes at every sync are shown as placeholders
  (:func:`~autoscaler.core.conditions.steady_message`). What the condition leaves out is logged, once a
  minute per kind of failure.

Apart from the reader (:mod:`autoscaler.prometheus.reader`) because it is the only part of it that keeps
state across syncs about the queries themselves, and the only one that talks to the client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import structlog

from autoscaler.core.conditions import steady_message
from autoscaler.prometheus.errors import (
    PrometheusBadQuery,
    PrometheusError,
    PrometheusHTTPError,
    PrometheusPartialAnswer,
    PrometheusTimeout,
    PrometheusUnreachable,
)
from autoscaler.prometheus.results import InstantResult, SeriesFilter
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.prometheus.slicing import SeriesSink

# The reader's log: what an operator filters on does not depend on how the reader is cut into modules.
log = logging.getLogger("autoscaler.prometheus.reader")
detail_log = structlog.get_logger("autoscaler.prometheus.reader")

QUERY_IN_MESSAGE_LIMIT = 300
_REJECTED_REMEMBERED = 10_000  # rejected queries remembered before the expired ones are forgotten
BACKOFF_NOTE = "; the query is invalid: it is sent again only after a slow backoff"
DETAIL_LOG_SECONDS = 60.0  # a failure's full text is logged once a minute per kind of failure (its steady text)
_DETAILS_REMEMBERED = 1_000


class InstantQuerier(Protocol):
    """What the reader needs from a client: :class:`~autoscaler.prometheus.client.PrometheusClient`, or a
    stand-in that answers from data fetched beforehand (``autoscaler backtest`` answers from range
    queries)."""

    async def query(
        self,
        promql: str,
        at: float | None,
        *,
        deadline: float | None = None,
        keep: SeriesFilter | None = None,
        sink: SeriesSink | None = None,
    ) -> InstantResult: ...


class StillRejected(Exception):
    """The query was rejected as invalid and its backoff has not passed."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class _Rejected:
    """A query Prometheus rejected as invalid, and when it may be sent again (event-loop time)."""

    message: str
    retry_at: float
    failures: int


class _TargetShares:
    """Each target's share of the client's query slots (``targetConcurrency``), made on first use and
    dropped when the target has nothing in flight."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._shares: dict[tuple[str, str], tuple[asyncio.Semaphore, list[int]]] = {}

    async def acquire(self, key: tuple[str, str], deadline: float) -> None:
        semaphore, users = self._shares.setdefault(key, (asyncio.Semaphore(self._size), [0]))
        users[0] += 1
        try:
            async with asyncio.timeout_at(deadline):
                await semaphore.acquire()
        except BaseException:
            self._leave(key, users)
            raise

    def release(self, key: tuple[str, str]) -> None:
        semaphore, users = self._shares[key]
        semaphore.release()
        self._leave(key, users)

    def _leave(self, key: tuple[str, str], users: list[int]) -> None:
        users[0] -= 1
        if users[0] == 0:
            del self._shares[key]


class QuerySender:
    def __init__(self, client: InstantQuerier, settings: PrometheusSettings, rng: Callable[[], float]) -> None:
        self._client = client
        self._settings = settings
        self._rng = rng
        self._shares = _TargetShares(settings.per_target_concurrency)
        self._rejected: dict[str, _Rejected] = {}  # by query text (see send)
        self._detail_logged: dict[str, float] = {}  # when each kind of failure's full text was last logged

    async def send(
        self,
        query: str,
        at: float | None,
        *,
        deadline: float,
        keep: SeriesFilter | None = None,
        sink: SeriesSink | None = None,
        share: tuple[str, str] | None = None,
    ) -> InstantResult:
        """Send one query, unless Prometheus rejected it as invalid and its backoff has not passed (then
        raise :class:`StillRejected` at once, with the same message). ``deadline`` (event-loop time): the
        read's, which every query of it shares (:meth:`~autoscaler.prometheus.reader.MetricsReader.read`).
        ``share``: the one target the query is read for, whose share of the slots it must wait for."""
        failure: PrometheusError | None = None
        try:
            return await self._send(query, at, deadline, keep, sink, share)
        except PrometheusTimeout as error:
            failure = self._timed_out(error)
        except PrometheusError as error:
            text = str(error)
            steady = steady_message(text)
            if steady != text:
                self._log_detail("Prometheus query failed", text, steady, steady)
            raise
        # Raised outside the handler, so that it does not keep the first error (its __context__), whose
        # traceback's frames are a cycle; and the local goes with the frame (finally).
        try:
            raise failure
        finally:
            del failure

    async def _send(
        self,
        query: str,
        at: float | None,
        deadline: float,
        keep: SeriesFilter | None,
        sink: SeriesSink | None,
        share: tuple[str, str] | None,
    ) -> InstantResult:
        loop = asyncio.get_running_loop()
        rejected = self._rejected.get(query)
        if rejected is not None and loop.time() < rejected.retry_at:
            raise StillRejected(rejected.message)
        if share is not None:
            try:
                await self._shares.acquire(share, deadline)
            except TimeoutError:
                raise PrometheusTimeout(
                    f"no query slot within {self._settings.timeout_seconds:g}s: this target's own queries "
                    f"may use {self._settings.per_target_concurrency} at once (prometheus.targetConcurrency), "
                    "and its other queries held them"
                ) from None
        try:
            result = await self._client.query(query, at, deadline=deadline, keep=keep, sink=sink)
        except PrometheusBadQuery as error:
            self._reject(query, query_error_message(error, query), rejected)
            raise
        finally:
            if share is not None:
                self._shares.release(share)
        if rejected is not None:
            del self._rejected[query]
        return result

    def _timed_out(self, error: PrometheusTimeout) -> PrometheusTimeout:
        """The one timeout every timeout of a query is reported as (its detail logged): where the deadline
        ran out (a slot, this target's share, the answer, or Prometheus' own ``timeout=``) changes from sync
        to sync for the same slow backend, and a condition that said so was written at every sync."""
        steady = PrometheusTimeout(
            f"Prometheus at {self._settings.display_url} did not answer within {self._settings.timeout_seconds:g}s"
        )
        text = str(error)
        if text != str(steady):
            self._log_detail("Prometheus query timed out", text, str(steady), _wait_of(text))
        return steady

    def _log_detail(self, event: str, text: str, shown: str, kind: str) -> None:
        """Log a failure's whole ``text``, of which its metrics' condition shows less (``shown``): once a
        minute per ``kind`` of failure (a line per failed query would be thousands a period in an outage)."""
        now = asyncio.get_running_loop().time()
        last = self._detail_logged.get(kind)
        if last is not None and now - last < DETAIL_LOG_SECONDS:
            return
        if len(self._detail_logged) >= _DETAILS_REMEMBERED:
            self._detail_logged.clear()
        self._detail_logged[kind] = now
        detail_log.warning(event, detail=text, condition_says=shown)

    def _reject(self, query: str, message: str, before: _Rejected | None) -> None:
        settings = self._settings
        failures = before.failures + 1 if before is not None else 1
        delay = min(
            settings.invalid_query_backoff_max_seconds, settings.invalid_query_backoff_seconds * 2 ** (failures - 1)
        )
        delay *= 0.75 + 0.25 * self._rng()  # jittered below the cap: many rejected queries do not align
        now = asyncio.get_running_loop().time()
        if len(self._rejected) > _REJECTED_REMEMBERED:  # queries no target reads any more: forget the expired ones
            self._rejected = {q: r for q, r in self._rejected.items() if r.retry_at > now}
        self._rejected[query] = _Rejected(message + BACKOFF_NOTE, now + delay, failures)
        log.warning("Prometheus rejected a query as invalid; it is retried after %.0f s: %s", delay, message)


def _wait_of(text: str) -> str:
    """Which wait a timeout's text says ran out, for logging each kind once a minute."""
    for kind in ("no free slot", "no query slot", "timed the query out", "did not answer"):
        if kind in text:
            return kind
    return steady_message(text)


def shown_query(query: str) -> str:
    """``query``, cut short for a message or a log line."""
    return query if len(query) <= QUERY_IN_MESSAGE_LIMIT else query[:QUERY_IN_MESSAGE_LIMIT] + "…"


def query_error_message(error: PrometheusError, query: str) -> str:
    """Why a query failed, for its metrics' failures (an invalid query is shown)."""
    message = f"querying Prometheus failed: {error}"
    if isinstance(error, PrometheusBadQuery):
        message += f"; query: {shown_query(query)}"
    return message


def is_backend_failure(error: PrometheusError) -> bool:
    """Whether ``error`` says the backend failed rather than the query: no answer in time, no connection,
    a 5xx or a 429, a partial answer. A rejected query, an answer too large or not the API's, a redirect,
    a 401/403/404 are the query's or the setup's: many targets failing so is no brownout of the backend."""
    if isinstance(error, PrometheusTimeout | PrometheusUnreachable | PrometheusPartialAnswer):
        return True
    return (
        isinstance(error, PrometheusHTTPError)
        and not isinstance(error, PrometheusBadQuery)
        and (error.status >= 500 or error.status == 429)
    )


def failed_query_message(error: PrometheusError, query: str) -> str:
    """The failure of every metric read with a query that failed with ``error``."""
    return query_error_message(error, query) + (BACKOFF_NOTE if isinstance(error, PrometheusBadQuery) else "")
