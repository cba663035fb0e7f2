"""``autoscaler run``: the service's start-up and shutdown, in order (its parts are built by
:mod:`autoscaler.service.wiring`, its probes are :mod:`autoscaler.service.probes`).

Start-up: logging → the service's own metrics → the HTTP server (``/readyz`` answers 503 until the
caches are synced) → the Kubernetes and Prometheus clients → the watch caches → leader election
(when enabled) → reconcilers, started only while this instance leads.

Shutdown (SIGTERM or SIGINT, a few seconds): readiness false, no new write → the reconcilers stop (a sync is
cancelled between its steps; one writing a scale finishes it and its status first, ≤ ``SCALE_WRITE_GRACE_SECONDS``)
→ the lease is released so a standby takes over at once → caches and clients close → the HTTP server stops last.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import structlog

from autoscaler import native
from autoscaler.kube.client import make_api_client
from autoscaler.kube.election_thread import ElectionThread
from autoscaler.kube.lease import default_identity
from autoscaler.loop import collector
from autoscaler.loop.health import monitor_event_loop_lag
from autoscaler.service.cluster.cache_health import cache_states
from autoscaler.service.cluster.targets import Target
from autoscaler.service.http import HttpServer
from autoscaler.service.manager import Manager
from autoscaler.service.probes import Probes
from autoscaler.service.settings import ServiceSettings
from autoscaler.service.sync.writes import SCALE_WRITE_GRACE_SECONDS
from autoscaler.service.telemetry.logs import configure_logging, flush_logs, log_lines_dropped, redact_known_secrets
from autoscaler.service.wiring import ServiceParts, build_reporting, build_service

log = structlog.get_logger("autoscaler.service")

SHUTDOWN_SECONDS = 5.0
FIRST_CAMPAIGN_WAIT = 2.0  # seconds the caches wait at most for the first campaign's outcome


class Service:
    def __init__(
        self,
        settings: ServiceSettings,
        *,
        static_targets: list[Target] | None = None,
        identity: str | None = None,
        record: str | None = None,
    ) -> None:
        self.settings = settings
        self.record = record
        self.static_targets = static_targets
        self.identity = identity or default_identity()
        self.reporting = build_reporting(settings)
        self.metrics = self.reporting.metrics
        self.parts: ServiceParts | None = None  # once the clients are open (service/wiring.py)
        self.http: HttpServer | None = None
        self.ready = asyncio.Event()
        self.stopping = False
        self._freezer: asyncio.Task[None] | None = None
        self._quiet: asyncio.Task[None] | None = None  # the collector's hold-off until the caches sync

    @property
    def manager(self) -> Manager | None:
        return self.parts.manager if self.parts is not None else None

    @property
    def elector(self) -> ElectionThread | None:
        return self.parts.elector if self.parts is not None else None

    async def run(self, stop: asyncio.Event) -> None:
        with collector.governed(self.metrics.observe_gc_pause):  # start-up's thresholds; put back at the end
            await self._run(stop)

    async def _run(self, stop: asyncio.Event) -> None:
        settings = self.settings
        lag_task = asyncio.create_task(monitor_event_loop_lag(self.metrics.event_loop_lag), name="loop-lag")
        try:  # from here on, whatever fails (the HTTP port taken, a bad kubeconfig) leaves nothing running
            # The kubeconfig first: one that cannot be read fails before anything listens (or logs http.started).
            api_client = await make_api_client(settings.kubernetes.kubeconfig, settings.kubernetes.context)
            # A watch cache may not follow the API server for two sync periods before /readyz fails.
            probes = Probes(self, stale_cache_limit=2 * settings.sync.period_seconds)
            self.http = HttpServer(
                settings.telemetry.http, self.metrics, readiness=probes.readiness(), liveness=probes.liveness()
            )
            try:
                await self.http.start()
            except BaseException:  # the port taken: the client's connections closed before the error goes up
                await api_client.close()
                raise
            # The collector is held off until the caches sync (loop/collector.py), and runs again at the end.
            self._quiet = asyncio.create_task(collector.quiet_until_synced(), name="gc-quiet-start")
            async with api_client, contextlib.AsyncExitStack() as clients:
                self.parts = parts = await build_service(
                    settings,
                    api_client,
                    clients,
                    self.reporting,
                    identity=self.identity,
                    static_targets=self.static_targets,
                    record=self.record,
                    stopping=lambda: self.stopping,
                )
                self._serve_introspection(parts)
                self._log_start()
                elector_task = await self._start(parts)
                await self._wait_synced_then_ready(stop)
                await stop.wait()
                await self._shutdown(elector_task)
        finally:
            tasks = [t for t in (lag_task, self._freezer) if t is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.parts is not None and self.parts.recorder is not None:
                await self.parts.recorder.close()
            if self.http is not None:
                await self.http.stop()
            if self._quiet is not None:
                self._quiet.cancel()

    def _serve_introspection(self, parts: ServiceParts) -> None:
        """What the HTTP server and the metrics show besides the probes: the targets, the backends, the caches."""
        assert self.http is not None
        secrets = self.reporting.secrets
        self.http.targets = parts.manager
        self.http.backends = self.reporting.backends.documents
        self.http.redaction = secrets
        redact_known_secrets(secrets)
        self.metrics.watch_log_lines_dropped(log_lines_dropped)
        self.metrics.watch_caches(lambda: cache_states(parts.sync.cluster.all))

    def _log_start(self) -> None:
        settings = self.settings
        log.info(
            "service starting",
            identity=self.identity,
            dry_run=settings.serving.dry_run,
            targets="file" if self.static_targets is not None else "crd",
            leader_election=settings.serving.leader_election.enabled,
            shard=settings.serving.sharding.shard,
            target_selector=settings.serving.sharding.label_selector,
            compiled_modules=f"{len(native.compiled())} of {len(native.COMPILED)}",
        )
        if stale := native.stale():
            log.warning(
                "compiled modules older than their source: the old code runs (rebuild them or delete them)",
                modules=list(stale),
            )

    async def _start(self, parts: ServiceParts) -> asyncio.Task[None] | None:
        """The caches, then the reconcilers: at once without leader election, else while leading (the
        elector's task, returned, runs until shutdown)."""
        manager, elector = parts.manager, parts.elector
        if elector is None:
            leading_since = time.monotonic()
            await manager.start_caches()
            await manager.activate(leading_since)
            self.metrics.set_leader(True)
            return None
        elector.on_started_leading(self._lead)
        elector.on_stopped_leading(self._follow)
        elector_task = asyncio.create_task(elector.run(), name="leader-election")
        # The caches list once the first campaign has an outcome (a few hundred ms): a leader whose target
        # caches listed after it began to lead need not read every target again at takeover (Manager.activate).
        with contextlib.suppress(TimeoutError):
            retry_period = self.settings.serving.leader_election.retry_period_seconds
            async with asyncio.timeout(min(retry_period, FIRST_CAMPAIGN_WAIT)):
                await elector.leader_known.wait()
        await manager.start_caches()
        return elector_task

    async def _wait_synced_then_ready(self, stop: asyncio.Event) -> None:
        assert self.parts is not None
        caches = self.parts.sync.cluster
        synced = asyncio.create_task(caches.wait_synced())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({synced, stopping}, return_when=asyncio.FIRST_COMPLETED)
        for task in (synced, stopping):
            task.cancel()
        if caches.synced():
            self.ready.set()
            log.info("caches synced", lists=caches.list_calls())
            if self._quiet is not None:
                self._quiet.cancel()  # the steering holds the collector off from here, through the first pass
            self._freezer = asyncio.create_task(collector.steer_collector(self._first_pass), name="gc")

    async def _first_pass(self) -> None:
        """Until every running reconciler has synced once: at least a period, at most four (a target that
        never gets to decide does not hold it up longer). The collector's second freeze and its steady
        threshold wait for it (loop/collector.py)."""
        sync = self.settings.sync
        period = sync.period_seconds * (1 + sync.jitter)
        await asyncio.sleep(period + 1.0)
        for _ in range(round(3 * period)):  # a look every second, for three periods more at most
            if self.manager is None or not self.manager.unsynced():
                return
            await asyncio.sleep(1.0)

    async def _lead(self) -> None:
        """Started-leading callback: reconcile for as long as this instance leads."""
        assert self.manager is not None
        self.metrics.set_leader(True)
        # When the term began in the election's thread (before the caches of a cold start began to list).
        leading_since = self.elector.leading_since if self.elector is not None else None
        log.info("leading: reconcilers start", identity=self.identity)
        await self.manager.activate(leading_since if leading_since is not None else time.monotonic())
        await asyncio.Event().wait()  # lives until leadership ends (the elector cancels it)

    async def _follow(self) -> None:
        """Stopped-leading callback: no reconciler may act any more."""
        self.metrics.set_leader(False)
        if self.manager is not None:
            await self.manager.deactivate()
        if not self.stopping:
            log.warning("leadership lost: reconcilers stopped", identity=self.identity)

    async def _shutdown(self, elector_task: asyncio.Task[None] | None) -> None:
        self.stopping = True
        self.ready.clear()
        log.info("shutting down")
        assert self.manager is not None
        try:  # a reconciler caught writing a scale may take its grace first (writes.py)
            async with asyncio.timeout(SHUTDOWN_SECONDS + SCALE_WRITE_GRACE_SECONDS):
                await self.manager.deactivate(shutting_down=True)
                if elector_task is not None:
                    elector_task.cancel()  # the elector steps down and releases the lease
                    await asyncio.gather(elector_task, return_exceptions=True)
                await self.manager.stop()
        except TimeoutError:
            log.warning("shutdown took longer than expected", seconds=SHUTDOWN_SECONDS + SCALE_WRITE_GRACE_SECONDS)
        log.info("stopped")


def install_signal_handlers(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)


async def serve(
    settings: ServiceSettings,
    *,
    static_targets: list[Target] | None = None,
    identity: str | None = None,
    stop: asyncio.Event | None = None,
    record: str | None = None,
) -> None:
    configure_logging(settings.telemetry.logging, in_thread=True)
    stop = stop or asyncio.Event()
    install_signal_handlers(stop)
    try:
        await Service(settings, static_targets=static_targets, identity=identity, record=record).run(stop)
    finally:
        await asyncio.to_thread(flush_logs)  # the last lines (shutdown's) written before the caller goes on


def identity_from_environment() -> str | None:
    """The pod name when running in a pod (``POD_NAME`` from the downward API), for readable leases."""
    name = os.environ.get("POD_NAME")
    return f"{name}_{os.getpid()}" if name else None


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed (a dependency on Linux and macOS), else asyncio's.

    The service is a loop of many small steps (a thousand targets' timers, futures and requests a
    period); uvloop schedules them in C (its share of the service's CPU: docs/benchmarks-history.md, "The
    first service table"; it was not measured alone against asyncio's). Everything the service uses (aiohttp,
    kubernetes-asyncio, signal handlers, timeouts) runs on it unchanged."""
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run_blocking(
    settings: ServiceSettings, *, static_targets: list[Target] | None = None, record: str | None = None
) -> Any:
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        return runner.run(
            serve(settings, static_targets=static_targets, identity=identity_from_environment(), record=record)
        )
