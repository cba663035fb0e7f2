"""What one HTTP attempt's outcome means: an answer's body, the error an error answer stands for, and
whether another attempt may help.

* Answers are read up to ``maxResponseBytes`` (past it the call fails with
  :class:`~autoscaler.prometheus.errors.PrometheusResponseTooLarge`, and the rest is never read).
* A body that is not JSON is :class:`~autoscaler.prometheus.errors.PrometheusMalformedResponse`, with a
  snippet of what came instead (a proxy's HTML page).
* An error status becomes a typed error with Prometheus' own ``errorType`` and ``error``: 400/422 is a
  bad query (final), 503 ``timeout`` a timeout (final), a Thanos 422 naming a store that did not answer a
  partial answer (the query is fine, the backend is not). A 429, 500, 502, 503 or 504 may be retried;
  so may a 401, once, when the client can re-read a token that may have rotated.
* A refused or reset connection may be retried; a kept-alive connection the server closed is marked so
  that the client re-dials it at once; a TLS failure is final.

Apart from the client (:mod:`autoscaler.prometheus.client`), which owns the session, the slots, the
deadlines and the retry loop: this module only says what happened, in words an operator can act on,
never with a credential in them (every text passes through the redaction).
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Any

import aiohttp
import orjson

from autoscaler.prometheus.errors import (
    PrometheusBadQuery,
    PrometheusError,
    PrometheusHTTPError,
    PrometheusMalformedResponse,
    PrometheusPartialAnswer,
    PrometheusResponseTooLarge,
    PrometheusTimeout,
    PrometheusUnreachable,
)
from autoscaler.prometheus.partial import names_a_store_failure
from autoscaler.prometheus.settings import PrometheusSettings

_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_ERROR_TEXT_LIMIT = 500
_SNIPPET_LIMIT = 200
# What of an error text (characters) or a body (bytes) is redacted before it is cut to the limits above.
_SNIPPET_WINDOW = 64 * 2**10
# Errors of a connection the server closed or reset before answering: re-dialled without counting
# as a retry (a restarted Prometheus drops every kept-alive connection of the pool at once).
_RESET_ERRNOS = frozenset({errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED})
# The same errors as types: aiohttp raises its own resets without an errno.
_DROPPED_ERRORS = (aiohttp.ServerDisconnectedError, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class Retry(Exception):
    """An attempt failed in a way another attempt may fix; carries the error to raise otherwise."""

    def __init__(self, error: PrometheusError, *, dropped_connection: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.dropped_connection = dropped_connection


class Answers:
    """The meaning of one Prometheus' answers; ``redact`` takes the credentials out of a text."""

    def __init__(self, settings: PrometheusSettings, redact: Callable[[str], str]) -> None:
        self.settings = settings
        self._redact = redact

    async def read_capped(self, response: aiohttp.ClientResponse) -> bytearray:
        """The body, read no further than ``maxResponseBytes``. Grown chunk by chunk: joining a large
        answer's chunks at the end would copy it all in one step on the event loop."""
        cap = self.settings.max_response_bytes
        length = response.content_length
        if length is not None and length > cap and not response.headers.get("Content-Encoding"):
            response.close()
            raise self._too_large()
        body = bytearray()
        async for chunk in response.content.iter_any():
            if len(body) + len(chunk) > cap:
                response.close()  # the rest is never read: the connection is dropped, not reused
                raise self._too_large()
            body += chunk
        return body

    def _too_large(self) -> PrometheusResponseTooLarge:
        # Not the answer's size: it changes from answer to answer, and the failure's condition would be
        # written again at every sync (issue 37, item 10); the limit is what the operator acts on.
        return PrometheusResponseTooLarge(
            f"Prometheus at {self.settings.display_url} answered more than prometheus.maxResponseBytes "
            f"({self.settings.max_response_bytes} bytes): the query selects too many series; narrow or aggregate it"
        )

    def decode(self, payload: bytearray, content_type: str) -> Any:
        try:
            # orjson: Prometheus' answers are the service's largest input (tens of thousands of
            # series a sync period), and it decodes them in less than half json's time.
            return orjson.loads(payload)
        except (ValueError, UnicodeDecodeError):
            raise PrometheusMalformedResponse(
                self._redact(
                    f"malformed Prometheus response from {self.settings.display_url}: not JSON "
                    f"({content_type or 'no content type'}): {_snippet(payload, self._redact)!r}"
                )
            ) from None

    def interpret(self, status: int, content_type: str, payload: bytearray) -> tuple[bytearray, str]:
        """The payload of a 2xx answer; the error an error answer stands for (wrapped in :class:`Retry`
        when another attempt may help)."""
        if 200 <= status < 300:
            return payload, content_type
        document: Any = None
        try:
            document = orjson.loads(payload)
        except (ValueError, UnicodeDecodeError):
            document = None
        error_type = error_text = ""
        if isinstance(document, dict):
            error_type = str(document.get("errorType") or "")
            error_text = str(document.get("error") or "")
        # Redacted, then cut: a cut first could leave part of a secret, which no redaction knows.
        window = error_text[:_SNIPPET_WINDOW]
        detail = self._redact(window)[:_ERROR_TEXT_LIMIT] if error_text else _snippet(payload, self._redact)
        where = f"Prometheus at {self.settings.display_url}"
        label = f"{error_type}: " if error_type else ""
        if status == 422 and names_a_store_failure(detail):
            # Thanos told partial_response=false, with a store down: the query is fine, the backend is not.
            raise PrometheusPartialAnswer(
                f"partial answer from {self.settings.display_url}: {detail} (HTTP 422: partial answers are "
                "denied (prometheus.denyPartialResponse), so the query failed instead)"
            )
        if status in (400, 422):
            raise PrometheusBadQuery(
                f"{where} rejected the query (HTTP {status}, {label}{detail})",
                status=status,
                error_type=error_type,
                error=detail,
            )
        if status == 503 and error_type == "timeout":
            raise PrometheusTimeout(f"{where} timed the query out (HTTP 503, {label}{detail})")
        hint = " (check the credentials)" if status in (401, 403) else ""
        error = PrometheusHTTPError(
            f"{where} answered HTTP {status}{hint}: {label}{detail}", status=status, error_type=error_type, error=detail
        )
        if status in _RETRYABLE_STATUS or status == 401:
            raise Retry(error)
        raise error

    def connection_failure(self, exc: aiohttp.ClientError | OSError) -> PrometheusError | Retry:
        """What to raise for an attempt that got no answer (a timeout is the caller's: it knows the
        deadline)."""
        display_url = self.settings.display_url
        if isinstance(exc, aiohttp.ClientSSLError):
            return PrometheusUnreachable(self._redact(f"TLS handshake with Prometheus at {display_url} failed: {exc}"))
        if isinstance(exc, aiohttp.ClientConnectorError):
            return Retry(
                PrometheusUnreachable(self._redact(f"Prometheus at {display_url} is unreachable: {_reason(exc)}"))
            )
        return Retry(
            PrometheusUnreachable(
                self._redact(f"connection to Prometheus at {display_url} failed: {type(exc).__name__}: {_reason(exc)}")
            ),
            dropped_connection=_dropped(exc),
        )


