"""An unreachable Prometheus said once per outage, where a person looks first: a warning when a backend
stops answering, an info line when it answers again.

A target's failed metric is in its status and its info-level decision line every sync; a service whose
Prometheus cannot be reached at all (a wrong URL, a firewall, Prometheus down) would otherwise show nothing
above info. This is per backend and independent of the degraded judgement (backend_health.py), which needs
``backendHealth.minimumTargets`` failing targets: one target's Prometheus being down is said too. Only
"no answer" starts an outage (connection refused or reset, DNS, TLS, no answer in time); any answer ends it,
an error answer too (Prometheus is reachable: that error is its metric's, as before).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

from autoscaler.prometheus.errors import PrometheusError

log = structlog.get_logger("autoscaler.prometheus")

NO_ANSWER_KINDS = frozenset({"unreachable", "timeout"})


class OutageLog:
    """Follows one backend's answers; logs the start (warning) and end (info) of each outage."""

    def __init__(self, name: str, url: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.url = url
        self._clock = clock
        self._down_since: float | None = None
        self._failed_queries = 0

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def failed(self, error: PrometheusError) -> None:
        if error.kind not in NO_ANSWER_KINDS:
            self.answered()  # an error answer is still an answer
            return
        self._failed_queries += 1
        if self._down_since is not None:
            return  # said once per outage
        self._down_since = self._clock()
        log.warning(
            "Prometheus cannot be reached: its metrics fail until it answers (said once until then)",
            backend=self.url,
            name=self.name,
            error=str(error),
        )

    def answered(self) -> None:
        if self._down_since is None:
            return
        down_for = self._clock() - self._down_since
        log.info(
            "Prometheus answers again",
            backend=self.url,
            name=self.name,
            down_seconds=round(down_for, 3),
            failed_queries=self._failed_queries,
        )
        self._down_since = None
        self._failed_queries = 0
