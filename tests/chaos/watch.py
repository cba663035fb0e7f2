"""What the chaos tests read off a running service besides the cluster: when each target last synced (its
``autoscaler_target_last_sync_timestamp_seconds``), and how late its event loop ran timers (the
``autoscaler_event_loop_lag_seconds`` histogram), both from ``/metrics`` as a dashboard would."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from dataclasses import dataclass, field

from tests.chaos.service import ServiceProcess
from tests.chaos.world import condition

Key = tuple[str, str]  # (namespace, name)


@dataclass
class SyncWatch:
    """Polls a service's /metrics and records, per target, when its last-sync timestamp moved."""

    service: ServiceProcess
    targets: list[Key]
    every: float = 0.2
    moves: dict[Key, list[float]] = field(default_factory=dict)  # monotonic moments a new sync was seen
    _last: dict[Key, float] = field(default_factory=dict)
    _task: asyncio.Task[None] | None = None

    def start(self) -> SyncWatch:
        self._task = asyncio.create_task(self._poll(), name="sync watch")
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _poll(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # a scrape that fails is a gap, which the test sees
                samples = await self.service.metrics()
                now = time.monotonic()
                for key in self.targets:
                    value = samples.get(
                        ("autoscaler_target_last_sync_timestamp_seconds", (("name", key[1]), ("namespace", key[0])))
                    )
                    if value is not None and value != self._last.get(key):
                        self._last[key] = value
                        self.moves.setdefault(key, []).append(now)
            await asyncio.sleep(self.every)

    def longest_gap(self, key: Key, since: float, until: float | None = None) -> float:
        """The longest time between two syncs of ``key`` seen in [since, until] (the window's edges
        count as syncs only when one was seen there: a target that never synced has a gap of it all)."""
        until = time.monotonic() if until is None else until
        moments = [since, *(m for m in self.moves.get(key, []) if since <= m <= until), until]
        return max(b - a for a, b in itertools.pairwise(moments))

    def worst(self, since: float, until: float | None = None) -> tuple[float, Key]:
        return max((self.longest_gap(key, since, until), key) for key in self.targets)


async def loop_lag_counts(service: ServiceProcess, above: float) -> tuple[float, float]:
    """(timers measured, timers later than ``above`` seconds) so far, from the loop-lag histogram."""
    samples = await service.metrics()
    total = samples.get(("autoscaler_event_loop_lag_seconds_count", ()), 0.0)
    within = samples.get(("autoscaler_event_loop_lag_seconds_bucket", (("le", str(above)),)), 0.0)
    return total, total - within


def scaling_active(cluster: object, name: str, namespace: str = "default") -> dict[str, str]:
    return condition(cluster, name, "ScalingActive", namespace)  # type: ignore[arg-type]
