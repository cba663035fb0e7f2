"""The service's object graph, built in one place: what ``autoscaler run`` is made of, and how the parts
are joined.

Three steps, in the order start-up needs them (``service/app.py`` owns that order and every part's start
and stop):

* :func:`build_reporting`: what the service reports through, from the settings alone (its metrics, its
  clock, each Prometheus backend's health, the one redaction of secrets); the HTTP server needs it before
  any client exists;
* :func:`build_sync_parts`: from an opened Kubernetes client and a way to read metrics, what every
  reconciler stands on: the batcher and its pacer, the pod index, the watch caches, the scales, the view,
  the writer and its Events, the sync context. The tests build their managers through it too;
* :func:`build_service`: from the opened clients, the rest: the Prometheus backends and their router, the
  sync parts, the manager, the recorder, and the elector when leader election is enabled.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from kubernetes_asyncio.client import ApiClient

from autoscaler.kube.api import KubeApi
from autoscaler.kube.client import make_api_client
from autoscaler.kube.election_thread import ElectionThread
from autoscaler.kube.events import EventRecorder
from autoscaler.kube.pods import PodIndex
from autoscaler.kube.scale import ScaleAccess
from autoscaler.loop.clock import ProcessClock, SkewMonitor
from autoscaler.loop.pacing import TurnPacer
from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.service.backends.healths import BackendHealths
from autoscaler.service.backends.router import BackendRouter, open_backends
from autoscaler.service.cluster.caches import ClusterCaches
from autoscaler.service.cluster.sharding import ShardingSettings
from autoscaler.service.cluster.targets import Target
from autoscaler.service.manager import Manager
from autoscaler.service.prediction.cache import ForecastCache
from autoscaler.service.prediction.gauges import ForecastCollector
from autoscaler.service.settings import ServiceSettings
from autoscaler.service.sync.batcher import MetricsBatcher, ReadMany
from autoscaler.service.sync.reconciler import SyncContext, SyncReports
from autoscaler.service.sync.scales import ClusterScales
from autoscaler.service.sync.schedule import Schedule, TickTimers
from autoscaler.service.sync.view import CachedView
from autoscaler.service.sync.writes import ApiWriter
from autoscaler.service.telemetry.metrics import ServiceMetrics
from autoscaler.service.telemetry.metrics_sink import MetricsSink, NullMetrics
from autoscaler.service.telemetry.recorder import SyncRecorder

SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def always() -> bool:
    return True


@dataclass(frozen=True)
class Reporting:
    """What the service reports through, made before any client: the HTTP server serves it from the start."""

    metrics: ServiceMetrics
    clock: ProcessClock  # decisions' and queries' "now": Unix time that never steps
    prometheus_skew: SkewMonitor  # the default Prometheus backend's clock, against ours
    backends: BackendHealths  # each Prometheus backend's health, said once for all the targets that read from it
    secrets: KnownSecrets  # one redaction, every client's secrets, for every sink (telemetry/redaction.py)


def build_reporting(settings: ServiceSettings) -> Reporting:
    metrics = ServiceMetrics(per_target_limit=settings.telemetry.metrics.per_target_series_limit)
    metrics.set_shard(settings.serving.sharding.shard, settings.serving.sharding.label_key)
    skew = SkewMonitor("prometheus", settings.sync.clock_skew_warning_seconds, metrics.set_clock_skew)
    healths = BackendHealths.for_service(settings, metrics.registry)
    return Reporting(metrics, ProcessClock(), skew, healths, KnownSecrets())


@dataclass(frozen=True)
class SyncHooks:
    """How the sync parts report, and when they may write: what the service gives them besides settings."""

    metrics: MetricsSink = field(default_factory=NullMetrics)
    may_write: Callable[[], bool] = always  # false while this instance does not lead, or is stopping
    # A scale write's own writes (its status, its Event) while stopping: see service/sync/writes.py.
    may_finish: Callable[[], bool] | None = None
    identity: str = ""  # the Events' reportingInstance
    recorder: SyncRecorder | None = None  # autoscaler run --record FILE
    clock: Callable[[], float] | None = None  # decisions' "now"; a ProcessClock's unless given
    backend_health: BackendHealths | None = None  # each backend's health, which every sync reports to
    forecasts: ForecastCache | None = None  # spec.prediction's forecasts, refreshed in the background


@dataclass(frozen=True)
class SyncParts:
    """What every reconciler stands on, built once and shared by all of them."""

    kube: KubeApi
    batcher: MetricsBatcher  # the syncs' metric reads, batched; closed when the manager stops
    pods: PodIndex  # the pods the pod caches hold, by labels
    cluster: ClusterCaches  # the watch caches; the manager starts and stops them
    view: CachedView  # what a sync reads
    writer: ApiWriter  # what a sync writes (and the manager, for an invalid target)
    context: SyncContext  # the settings a sync decides with, its schedule, its reports


def build_sync_parts(
    settings: ServiceSettings, kube: KubeApi, read_many: ReadMany, hooks: SyncHooks, *, static: bool
) -> SyncParts:
    """``static``: the targets come from a file (no target caches, no status on the server)."""
    sync, kubernetes, sharding = settings.sync, settings.kubernetes, settings.serving.sharding
    pacer = TurnPacer()  # the syncs' starts and their returns from the batcher share its turns
    batcher = MetricsBatcher(read_many, window=sync.batch_window_seconds, pacer=pacer)
    pods = PodIndex()
    cluster = ClusterCaches(
        kube,
        kubernetes.namespaces,
        on_pod=pods.on_change,
        watch_targets=not static,
        silence_seconds=kubernetes.watch_silence_seconds,
        sharding=sharding,
        relist_policy=kubernetes.relists,
    )
    scales = ClusterScales(cluster.deployment, ScaleAccess(kube))
    view = CachedView(cluster, pods, scales, batcher, hooks.forecasts)
    events = EventRecorder(
        kube, instance=event_instance(hooks.identity, sharding), on_dropped=hooks.metrics.count_event_dropped
    )
    writer = ApiWriter(
        kube,
        scales,
        events,
        may_write=hooks.may_write,
        may_finish=hooks.may_finish,
        static=static,
        target_problem=cluster.target_problem,
    )
    context = SyncContext(
        settings.controller,
        settings.serving.dry_run,
        Schedule(sync.period_seconds, sync.jitter),
        asyncio.Semaphore(sync.concurrency),
        hooks.clock or ProcessClock().now,
        TickTimers(pacer),
        SyncReports(hooks.metrics, hooks.recorder, sharding.shard, hooks.backend_health),
    )
    return SyncParts(kube, batcher, pods, cluster, view, writer, context)


def event_instance(identity: str, sharding: ShardingSettings) -> str:
    """The Events' ``reportingInstance``: the instance, and its shard (at most 128 characters)."""
    return (identity if sharding.shard is None else f"{identity} (shard {sharding.shard})")[:128]


