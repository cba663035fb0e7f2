"""``autoscaler run``: wiring the service together, and shutting it down cleanly.

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
import gc
import os
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from autoscaler import native
from autoscaler.kube.api import KubeApi
from autoscaler.kube.client import make_api_client
from autoscaler.kube.election_thread import ElectionThread
from autoscaler.kube.lease import default_identity
from autoscaler.loop import collector
from autoscaler.loop.clock import ProcessClock, SkewMonitor
from autoscaler.loop.health import monitor_event_loop_lag, track_gc_pauses
from autoscaler.prometheus.backends import DEFAULT_BACKEND
from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.service.backends.healths import BackendHealths
from autoscaler.service.backends.router import Backend, BackendRouter, open_backends
from autoscaler.service.cluster.cache_health import cache_readiness, cache_states
from autoscaler.service.cluster.targets import Target
from autoscaler.service.http import HttpServer, ReadinessCheck
from autoscaler.service.manager import Manager
from autoscaler.service.settings import ServiceSettings
from autoscaler.service.sync.writes import SCALE_WRITE_GRACE_SECONDS
from autoscaler.service.telemetry.logs import configure_logging, flush_logs, log_lines_dropped, redact_known_secrets
from autoscaler.service.telemetry.metrics import ServiceMetrics
from autoscaler.service.telemetry.recorder import SyncRecorder

log = structlog.get_logger("autoscaler.service")

SHUTDOWN_SECONDS = 5.0
FIRST_CAMPAIGN_WAIT = 2.0  # seconds the caches wait at most for the first campaign's outcome
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def lease_namespace(configured: str | None) -> str:
    if configured:
        return configured
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as handle:
            return handle.read().strip() or "default"
    except OSError:
        return "default"


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
        self.clock = ProcessClock()  # decisions' and queries' "now": Unix time that never steps
        self.metrics = ServiceMetrics(per_target_limit=settings.metrics.per_target_series_limit)
        self.metrics.set_shard(settings.sharding.shard, settings.sharding.label_key)
        self.prometheus_skew = SkewMonitor(
            "prometheus", settings.sync.clock_skew_warning_seconds, self.metrics.set_clock_skew
        )
        # Each Prometheus backend's health, said once for all the targets that read from it.
        self.backend = BackendHealths.for_service(settings, self.metrics.registry)
        self.manager: Manager | None = None
        self.elector: ElectionThread | None = None
        self.http: HttpServer | None = None
        self.router: BackendRouter | None = None  # each metric read from its backend (service/backends/router.py)
        self.ready = asyncio.Event()
        self._stopping = False
        self._freezer: asyncio.Task[None] | None = None
        self._quiet: asyncio.Task[None] | None = None  # the collector's hold-off until the caches sync

    async def run(self, stop: asyncio.Event) -> None:
        settings = self.settings
        thresholds = gc.get_threshold()  # changed for the process here: put back at the end
        elector_task: asyncio.Task[None] | None = None
        recorder: SyncRecorder | None = None
        lag_task = asyncio.create_task(monitor_event_loop_lag(self.metrics.event_loop_lag), name="loop-lag")
        untrack_gc = track_gc_pauses(self.metrics.gc_pauses)
        try:  # from here on, whatever fails (the HTTP port taken, a bad kubeconfig) leaves nothing running
            # From the start: the first LIST pages decode into hundreds of thousands of objects that live
            # until their page is trimmed into records, and with the interpreter's thresholds the collector
            # walked them (and the growing caches) over and over; half the CPU of syncing 100,000 pods' caches.
            gc.set_threshold(collector.STARTUP_YOUNG_THRESHOLD, collector.MIDDLE_THRESHOLD, collector.NEVER)
            # The kubeconfig first: one that cannot be read fails before anything listens (or logs http.started).
            api_client = await make_api_client(settings.kubernetes.kubeconfig, settings.kubernetes.context)
            self.http = HttpServer(
                settings.http,
                self.metrics,
                readiness=self._readiness(),
                liveness=self._liveness(),
            )
            try:
                await self.http.start()
            except BaseException:  # the port taken: the client's connections closed before the error goes up
                await api_client.close()
                raise
            # The collector is held off until the caches sync (loop/collector.py), and runs again at the end.
            self._quiet = asyncio.create_task(collector.quiet_until_synced(), name="gc-quiet-start")
            # One redaction, every client's (their settings' secrets, their files' tokens), for every sink.
            secrets = KnownSecrets()
            async with api_client, contextlib.AsyncExitStack() as clients:
                kube = KubeApi(api_client, observe=self.metrics.observe_kubernetes_request)
                backends = await open_backends(
                    settings, self.metrics, self.clock.now, self.prometheus_skew, secrets, clients, kube
                )
                self.router = router = BackendRouter(backends)
                read_many = router.read
                election = settings.leader_election
                lease = lease_namespace(election.lease_namespace), settings.sharding.lease_name(election.lease_name)
                self.backend.post_events_to(kube, self.identity, lease if election.enabled else None)
                if self.record:
                    recorder = SyncRecorder(self.record, settings.controller)
                self.manager = manager = Manager(
                    kube,
                    read_many,
                    settings=settings.controller,
                    period=settings.sync.period_seconds,
                    jitter=settings.sync.jitter,
                    concurrency=settings.sync.concurrency,
                    batch_window=settings.sync.batch_window_seconds,
                    dry_run=settings.dry_run,
                    namespaces=settings.kubernetes.namespaces,
                    static_targets=self.static_targets,
                    metrics=self.metrics,
                    may_write=self._may_write,
                    may_finish=lambda: self.elector is None or self.elector.is_leader,  # see writes.py
                    identity=self.identity,
                    on_targets=self.metrics.set_targets,
                    watch_silence=settings.kubernetes.watch_silence_seconds,
                    relist_policy=settings.kubernetes.relists,
                    recorder=recorder,
                    sharding=settings.sharding,
                    clock=self.clock.now,
                    backend_health=self.backend,
                )
                self.http.targets = manager
                self.http.backends = self.backend.documents
                self.http.redaction = manager.writer.redaction = secrets
                redact_known_secrets(secrets)
                self.metrics.watch_log_lines_dropped(log_lines_dropped)
                self.metrics.watch_caches(lambda: cache_states(manager.caches))
                log.info(
                    "service starting",
                    identity=self.identity,
                    dry_run=settings.dry_run,
                    targets="file" if self.static_targets is not None else "crd",
                    leader_election=settings.leader_election.enabled,
                    shard=settings.sharding.shard,
                    target_selector=settings.sharding.label_selector,
                    compiled_modules=f"{len(native.compiled())} of {len(native.COMPILED)}",
                )
                if stale := native.stale():
                    log.warning(
                        "compiled modules older than their source: the old code runs (rebuild them or delete them)",
                        modules=list(stale),
                    )
                if settings.leader_election.enabled:
                    election = settings.leader_election
                    kubernetes = settings.kubernetes
                    # Its own thread, loop and client: renewals never wait for this loop (kube/election_thread.py).
                    self.elector = ElectionThread(
                        lambda: make_api_client(kubernetes.kubeconfig, kubernetes.context),
                        namespace=lease_namespace(election.lease_namespace),
                        name=settings.sharding.lease_name(election.lease_name),
                        identity=self.identity,
                        lease_duration=election.lease_duration_seconds,
                        renew_deadline=election.renew_deadline_seconds,
                        retry_period=election.retry_period_seconds,
                        observe_renew_late=self.metrics.observe_leader_renew_late,
                    )
                    self.elector.on_started_leading(self._lead)
                    self.elector.on_stopped_leading(self._follow)
                    elector_task = asyncio.create_task(self.elector.run(), name="leader-election")
                    # The caches list once the first campaign has an outcome (a few hundred ms): a leader
                    # whose target caches listed after it began to lead need not read every target again
                    # at takeover (Manager.activate).
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(min(election.retry_period_seconds, FIRST_CAMPAIGN_WAIT)):
                            await self.elector.leader_known.wait()
                    await manager.start_caches()
                else:
                    leading_since = time.monotonic()
                    await manager.start_caches()
                    await manager.activate(leading_since)
                    self.metrics.set_leader(True)
                await self._wait_synced_then_ready(stop)
                await stop.wait()
                await self._shutdown(elector_task)
        finally:
            tasks = [t for t in (lag_task, self._freezer) if t is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if recorder is not None:
                await recorder.close()
            if self.http is not None:
                await self.http.stop()
            untrack_gc()
            if self._quiet is not None:
                self._quiet.cancel()
            gc.enable()
            gc.set_threshold(*thresholds)

    async def _wait_synced_then_ready(self, stop: asyncio.Event) -> None:
        assert self.manager is not None
        synced = asyncio.create_task(self.manager.wait_synced())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({synced, stopping}, return_when=asyncio.FIRST_COMPLETED)
        for task in (synced, stopping):
            task.cancel()
        if self.manager.synced():
            self.ready.set()
            log.info("caches synced", lists=self.manager.list_calls())
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
        if not self._stopping:
            log.warning("leadership lost: reconcilers stopped", identity=self.identity)

    def _may_write(self) -> bool:
        if self._stopping:
            return False
        return self.elector is None or self.elector.is_leader

    async def _shutdown(self, elector_task: asyncio.Task[None] | None) -> None:
        self._stopping = True
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

    def stale_cache_limit(self) -> float:
        """How long a watch cache may not follow the API server before /readyz fails: two sync periods.
        (Decisions of the targets it serves pause at once; readiness tolerates a reconnect's blip.)"""
        return 2 * self.settings.sync.period_seconds

    def _readiness(self) -> list[ReadinessCheck]:
        def caches() -> tuple[bool, str]:
            if self.manager is None:
                return False, "starting"
            return cache_readiness(self.manager.caches, self.stale_cache_limit())

        def leadership() -> tuple[bool, str]:
            if self.elector is None:
                return True, "leader election disabled"
            holder = self.elector.leader_identity
            if self.elector.is_leader:
                return True, "leading"
            return (holder is not None, f"standby (leader: {holder})" if holder else "no leader known yet")

        return [
            ReadinessCheck("caches", caches),
            ReadinessCheck("leadership", leadership),
            # One check a backend: "prometheus" the default one, "prometheus:<name>" each of prometheus.backends.
            *(
                ReadinessCheck(
                    "prometheus" if name == DEFAULT_BACKEND else f"prometheus:{name}", self._backend_check(name)
                )
                for name in self.backend.healths
            ),
        ]

    def _backend_check(self, name: str) -> Callable[[], Awaitable[tuple[bool, str]]]:
        """``/readyz``'s check of the backend ``name``: it answers (within the last minute, or now), and whether
        it is degraded (answering some targets, failing most)."""

        async def check() -> tuple[bool, str]:
            backend: Backend | None = self.router.backends.get(name) if self.router is not None else None
            if backend is None:
                return False, "starting"
            ok, detail = await backend.readiness()
            degraded = self.backend.healths[name].readiness_note() if ok else None
            return ok, detail + (f"; {degraded}" if degraded else "")

        return check

    def _liveness(self) -> list[ReadinessCheck]:
        def watches() -> tuple[bool, str]:
            # A cache's task runs until shutdown, whatever fails (it relists); one that ended is a bug,
            # and a restart of the process is the cure.
            stopped = self.manager.stopped_caches() if self.manager is not None and not self._stopping else []
            return (not stopped, "running" if not stopped else f"ended: {', '.join(stopped)}")

        return [ReadinessCheck("watches", watches)]


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
    configure_logging(settings.logging, in_thread=True)
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
    period); uvloop schedules them in C (in the 1,000-target benchmark, 3.5 % of the service's CPU is
    in its loop; it was not measured alone against asyncio's). Everything the service uses (aiohttp,
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
