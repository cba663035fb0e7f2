"""Measuring a service over a window: snapshots of its CPU, memory, /metrics and the API calls at both ends."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from autoscaler_sandbox import PrometheusSandbox
from kube_emulator import KubeEmulator
from kube_emulator.requestlog import RequestRecord
from servicebench.process import ServiceProcess, service_settings
from servicebench.procfs import cpu_seconds, memory_kib
from servicebench.samples import Histogram, Samples, by_label, parse_metrics, total

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


@dataclass
class Snapshot:
    at: float
    service_cpu: float
    prometheus_cpu: float
    harness_cpu: float
    service_metrics: Samples
    prometheus_metrics: Samples
    api_counts: dict[str, int]
    service_at: float = 0.0  # when the service's counters were read (the middle of its /metrics request)


@dataclass
class Harness:
    args: argparse.Namespace
    emu: KubeEmulator
    prom: PrometheusSandbox
    session: aiohttp.ClientSession
    workdir: Path
    services: list[ServiceProcess] = field(default_factory=list)
    prometheus_url: str | None = None  # where the services reach Prometheus (--brownout: through a proxy)

    async def text(self, url: str) -> str:
        async with self.session.get(url, timeout=aiohttp.ClientTimeout(total=30)) as response:
            response.raise_for_status()
            return await response.text()

    async def snapshot(self, service: ServiceProcess, *, start: bool) -> Snapshot:
        """At the start of a window the scrapes come first, at the end last: their cost stays outside. The
        service's scrape is the one next to the window's clock reading, and its time is kept
        (``service_at``): the syncs its counters count are expected over the seconds between its two
        scrapes, not the window's (with Prometheus' scrape in between, on a core this harness's exporter
        also loads, 10,000-target windows counted 1-2 % more syncs than their periods hold)."""
        assert self.prom.pid is not None

        async def service_scrape() -> tuple[Samples, float]:
            sent = time.monotonic()
            text = await self.text(service.url + "/metrics")
            return parse_metrics(text), (sent + time.monotonic()) / 2

        if start:
            prometheus_metrics = parse_metrics(await self.text(self.prom.url + "/metrics"))
            service_metrics, service_at = await service_scrape()
        counts = self.emu.requests.counts()
        snap = Snapshot(
            time.monotonic(),
            cpu_seconds(service.pid),
            cpu_seconds(self.prom.pid),
            cpu_seconds(os.getpid()),
            {},
            {},
            counts,
        )
        if not start:
            service_metrics, service_at = await service_scrape()
            prometheus_metrics = parse_metrics(await self.text(self.prom.url + "/metrics"))
        snap.service_metrics, snap.prometheus_metrics, snap.service_at = service_metrics, prometheus_metrics, service_at
        return snap

    def launch(
        self, name: str, kubeconfig: Path, shard: str | None = None, namespaces: list[str] | None = None
    ) -> ServiceProcess:
        settings = service_settings(self.args, self.prometheus_url or self.prom.url, kubeconfig)
        if shard is not None:
            settings["sharding"] = {"shard": shard}
        if namespaces is not None:
            settings["kubernetes"]["namespaces"] = namespaces
        service = ServiceProcess(
            self.workdir,
            name,
            settings,
            profile=self.args.profile and name != "idle",
            launcher=self.args.launcher,
            cpus=self.args.service_cpus,
        )
        self.services.append(service)
        return service.start()

    async def wait_ready(self, service: ServiceProcess, limit: float) -> float:
        """Seconds from spawn to /readyz 200 (caches synced, leading, Prometheus answering)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if not service.alive():
                raise SystemExit(f"the service exited during start-up; log: {service.log}")
            with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
                async with self.session.get(
                    service.url + "/readyz", timeout=aiohttp.ClientTimeout(total=2)
                ) as response:
                    if response.status == 200:
                        return time.monotonic() - service.started
            await asyncio.sleep(0.1)
        raise SystemExit(f"the service was not ready within {limit:g}s; log: {service.log}")


class StatusWrites:
    """Targets whose status the service has written (namespace/name), read from the emulator's request log
    as it grows: scanning the whole log every 0.2 s was a tenth of this process's CPU during a
    10,000-target start-up, on the core the emulator answers the service's writes from."""

    def __init__(self, emu: KubeEmulator) -> None:
        self._log = emu.requests
        self._read = 0  # the writes before this reader too (the first ones may come before it is made)
        self._unfinished: list[RequestRecord] = []
        self.done: set[str] = set()

    def update(self) -> set[str]:
        log = self._log
        new = min(log.started - self._read, len(log.records))
        self._read = log.started
        records = [*self._unfinished, *itertools.islice(reversed(log.records), new)]  # the newest, from the end
        self._unfinished = []
        for record in records:
            if record.verb != "patch" or record.resource != "scalingtargets/status":
                continue
            if record.status is None:
                self._unfinished.append(record)  # answered later: read again next time
            elif 200 <= record.status < 300:
                self.done.add(f"{record.info.namespace}/{record.info.name}")
        return self.done


