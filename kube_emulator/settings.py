"""What the emulator's HTTP server is configured with: one frozen value.

:class:`~kube_emulator.server.KubeEmulator` builds it (and replaces it when the token changes); the request
pipeline (:mod:`kube_emulator.app`: the token, the server version) and the resource endpoints
(:mod:`kube_emulator.endpoints`: how watches are paced and how long they last) read it on every request.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServerSettings:
    bookmark_interval: float = 60.0
    """Seconds between BOOKMARK events on an idle watch that asked for them (the real server: ~1 min)."""
    default_watch_timeout: float = 1800.0
    """How long a watch without ``timeoutSeconds`` stays open (the real server: 30–60 min)."""
    watch_buffer: int = 10_000
    """Events buffered per watcher before it is closed as too slow."""
    token: str | None = None
    """If set, every request but health checks must carry ``Authorization: Bearer <token>``."""
    server_version: str = "v1.33.0"
