"""Reading each metric from its Prometheus backend (prometheus.backends, and the default one).

Every backend has what the service had for its one Prometheus: a client on its own aiohttp session (its
credentials, TLS, headers and query parameters), a :class:`TimedQuerier` (its answers timed, its last answer
for ``/readyz``), a :class:`MetricsReader` (batching, the deadline of a read, partial answers: all per backend,
so the queries a period stay flat per backend) and the skew of its clock. :meth:`BackendRouter.read` is the
``read_many`` the manager's batcher calls: it hands each backend the targets' metrics that name it (a target
whose metrics read from two backends is in both reads, with its own metrics of each), runs the reads at once
and merges the rows back in metric order; a target is handed over (``on_ready``) as soon as each of its
backends has read its metrics.

A metric read from a named backend that fails says so first (``backend tenant-b: External metric "queue":
... 401 Unauthorized ...``): one backend's wrong credential fails its metrics, and only those. A metric naming a
backend the settings do not have fails every sync, saying which backends there are.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass

from autoscaler.core.observation import MetricFailure, MetricReading
from autoscaler.core.spec import MetricSpec
from autoscaler.kube.api import KubeApi
from autoscaler.loop.clock import SkewMonitor
from autoscaler.prometheus.backends import DEFAULT_BACKEND, all_backends, backend_of
from autoscaler.prometheus.client import PrometheusClient
from autoscaler.prometheus.errors import PrometheusError
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.reader import MetricsReader, OnReady
from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.prometheus.results import InstantResult, SeriesFilter
from autoscaler.prometheus.sample_times import SampleTimes
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.prometheus.slicing import SeriesSink
from autoscaler.service.backends.outage import OutageLog
from autoscaler.service.backends.secret_refs import SecretStore, secret_refs
from autoscaler.service.backends.timed_reads import PeerClock, TimedQuerier, with_clock_note
from autoscaler.service.settings import ServiceSettings
from autoscaler.service.telemetry.metrics import ServiceMetrics
from autoscaler.service.telemetry.metrics_backends import QUERY_OUTCOMES, BackendQueriesCollector


class CountingQuerier:
    """A backend's :class:`TimedQuerier` (which times every query into the service's metrics, all backends
    together), counting this backend's queries answered and failed (``autoscaler_prometheus_backend_queries_total``)."""

    def __init__(self, inner: TimedQuerier, outage: OutageLog) -> None:
        self.inner = inner
        self.outage = outage  # warns once when the backend stops answering (service/backends/outage.py)
        self.counts = dict.fromkeys(QUERY_OUTCOMES, 0)

    async def query(
        self,
        promql: str,
        at: float | None,
        *,
        deadline: float | None = None,
        keep: SeriesFilter | None = None,
        sink: SeriesSink | None = None,
    ) -> InstantResult:
        try:
            result = await self.inner.query(promql, at, deadline=deadline, keep=keep, sink=sink)
        except PrometheusError as exc:
            self.counts["error"] += 1
            self.outage.failed(exc)
            raise
        self.counts["answered"] += 1
        self.outage.answered()
        return result


@dataclass(eq=False)
class Backend:
    """One Prometheus the service reads (see the module docstring)."""

    name: str
    settings: PrometheusSettings
    client: PrometheusClient
    querier: TimedQuerier
    reader: MetricsReader
    skew: SkewMonitor
    counted: CountingQuerier

    def failure(self, reading: MetricReading) -> MetricReading:
        """``reading``, a failure naming this backend when it is a named one."""
        if self.name == DEFAULT_BACKEND or not isinstance(reading, MetricFailure):
            return reading
        return MetricFailure(f"backend {self.name}: {reading.message}", reading.backend)

    def finished(self, row: list[MetricReading]) -> list[MetricReading]:
        """A row of this backend's reader as the targets see it: the clock note, the backend named."""
        return [self.failure(reading) for reading in with_clock_note(row, self.skew)]

    async def readiness(self) -> tuple[bool, str]:
        """``/readyz``'s word on this backend: it answered within the last minute, or it is ready now."""
        querier = self.querier
        if querier.last_success is not None and time.monotonic() - querier.last_success < 60:
            return True, "answered within the last minute"
        ok = await querier.client.ready()
        return ok, "ready" if ok else (querier.last_error or "not ready")


async def open_backends(
    settings: ServiceSettings,
    metrics: ServiceMetrics,
    clock: Callable[[], float],
    default_skew: SkewMonitor,
    secrets: KnownSecrets,
    stack: AsyncExitStack,
    kube: KubeApi | None = None,
) -> dict[str, Backend]:
    """A started :class:`Backend` for each of ``settings``' backends (the default one first), each client
    closed by ``stack``. ``default_skew``: the default backend's (the service's ``prometheus`` clock peer);
    every client's secrets go to ``secrets``, the service's one redaction. The settings' Secret references
    are read through ``kube`` (service/backends/secret_refs.py: once before this returns, then every minute)."""
    backends: dict[str, Backend] = {}
    configured = all_backends(settings.prometheus, settings.prometheus_backends)
    store: SecretStore | None = None
    if (refs := secret_refs(configured.values())) and kube is not None:
        store = SecretStore(kube, refs, secrets)
        await store.start()
        stack.push_async_callback(store.stop)
    secrets.publish(configured)  # a tenant header may equal its backend's name: "backend tenant-b:" stays legible
    for name, backend_settings in configured.items():
        skew = default_skew
        if name != DEFAULT_BACKEND:  # its skew is said in its metrics' messages; the gauge is the default's
            skew = SkewMonitor(f"Prometheus backend {name}", settings.sync.clock_skew_warning_seconds)
        client = await stack.enter_async_context(
            PrometheusClient(
                backend_settings,
                observe_server_time=skew.observe,
                clock=clock,
                secrets=secrets,
                secret_source=store,
            )
        )
        querier = TimedQuerier(client, metrics)
        counted = CountingQuerier(querier, OutageLog(name, backend_settings.display_url))
        times = SampleTimes(
            backend_settings.max_sample_age_seconds,
            settings.sync.clock_skew_warning_seconds,
            PeerClock(clock, skew).now,
        )
        reader = MetricsReader(counted, backend_settings, sample_times=times)
        backends[name] = Backend(name, backend_settings, client, querier, reader, skew, counted)
    metrics.registry.register(BackendQueriesCollector(lambda: [(n, b.counted.counts) for n, b in backends.items()]))
    return backends