@dataclass
class Window:
    seconds: float
    periods: float
    counted_periods: float  # the periods between the service's two scrapes: what its sync count covers
    service_cpu: float
    prometheus_cpu: float
    harness_cpu: float
    lag: Histogram
    reconcile: Histogram
    loop_lag: Histogram
    renew_late: Histogram
    query_duration: Histogram
    service_queries: float
    server_queries: float
    reconciles: dict[str, float]
    gc_runs: dict[str, float]
    gc_pauses: dict[str, Histogram]  # by generation: how long each collection stopped the service
    api: dict[str, int]
    rss_kib_max: int
    rss_kib_end: int
    prometheus_rss_kib: int
    compiled: str  # autoscaler_build_info's: whether the service's per-sync modules ran compiled (all, none, some)

    @classmethod
    def between(cls, a: Snapshot, b: Snapshot, period: float, rss_max: int, rss_end: int, prom_rss: int) -> Window:
        seconds = b.at - a.at
        api = {k: v - a.api_counts.get(k, 0) for k, v in b.api_counts.items() if v - a.api_counts.get(k, 0)}

        def delta(samples_name: str, source: str = "service", **match: str) -> float:
            before = a.service_metrics if source == "service" else a.prometheus_metrics
            after = b.service_metrics if source == "service" else b.prometheus_metrics
            return total(after, samples_name, **match) - total(before, samples_name, **match)

        reconciles = {
            k: v - by_label(a.service_metrics, "autoscaler_reconciles_total", "result").get(k, 0.0)
            for k, v in by_label(b.service_metrics, "autoscaler_reconciles_total", "result").items()
        }
        gc_runs = {
            f"gen{k}": v - by_label(a.service_metrics, "python_gc_collections_total", "generation").get(k, 0.0)
            for k, v in by_label(b.service_metrics, "python_gc_collections_total", "generation").items()
        }
        return cls(
            seconds=seconds,
            periods=seconds / period,
            counted_periods=(b.service_at - a.service_at) / period,
            service_cpu=b.service_cpu - a.service_cpu,
            prometheus_cpu=b.prometheus_cpu - a.prometheus_cpu,
            harness_cpu=b.harness_cpu - a.harness_cpu,
            lag=Histogram.delta(a.service_metrics, b.service_metrics, "autoscaler_schedule_lag_seconds"),
            reconcile=Histogram.delta(a.service_metrics, b.service_metrics, "autoscaler_reconcile_duration_seconds"),
            loop_lag=Histogram.delta(a.service_metrics, b.service_metrics, "autoscaler_event_loop_lag_seconds"),
            renew_late=Histogram.delta(a.service_metrics, b.service_metrics, "autoscaler_leader_renew_late_seconds"),
            query_duration=Histogram.delta(
                a.service_metrics, b.service_metrics, "autoscaler_prometheus_query_duration_seconds"
            ),
            service_queries=delta("autoscaler_prometheus_queries_total"),
            server_queries=delta("prometheus_http_requests_total", "prometheus", handler="/api/v1/query"),
            reconciles=reconciles,
            gc_runs=gc_runs,
            gc_pauses={
                f"gen{g}": Histogram.delta(
                    a.service_metrics, b.service_metrics, "autoscaler_gc_pause_seconds", generation=str(g)
                )
                for g in range(3)
            },
            api=api,
            rss_kib_max=rss_max,
            rss_kib_end=rss_end,
            prometheus_rss_kib=prom_rss,
            compiled=next(iter(by_label(b.service_metrics, "autoscaler_build_info", "compiled")), "") or "?",
        )

    def per_period(self, value: float) -> float:
        return value / self.periods

    @property
    def writes(self) -> dict[str, int]:
        return {k: v for k, v in self.api.items() if k.split(" ")[0] in WRITE_VERBS}

    @property
    def lease_writes(self) -> int:
        return sum(v for k, v in self.writes.items() if k.split(" ")[1].startswith("leases"))

    @property
    def lists(self) -> int:
        return sum(v for k, v in self.api.items() if k.startswith("list "))

    def mcpu(self, cpu: float) -> float:
        return cpu / self.seconds * 1000


async def observe(
    harness: Harness, service: ServiceProcess, seconds: float, period: float | None = None
) -> tuple[Snapshot, Snapshot, int, int, int, list[int]]:
    """A measured window: snapshots at both ends, RSS sampled every second in between (and kept at the
    end of each ``period``, to show whether memory settles or keeps growing)."""
    assert harness.prom.pid is not None
    first = await harness.snapshot(service, start=True)
    rss_max = 0
    by_period: list[int] = []
    deadline = first.at + seconds
    while (left := deadline - time.monotonic()) > 0:
        await asyncio.sleep(min(1.0, left))
        if not service.alive():
            raise SystemExit(f"the service died; log: {service.log}")
        rss = memory_kib(service.pid)["VmRSS"]
        rss_max = max(rss_max, rss)
        if period and time.monotonic() - first.at >= (len(by_period) + 1) * period - 0.5:
            by_period.append(rss)
    rss_end = memory_kib(service.pid)["VmRSS"]
    prom_rss = memory_kib(harness.prom.pid)["VmRSS"]
    last = await harness.snapshot(service, start=False)
    return first, last, max(rss_max, rss_end), rss_end, prom_rss, by_period


async def scrape_cost(
    harness: Harness, service: ServiceProcess, steady_cpu_rate: float, seconds: float
) -> tuple[float, int, int, int]:
    """CPU the service spends on one /metrics scrape, the scrape's bytes and series, and how many scrapes
    the figure is the mean of. Scrapes back to back for ``seconds`` (a sync period: over one, the
    service's own work costs its steady rate, ``steady_cpu_rate`` CPU seconds per second, from the
    window), and takes that work off the CPU spent meanwhile. One scrape's CPU cannot be told apart from a
    10,000-target service's bursts of work: a median of five single scrapes measured 33 and 163 ms CPU in
    two runs of the same code, for 237 series."""
    count = 0
    before, started = cpu_seconds(service.pid), time.monotonic()
    while time.monotonic() - started < seconds or count == 0:
        text = await harness.text(service.url + "/metrics")
        count += 1
    elapsed = time.monotonic() - started
    spent = cpu_seconds(service.pid) - before
    size, series = len(text), sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    return max(0.0, spent - steady_cpu_rate * elapsed) / count, size, series, count