@dataclass(frozen=True)
class ServiceParts:
    """The service's object graph once its clients are open."""

    kube: KubeApi
    router: BackendRouter  # each metric read from its backend (service/backends/router.py)
    sync: SyncParts
    manager: Manager
    elector: ElectionThread | None  # None: leader election disabled
    recorder: SyncRecorder | None  # autoscaler run --record FILE


async def build_service(
    settings: ServiceSettings,
    api_client: ApiClient,
    clients: contextlib.AsyncExitStack,
    reporting: Reporting,
    *,
    identity: str,
    static_targets: list[Target] | None,
    record: str | None,
    stopping: Callable[[], bool],
) -> ServiceParts:
    """Every part of the service, from its opened Kubernetes client; each Prometheus client is closed by
    ``clients``. ``stopping``: true once shutdown began (no new write from then on)."""
    metrics = reporting.metrics
    kube = KubeApi(api_client, observe=metrics.observe_kubernetes_request)
    backends = await open_backends(
        settings, metrics, reporting.clock.now, reporting.prometheus_skew, reporting.secrets, clients, kube
    )
    router = BackendRouter(backends)
    election = settings.serving.leader_election
    lease = lease_namespace(election.lease_namespace), settings.serving.sharding.lease_name(election.lease_name)
    reporting.backends.post_events_to(kube, identity, lease if election.enabled else None)
    elector = build_elector(settings, identity, lease, metrics) if election.enabled else None

    def may_finish() -> bool:  # see service/sync/writes.py
        return elector is None or elector.is_leader

    def may_write() -> bool:
        return not stopping() and may_finish()

    recorder = SyncRecorder(record, settings.controller) if record else None
    # spec.prediction: each forecast metric's history read from its backend in the background (service/prediction).
    forecasts = ForecastCache(lambda name: backends[name].client if name in backends else None, reporting.clock.now)
    clients.push_async_callback(forecasts.close)
    metrics.registry.register(ForecastCollector(forecasts.states))
    hooks = SyncHooks(
        metrics, may_write, may_finish, identity, recorder, reporting.clock.now, reporting.backends, forecasts
    )
    sync = build_sync_parts(settings, kube, router.read, hooks, static=static_targets is not None)
    sync.writer.redaction = reporting.secrets
    manager = Manager(sync, static_targets=static_targets, on_targets=metrics.set_targets)
    return ServiceParts(kube, router, sync, manager, elector, recorder)


def build_elector(
    settings: ServiceSettings, identity: str, lease: tuple[str, str], metrics: ServiceMetrics
) -> ElectionThread:
    """The elector, on its own thread, loop and client: renewals never wait for the service's loop
    (kube/election_thread.py)."""
    election, kubernetes = settings.serving.leader_election, settings.kubernetes
    namespace, name = lease
    return ElectionThread(
        lambda: make_api_client(kubernetes.kubeconfig, kubernetes.context),
        namespace=namespace,
        name=name,
        identity=identity,
        lease_duration=election.lease_duration_seconds,
        renew_deadline=election.renew_deadline_seconds,
        retry_period=election.retry_period_seconds,
        observe_renew_late=metrics.observe_leader_renew_late,
    )


def lease_namespace(configured: str | None) -> str:
    """The Lease's namespace: the configured one, else the service's own (its service account's), else default."""
    if configured:
        return configured
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as handle:
            return handle.read().strip() or "default"
    except OSError:
        return "default"