def _dropped(exc: BaseException) -> bool:
    """Whether the server closed or reset the connection under the request. aiohttp wraps a reset met
    while writing the body as ``ClientOSError(None, "Can not write request body")`` caused by its own
    ``ClientConnectionResetError`` (no errno either), so the causes are looked at too."""
    seen: BaseException | None = exc
    for _ in range(4):  # aiohttp wraps at most twice; a bound, not a walk of any chain
        if seen is None:
            return False
        if isinstance(seen, _DROPPED_ERRORS) or (isinstance(seen, OSError) and seen.errno in _RESET_ERRNOS):
            return True
        seen = seen.__cause__
    return False


def _snippet(payload: bytes | bytearray, redact: Callable[[str], str]) -> str:
    """The start of a body that is not Prometheus' JSON (a proxy's page), as one line of 200 characters at
    most, redacted before it is cut (a secret across the cut would be left in part)."""
    text = redact(payload[:_SNIPPET_WINDOW].decode("utf-8", errors="replace"))
    return " ".join(text.split())[:_SNIPPET_LIMIT] or "(empty body)"


def _reason(exc: BaseException) -> str:
    os_error = getattr(exc, "os_error", None)
    if isinstance(os_error, OSError) and os_error.strerror:
        return os_error.strerror
    return str(exc) or type(exc).__name__
