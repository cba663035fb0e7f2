"""What the client does with a redirect (``prometheus.followRedirects``).

A redirect's answer is another server's, and following it re-sends the query's form and the credentials
(the ``Authorization`` header, every configured header, every ``queryParameters`` value). aiohttp follows
redirects by default, and it re-sent all of them to whatever host a ``Location`` named, then the service
scaled on that host's answer. So:

* ``never`` (the default): no redirect is followed; the query fails with :class:`PrometheusRedirect`
  naming the Location (final: not retried; the URL setting must change).
* ``sameOrigin``: a redirect to the same origin as ``prometheus.url`` (scheme, host and port all equal) is
  followed, at most :data:`MAX_REDIRECTS` in a row. A query (a POST with its form) is sent again as the
  same POST with the same form after a 301, 302, 307 or 308 (RFC 9110 lets a client keep the method of a
  301/302; turning it into a GET, as browsers do, would drop the form, and the query with it); a 303 (See
  Other: GET another resource) is not followed, as the query's answer is not there. A GET (``/-/ready``)
  follows all five as a GET.
* Whatever the setting, a redirect to another origin, or to a URL with credentials in it, is never followed.

The Location shown in a message is the resolved URL without its user information, and without its query
string (``?…``): a Location may carry anything, an echo of the form (the secrets in it) or a signed URL.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urljoin, urlsplit

from autoscaler.prometheus.connection_settings import FOLLOW_SAME_ORIGIN
from autoscaler.prometheus.errors import PrometheusRedirect

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 3
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SHOWN_LIMIT = 300


def origin(parts: SplitResult) -> tuple[str, str, int | None]:
    """A URL's origin: its scheme, host (lower case) and port (the scheme's default when it has none)."""
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: an origin no other equals
        port = -1
    return scheme, (parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)


def shown_location(location: str) -> str:
    """``location`` as a message may show it (see the module docstring)."""
    try:
        parts = urlsplit(location)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(a Location that is not a URL)"
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address
    where = f"{parts.scheme}://{host}{f':{port}' if port is not None else ''}" if parts.scheme else ""
    shown = where + parts.path + ("?…" if parts.query else "")
    return shown if len(shown) <= _SHOWN_LIMIT else shown[:_SHOWN_LIMIT] + "…"


class Redirects:
    """The redirect policy of one Prometheus: ``follow`` is ``prometheus.followRedirects``."""

    def __init__(self, url: str, follow: str) -> None:
        self._origin = origin(urlsplit(url))
        self._url = url
        self._follow = follow

    def next_url(self, url: str, status: int, location: str | None, hops: int, method: str) -> str:
        """Where to send the request that was answered ``status`` with ``location``, after ``hops`` redirects
        already followed; raises :class:`PrometheusRedirect` when it is not to be followed."""
        if not location:
            raise self._refused(status, "(no Location)", "the answer names no Location")
        target = urljoin(url, location.strip())
        shown = shown_location(target)
        parts = urlsplit(target)
        if self._follow != FOLLOW_SAME_ORIGIN:
            raise self._refused(
                status,
                shown,
                "redirects are not followed (prometheus.followRedirects: never); set prometheus.url to where "
                "the API answers, or allow redirects to the same origin (prometheus.followRedirects: sameOrigin)",
            )
        if origin(parts) != self._origin:
            raise self._refused(
                status,
                shown,
                "another origin (scheme, host and port): credentials are never sent to another origin, whatever "
                "prometheus.followRedirects says; set prometheus.url to where the API answers",
            )
        if parts.username is not None or parts.password is not None:
            raise self._refused(status, shown, "the Location holds credentials of its own")
        if status == 303 and method != "GET":
            raise self._refused(status, shown, "HTTP 303 asks for a GET of another resource, not the query's answer")
        if hops >= MAX_REDIRECTS:
            raise self._refused(status, shown, f"more than {MAX_REDIRECTS} redirects in a row")
        return parts._replace(fragment="").geturl()

    def _refused(self, status: int, shown: str, why: str) -> PrometheusRedirect:
        return PrometheusRedirect(
            f"Prometheus at {self._url} answered with a redirect (HTTP {status}) to {shown}, not followed: {why}"
        )
