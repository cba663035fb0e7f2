"""Each metric's health for ``spec.fallback``: how many syncs in a row it failed, and since when.

A record per metric of the spec the decision reads (with ``spec.composite``, the composite metric in place of
its inputs), keyed by :func:`metric_keys`. The count and the time are carried from sync to sync in the
target's state and kept in its status (``status.metricHealth``, KEDA's ``status.health`` shape), so that a
restart in the middle of an outage goes on counting where the last sync left off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from autoscaler.core.spec import MetricSpec

HAPPY = "Happy"
FAILING = "Failing"


@dataclass(slots=True, init=False, unsafe_hash=True)
class MetricHealth:
    """One metric's health after a sync.

    ``failures``: the syncs in a row its reading failed, counted up to the one at which its fallback began
    and not further while the fallback lasts (the status would otherwise change, and be written, at every
    sync of an outage); 0: it answered. ``since``: the time of the first of those failed syncs.

    This sync only, never kept in the status: ``fallback_replicas``, the count it stands for when it falls
    back (None: it does not); ``error``, why it failed; ``backend``, whether its backend failed it."""

    key: Final[str]
    failures: Final[int]
    since: Final[float | None]
    fallback_replicas: Final[int | None]
    error: Final[str | None]
    backend: Final[bool]

    def __init__(
        self,
        key: str,
        failures: int = 0,
        since: float | None = None,
        fallback_replicas: int | None = None,
        error: str | None = None,
        backend: bool = False,
    ) -> None:
        self.key = key
        self.failures = failures
        self.since = since
        self.fallback_replicas = fallback_replicas
        self.error = error
        self.backend = backend

    @property
    def status(self) -> str:
        return FAILING if self.failures > 0 else HAPPY


def metric_keys(metrics: Sequence[MetricSpec]) -> tuple[str, ...]:
    """Each metric's key in ``status.metricHealth``: its source and name (``external/queue_depth``,
    ``resource/cpu``, ``containerResource/cpu/app``), with ``#2``, ``#3``… after a repeated one (the same
    metric name with another selector or object)."""
    seen: dict[str, int] = {}
    keys: list[str] = []
    for metric in metrics:
        base = f"{metric.type.source_key}/{metric.name}"
        if metric.container is not None:
            base += f"/{metric.container}"
        count = seen.get(base, 0) + 1
        seen[base] = count
        keys.append(base if count == 1 else f"{base}#{count}")
    return tuple(keys)
