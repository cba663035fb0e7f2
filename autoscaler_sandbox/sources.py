"""Where the demo's service reads its metrics: the built-in synthetic Prometheus API (the default:
instant start, exact values, deterministic), or a real ``prometheus`` binary scraping an exporter
fed from the same demo world (real scrapes, real ``rate()``, real lag)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from autoscaler.values.durations import format_prometheus_duration
from autoscaler_sandbox.exporter import MetricsExporter
from autoscaler_sandbox.feeder import ExporterFeeder
from autoscaler_sandbox.promapi import SyntheticPrometheus
from autoscaler_sandbox.prometheus import PrometheusSandbox, ScrapeTarget, find_binary
from autoscaler_sandbox.world import CPU_SERIES, DemoWorld

CHOICES = ("auto", "builtin", "binary")
SCRAPE_INTERVAL = 0.5  # wall seconds: Prometheus' own granularity does not compress
WINDOW_SCRAPES = 4  # a rate() window must hold a few scrapes


class SourceError(RuntimeError):
    """The metrics source asked for cannot be had (no binary)."""


@dataclass(frozen=True, slots=True)
class MetricsSource:
    url: str
    rate_window: float  # wall seconds: the service's cpuRateWindow and the queries' <<window>>
    description: str


def resolve(choice: str) -> str:
    """``builtin`` or ``binary`` for a ``--prometheus`` choice."""
    if choice == "builtin":
        return "builtin"
    found = find_binary("prometheus") is not None
    if choice == "binary" and not found:
        raise SourceError("--prometheus binary: no prometheus binary on PATH (Debian package 'prometheus')")
    return "binary" if found else "builtin"


@contextlib.asynccontextmanager
async def metrics_source(kind: str, world: DemoWorld, rate_window: float) -> AsyncIterator[MetricsSource]:
    if kind == "builtin":
        async with SyntheticPrometheus(world.answer) as synthetic:
            yield MetricsSource(
                synthetic.url,
                rate_window,
                f"built-in Prometheus API on {synthetic.url} (values straight from the curve)",
            )
        return
    window = max(rate_window, WINDOW_SCRAPES * SCRAPE_INTERVAL)
    exporter = MetricsExporter()
    await asyncio.to_thread(exporter.start)
    prometheus = PrometheusSandbox(scrape_targets=[ScrapeTarget(exporter.address)], scrape_interval=SCRAPE_INTERVAL)
    feeder = ExporterFeeder(world, exporter, SCRAPE_INTERVAL / 2)
    feeding: asyncio.Task[None] | None = None
    try:
        feeder.update()
        await prometheus.astart()
        feeding = asyncio.create_task(feeder.run(), name="demo exporter feeder")
        # Until rate() has two scrapes in its window, the service would read no CPU at all.
        await asyncio.to_thread(
            prometheus.wait_for, f"rate({CPU_SERIES}[{format_prometheus_duration(window)}])", timeout=30
        )
        yield MetricsSource(
            prometheus.url,
            window,
            f"prometheus {prometheus.binary} on {prometheus.url}, scraping every {SCRAPE_INTERVAL:g} s (wall)",
        )
    finally:
        if feeding is not None:
            feeding.cancel()
            await asyncio.gather(feeding, return_exceptions=True)
        await asyncio.to_thread(prometheus.close)
        await asyncio.to_thread(exporter.stop)
