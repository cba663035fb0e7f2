"""Typed failures of the Prometheus HTTP API.

Every error names what went wrong in words an operator can act on, and the Prometheus it talked
to (URL without credentials). None of them ever carries a token, a password or a header value:
messages are built only from the URL, the HTTP status and Prometheus' own error text.
"""

from __future__ import annotations


class PrometheusError(Exception):
    """Base class. ``kind`` is a short stable word for metrics labels and status reasons."""

    kind = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class PrometheusUnreachable(PrometheusError):
    """No HTTP answer: connection refused or reset, DNS failure, TLS handshake failure."""

    kind = "unreachable"


class PrometheusTimeout(PrometheusError):
    """No complete answer within the call's deadline, or Prometheus itself timed the query out."""

    kind = "timeout"


class PrometheusHTTPError(PrometheusError):
    """An HTTP error status. ``error_type`` and ``error`` are Prometheus' own ``errorType`` and
    ``error`` fields when the body carried them (a proxy's HTML page leaves them empty)."""

    kind = "http"

    def __init__(self, message: str, *, status: int, error_type: str = "", error: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.error = error


class PrometheusBadQuery(PrometheusHTTPError):
    """HTTP 400 (``bad_data``: the PromQL does not parse) or 422 (``execution``: it cannot run).

    Retrying cannot help: the query or its template must change.
    """

    kind = "bad_query"


class PrometheusPartialAnswer(PrometheusError):
    """The backend could not read every store or storage node: it answered with part of the data
    (a range query's answer marked partial), or, told not to answer partially, failed the query (Thanos'
    HTTP 422 naming the store). Not the query's fault: the next attempt may be whole."""

    kind = "partial"


class PrometheusResponseTooLarge(PrometheusError):
    """An answer larger than ``prometheus.maxResponseBytes``: it was not read past the cap. The query
    selects too many series (an unaggregated selector, a missing label matcher); retrying cannot help."""

    kind = "too_large"


class PrometheusMalformedResponse(PrometheusError):
    """An answer that is not the Prometheus API's JSON envelope (or not the result type asked for)."""

    kind = "malformed"


class PrometheusRedirect(PrometheusError):
    """A redirect that is not followed (``prometheus.followRedirects``; never to another origin): its
    Location's answer would be another server's, and following it would re-send the credentials there.
    Final: the URL setting must change."""

    kind = "redirect"