class _Merge:
    """One read's rows across backends: ``rows[i][j]`` for ``queries[i].metrics[j]``, and each target handed
    over once every backend it reads from has its row."""

    def __init__(self, queries: Sequence[TargetQuery], on_ready: OnReady | None) -> None:
        self.rows: list[list[MetricReading | None]] = [[None] * len(query.metrics) for query in queries]
        self.waiting = [0] * len(queries)  # backends each target still waits for
        self._on_ready = on_ready

    def put(self, target: int, metrics: Sequence[int], row: Sequence[MetricReading]) -> None:
        for metric, reading in zip(metrics, row, strict=True):
            self.rows[target][metric] = reading
        self.waiting[target] -= 1
        if self.waiting[target] == 0 and self._on_ready is not None:
            self._on_ready(target, self.row(target))

    def row(self, target: int) -> list[MetricReading]:
        return [reading if reading is not None else MetricFailure("not read") for reading in self.rows[target]]


@dataclass(eq=False)
class _Share:
    """One backend's part of a read: its sub-queries, and where each row goes back (target, metric indexes)."""

    backend: Backend
    queries: list[TargetQuery]
    places: list[tuple[int, list[int]]]


class BackendRouter:
    """The service's ``read_many``: each metric read from its backend (see the module docstring)."""

    def __init__(self, backends: Mapping[str, Backend]) -> None:
        assert DEFAULT_BACKEND in backends
        self.backends = dict(backends)
        self.default = self.backends[DEFAULT_BACKEND]
        self._names = ", ".join(self.backends)

    async def read(
        self, queries: Sequence[TargetQuery], at: float | None, *, on_ready: OnReady | None = None
    ) -> list[list[MetricReading]]:
        """``result[i][j]``: the reading of ``queries[i].metrics[j]`` from its backend (see MetricsReader.read)."""
        if all(spec.backend is None for query in queries for spec in query.metrics):
            return await self._read_one(self.default, queries, at, on_ready)
        merge = _Merge(queries, on_ready)
        shares = self._shares(queries, merge)
        for index in range(len(queries)):
            if merge.waiting[index] == 0 and on_ready is not None:  # nothing to read: unknown backends only
                on_ready(index, merge.row(index))
        await asyncio.gather(*(self._read_share(share, at, merge) for share in shares.values()))
        return [merge.row(index) for index in range(len(queries))]

    def _shares(self, queries: Sequence[TargetQuery], merge: _Merge) -> dict[str, _Share]:
        shares: dict[str, _Share] = {}
        for index, query in enumerate(queries):
            by_backend: dict[str, list[int]] = {}
            for metric, spec in enumerate(query.metrics):
                name = backend_of(spec.backend)
                if name in self.backends:
                    by_backend.setdefault(name, []).append(metric)
                else:
                    merge.rows[index][metric] = MetricFailure(
                        f'{spec.type.value} metric "{spec.name}": backend {name} is not configured: the '
                        f"service's settings have {self._names} (prometheus.backends)"
                    )
            for name, metrics in by_backend.items():
                share = shares.get(name)
                if share is None:
                    share = shares[name] = _Share(self.backends[name], [], [])
                share.queries.append(_with_metrics(query, [query.metrics[metric] for metric in metrics]))
                share.places.append((index, metrics))
                merge.waiting[index] += 1
        return shares

    async def _read_share(self, share: _Share, at: float | None, merge: _Merge) -> None:
        places = share.places
        backend = share.backend
        handed: set[int] = set()

        def ready(position: int, row: list[MetricReading]) -> None:
            handed.add(position)
            target, metrics = places[position]
            merge.put(target, metrics, backend.finished(row))

        rows = await backend.reader.read(share.queries, at, ready)
        for position, row in enumerate(rows):  # a reader hands every row over; this is for one that did not
            if position not in handed:
                ready(position, row)

    @staticmethod
    async def _read_one(
        backend: Backend, queries: Sequence[TargetQuery], at: float | None, on_ready: OnReady | None
    ) -> list[list[MetricReading]]:
        def ready(index: int, row: list[MetricReading]) -> None:
            if on_ready is not None:
                on_ready(index, backend.finished(row))

        rows = await backend.reader.read(queries, at, ready)
        return [backend.finished(row) for row in rows]


def _with_metrics(query: TargetQuery, metrics: list[MetricSpec]) -> TargetQuery:
    """``query`` with only ``metrics`` (those read from one backend)."""
    return TargetQuery(
        namespace=query.namespace,
        name=query.name,
        scale_target=query.scale_target,
        selector=query.selector,
        pod_names=query.pod_names,
        metrics=metrics,
        namespace_pods=query.namespace_pods,
    )
