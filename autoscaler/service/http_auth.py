"""The HTTP server's token (``http.tokenFile``): who may read ``/api/…`` and ``/metrics``.

Without it, everything the server answers is open to whoever reaches the port: every target's status on
``/api/targets`` (names, replica counts, a backend's error texts), and ``/metrics``. Binding to loopback
(``http.address: 127.0.0.1``) or a NetworkPolicy (``manifests/networkpolicy.yaml``) limits who reaches
it; the token limits who is answered. With it, a request for anything but the probes must carry
``Authorization: Bearer <the file's token>``, compared in constant time; any other gets 401. ``/healthz``
and ``/readyz`` stay open: the kubelet's probes carry no token.

The file is read when the server starts (the service does not start without a token it can read), then
looked at again at most once a second and re-read when it changes, so a rotated Secret is picked up
without a restart (the file's last good token is kept while it cannot be read).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from aiohttp import web

from autoscaler.prometheus.auth import BearerTokenFile, PrometheusCredentialsError

# The paths answered without the token: the kubelet's probes.
OPEN_PATHS = frozenset({"/healthz", "/readyz"})
REALM = 'Bearer realm="autoscaler"'

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class TokenFileError(Exception):
    """The token file cannot be read (the message names the file and why, never a token)."""


class ApiToken:
    """The token of ``http.tokenFile`` and the middleware that asks for it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file = BearerTokenFile(path)

    def load(self) -> None:
        """Read the file now (blocking: a file read); raises :class:`TokenFileError` when it cannot."""
        try:
            self._file.token()
        except PrometheusCredentialsError as exc:
            raise TokenFileError(f"http.tokenFile: {exc}") from None

    def accepts(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries the token (compared in constant time)."""
        scheme, _, presented = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not presented:
            return False
        return hmac.compare_digest(presented.strip().encode(), self._file.token().encode())

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """aiohttp middleware: the probes pass; anything else needs the token."""
        if request.path in OPEN_PATHS or self.accepts(request.headers.get("Authorization")):
            return await handler(request)
        return web.json_response(
            {"error": "unauthorized: send Authorization: Bearer <the token of http.tokenFile>"},
            status=401,
            headers={"WWW-Authenticate": REALM},
        )
