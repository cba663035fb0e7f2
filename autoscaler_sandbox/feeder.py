"""Feeds a real Prometheus (``autoscaler demo --prometheus binary``): the demo world's rates become
counters on a :class:`~autoscaler_sandbox.exporter.MetricsExporter` that Prometheus scrapes, so
``rate()`` over them gives the world's values back, with a real scrape and window lag."""

from __future__ import annotations

import asyncio
import time

from autoscaler_sandbox.exporter import MetricsExporter
from autoscaler_sandbox.world import CPU_SERIES, REQUESTS_SERIES, DemoWorld

LabelKey = tuple[str, tuple[tuple[str, str], ...]]
_MIN_RATE = 1e-9  # a counter must keep moving for its origin to be defined


def continuous_origin(rate: float, origin: float, new_rate: float, now: float) -> float:
    """The exporter's counters are ``rate × (t − origin)``: the origin that keeps a counter's value at
    ``now`` when its rate changes, so that Prometheus sees a bend, never a reset."""
    return now - rate * (now - origin) / new_rate


class ExporterFeeder:
    def __init__(self, world: DemoWorld, exporter: MetricsExporter, interval: float) -> None:
        self.world = world
        self.exporter = exporter
        self.interval = interval
        self._counters: dict[LabelKey, tuple[float, float]] = {}  # rate, origin

    def _set(self, name: str, labels: dict[str, str], rate: float, now: float) -> LabelKey:
        key: LabelKey = (name, tuple(sorted(labels.items())))
        rate = max(rate, _MIN_RATE)
        previous = self._counters.get(key)
        origin = now - 3600.0 if previous is None else continuous_origin(*previous, rate, now)
        self._counters[key] = (rate, origin)
        self.exporter.set_rate(name, labels, rate, origin=origin)
        return key

    def update(self) -> None:
        now = time.time()
        load = self.world.load_at(now)
        live = {self._set(REQUESTS_SERIES, self.world.requests_labels(), load, now)}
        for pod, cores in self.world.cpu(load).items():
            live.add(self._set(CPU_SERIES, self.world.cpu_labels(pod), cores, now))
        for key in [key for key in self._counters if key not in live]:
            del self._counters[key]
            self.exporter.remove(key[0], dict(key[1]))  # the pod is gone: its series goes stale

    async def run(self) -> None:
        while True:
            self.update()
            await asyncio.sleep(self.interval)
