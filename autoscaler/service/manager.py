"""The manager: watch caches, and one reconciler per valid target, started and stopped as targets change.

Targets come from the ScalingTarget CRD (watched cluster-wide or in the listed namespaces) or from a
file (standalone). A target added, changed or deleted starts, restarts or stops its reconciler at
once (the first sync of a new target follows within a second). An invalid target gets a condition
and an Event listing every problem, and no reconciler; the others go on.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from autoscaler.core.observation import ContainerInfo, MetricReading
from autoscaler.core.settings import ControllerSettings
from autoscaler.kube.api import DEPLOYMENTS, PODS, VPAS, KubeApi, KubeError
from autoscaler.kube.events import EventRecorder, InvolvedObject
from autoscaler.kube.pods import PodIndex
from autoscaler.kube.records import PodRecord, WorkloadRecord, trim_deployment, trim_object, trim_pod
from autoscaler.kube.scale import DEFAULT_API_VERSIONS, Scale, ScaleAccess, ScaleError
from autoscaler.kube.watch import SILENCE_SECONDS, Key, WatchCache
from autoscaler.prometheus.reader import TargetQuery
from autoscaler.service.batcher import MetricsBatcher, ReadMany
from autoscaler.service.hvpa import find_vpa
from autoscaler.service.reconciler import MetricsSink, NullMetrics, Services, TargetReconciler, first_delay
from autoscaler.service.reconciler import invalid_status as build_invalid_status
from autoscaler.service.targets import API_VERSION, KIND, TARGETS, Target, error_text, target_from_object

log = structlog.get_logger("autoscaler.manager")


def _trim_target(obj: Mapping[str, Any]) -> Target | None:
    """The target cache keeps parsed targets (spec validated once per change, status as compact text).
    A target past the depth and size limits is an invalid target with the path of the problem
    (:func:`~autoscaler.service.targets.target_from_object` never raises)."""
    meta = obj.get("metadata")
    return target_from_object(obj) if isinstance(meta, Mapping) and isinstance(meta.get("name"), str) else None


@dataclass
class _Running:
    target: Target
    reconciler: TargetReconciler
    task: asyncio.Task[None]


class ClusterScales:
    """Scales of Deployments from the cache; any other kind through its scale subresource."""

    def __init__(self, deployments: Callable[[str, str], WorkloadRecord | None], access: ScaleAccess) -> None:
        self._deployments = deployments
        self._access = access
        # What we wrote, until the cache shows a newer version of the object (watch events lag a little).
        self._written: dict[Key, tuple[str, Scale]] = {}

    @staticmethod
    def _is_deployment(target: Target) -> bool:
        assert target.spec is not None
        ref = target.spec.scale_target_ref
        return ref.kind == "Deployment" and (ref.api_version or DEFAULT_API_VERSIONS["Deployment"]) == "apps/v1"

    async def read(self, target: Target) -> Scale:
        assert target.spec is not None
        ref = target.spec.scale_target_ref
        if not self._is_deployment(target):
            return await self._access.get(ref, target.namespace)
        record = self._deployments(target.namespace, ref.name)
        if record is None:
            raise ScaleError(f'deployments.apps "{ref.name}" not found')
        written = self._written.get((target.namespace, ref.name))
        if written is not None:
            if written[0] == record.resource_version:
                return written[1]
            del self._written[(target.namespace, ref.name)]
        return Scale(record.spec_replicas, record.status_replicas, record.selector, record.resource_version)

    async def write(self, target: Target, replicas: int, decided_on: Scale) -> None:
        assert target.spec is not None
        result = await self._access.set_replicas(target.spec.scale_target_ref, target.namespace, replicas, decided_on)
        if self._is_deployment(target):
            self._written[(target.namespace, target.spec.scale_target_ref.name)] = (decided_on.resource_version, result)


class Manager:
    def __init__(self, api: KubeApi, read_many: ReadMany, *, settings: ControllerSettings, period: float = 15.0,
                 jitter: float = 0.1, concurrency: int = 50, batch_window: float = 1.0, dry_run: bool = False,
                 namespaces: Iterable[str] = (), static_targets: list[Target] | None = None,
                 metrics: MetricsSink | None = None, may_write: Callable[[], bool] = lambda: True,
                 identity: str = "", on_targets: Callable[[int, int], None] | None = None,
                 watch_silence: float = SILENCE_SECONDS) -> None:
        self.api = api
        self.namespaces = tuple(namespaces)
        self.static = static_targets is not None
        self.batcher = MetricsBatcher(read_many, window=batch_window)
        self.pods = PodIndex()
        self.events = EventRecorder(api, instance=identity)
        self.metrics = metrics or NullMetrics()
        scopes: tuple[str | None, ...] = self.namespaces or (None,)
        self.pod_caches = {ns: WatchCache(api, PODS, trim_pod, namespace=ns, on_change=self.pods.on_change,
                                          silence_seconds=watch_silence) for ns in scopes}
        self.deployment_caches: dict[str | None, WatchCache[WorkloadRecord]] = {
            ns: WatchCache(api, DEPLOYMENTS, trim_deployment, namespace=ns, silence_seconds=watch_silence)
            for ns in scopes}
        self.vpa_caches = {ns: WatchCache(api, VPAS, trim_object, namespace=ns, optional=True,
                                          silence_seconds=watch_silence) for ns in scopes}
        self.target_caches = {} if self.static else {
            ns: WatchCache(api, TARGETS, _trim_target, namespace=ns, on_change=self._target_event,
                           silence_seconds=watch_silence) for ns in scopes}
        self.scales = ClusterScales(self._deployment, ScaleAccess(api))
        self.services = Services(
            settings=settings, period=period, jitter=jitter, dry_run=dry_run,
            semaphore=asyncio.Semaphore(concurrency), scales=self.scales, select_pods=self.pods.select,
            others_selecting=self._others_selecting, selector_changed=self._selector_changed,
            involved=self._involved, read_metrics=self._read_metrics,
            record_event=self.events.record, write_status=self._write_status, may_write=may_write,
            metrics=self.metrics, find_vpa=self._find_vpa, template_of=self._template_of, write_vpa=self._write_vpa,
            cache_problem=self._cache_problem)
        self.running: dict[Key, _Running] = {}
        self._running_in: dict[str, dict[Key, _Running]] = {}  # the same, by namespace
        # AmbiguousSelector: per namespace, which targets select each pod (and each target's answer), as of
        # (pod membership version, selectors version); the selectors version moves when a target starts,
        # stops or changes selector. Checks read it instead of matching every selector again.
        self._selecting: dict[str, tuple[tuple[int, int], dict[str, list[Key]], dict[Key, list[str]]]] = {}
        self._selectors_version: dict[str, int] = defaultdict(int)
        self.invalid: dict[Key, Target] = {}
        self.statuses: dict[Key, Mapping[str, Any]] = {}  # last status of targets without a running reconciler
        self._targets: dict[Key, Target] = {t.key: t for t in static_targets or []}
        self._tasks: list[asyncio.Task[None]] = []
        self._cache_tasks: list[asyncio.Task[None]] = []
        self._active = False
        self._changes: asyncio.Queue[Key] = asyncio.Queue()
        self._on_targets = on_targets  # told (active, invalid) whenever the set of targets changes

    # -- lifecycle ----------------------------------------------------------------------------------

    @property
    def caches(self) -> list[WatchCache[Any]]:
        return [*self.pod_caches.values(), *self.deployment_caches.values(), *self.vpa_caches.values(),
                *self.target_caches.values()]

    def stopped_caches(self) -> list[str]:
        """Caches whose task ended (it never should while the service runs: a bug), for /healthz."""
        return [task.get_name() for task in self._cache_tasks if task.done()]

    def synced(self) -> bool:
        return all(cache.synced.is_set() for cache in self.caches)

    async def start_caches(self) -> None:
        for cache in self.caches:
            task = asyncio.create_task(cache.run(), name=f"watch {cache.name}")
            self._cache_tasks.append(task)
            self._tasks.append(task)

    async def wait_synced(self) -> None:
        await asyncio.gather(*(cache.synced.wait() for cache in self.caches))

    async def activate(self) -> None:
        """Start reconciling every known target (on becoming leader, or at once without election)."""
        await self.wait_synced()
        if self._active:
            return
        self._active = True
        for target in list(self._targets.values()):
            await self._apply_target(target, at_startup=True)
        self._report_counts()
        self._tasks.append(asyncio.create_task(self._process_changes(), name="target changes"))

    async def deactivate(self) -> None:
        """Stop every reconciler now (leadership lost or shutting down); caches keep running."""
        self._active = False
        for key in list(self.running):
            await self._stop(key)

    async def stop(self) -> None:
        await self.deactivate()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await self.batcher.close()

    # -- targets ------------------------------------------------------------------------------------

    def _target_event(self, key: Key, old: Target | None, new: Target | None) -> None:
        if new is None:
            self._targets.pop(key, None)
        else:
            self._targets[key] = new
        self._changes.put_nowait(key)

    async def _process_changes(self) -> None:
        while True:
            key = await self._changes.get()
            if not self._active:
                continue
            target = self._targets.get(key)
            if target is None:
                await self._stop(key)
                self.invalid.pop(key, None)
                self.statuses.pop(key, None)
                log.info("target deleted: reconciler stopped", namespace=key[0], name=key[1])
            else:
                await self._apply_target(target, at_startup=False)
            self._report_counts()

    def _report_counts(self) -> None:
        if self._on_targets is not None:
            self._on_targets(len(self.running), len(self.invalid))

    async def _apply_target(self, target: Target, *, at_startup: bool) -> None:
        key = target.key
        running = self.running.get(key)
        if running is not None and running.target.same_spec(target):
            running.target = target
            running.reconciler.target = target
            return
        state = last_status = None
        if running is not None:
            state, last_status = running.reconciler.state, running.reconciler.last_status
            await self._stop(key)
        if not target.valid:
            await self._report_invalid(target)
            return
        self.invalid.pop(key, None)
        reconciler = TargetReconciler(target, self.services, state=state,
                                      last_status=last_status or target.status or self.statuses.get(key))
        task = asyncio.create_task(reconciler.run(first_delay(self.services.period, at_startup=at_startup)),
                                   name=f"reconcile {key[0]}/{key[1]}")
        self.running[key] = self._running_in.setdefault(key[0], {})[key] = _Running(target, reconciler, task)
        self._selectors_version[key[0]] += 1
        log.info("reconciler started" if running is None else "reconciler restarted: spec changed",
                 namespace=key[0], name=key[1])

    async def _stop(self, key: Key) -> None:
        running = self.running.pop(key, None)
        if running is None:
            return
        in_namespace = self._running_in.get(key[0], {})
        in_namespace.pop(key, None)
        self._selectors_version[key[0]] += 1
        if not in_namespace:
            self._running_in.pop(key[0], None)
            self._selecting.pop(key[0], None)
        running.task.cancel()
        await asyncio.gather(running.task, return_exceptions=True)
        if running.reconciler.last_status is not None:
            self.statuses[key] = running.reconciler.last_status

    async def _report_invalid(self, target: Target) -> None:
        previous = self.invalid.get(target.key)
        self.invalid[target.key] = target
        if previous is not None and previous.errors == target.errors and previous.generation == target.generation:
            return  # reported already (our own status write comes back as a change)
        log.warning("invalid target: skipped", namespace=target.namespace, name=target.name,
                    errors=[str(e) for e in target.errors])
        if not self.services.may_write():
            return
        await self.events.record(self._involved(target), "Warning", "InvalidSpec", error_text(target.errors))
        document = build_invalid_status(target, time.time(), target.status)
        await self._write_status(target, document, target.status)

    # -- services for reconcilers ---------------------------------------------------------------

    def _deployment(self, namespace: str, name: str) -> WorkloadRecord | None:
        cache = self.deployment_caches.get(namespace if self.namespaces else None)
        return cache.get(namespace, name) if cache is not None else None

    def _cache_problem(self, target: Target) -> str | None:
        """Why the cached state a target's decision rests on cannot be trusted now, or None.

        Its pods, its workload and the targets themselves come from watch caches; while one of those
        does not follow the server (a broken or frozen watch, from the moment it is noticed until the
        relist), the target's decisions pause: no decision, and so no write, from a state the cluster may
        have left behind. The cache logs the incident once; the held syncs count as errors with reason
        StaleCache."""
        scope = target.namespace if self.namespaces else None
        caches: list[WatchCache[Any] | None] = [self.pod_caches.get(scope), self.deployment_caches.get(scope),
                                                self.target_caches.get(scope)]
        if target.spec is not None and target.spec.hvpa is not None:
            caches.append(self.vpa_caches.get(scope))
        for cache in caches:
            if cache is not None and not cache.following:
                return (f"the {cache.name} watch has not followed the API server for {cache.stale_for():.0f}s: "
                        f"{cache.last_error}")
        return None

    def _find_vpa(self, target: Target) -> Mapping[str, Any] | None:
        if target.spec is None or target.spec.hvpa is None:
            return None
        cache = self.vpa_caches.get(target.namespace if self.namespaces else None)
        return find_vpa(cache.values(), target.namespace, target.spec) if cache is not None else None

    def _template_of(self, target: Target) -> list[ContainerInfo]:
        if target.spec is None:
            return []
        record = self._deployment(target.namespace, target.spec.scale_target_ref.name)
        if record is None:
            return []
        return [ContainerInfo(name, dict(requests)) for name, requests in record.container_requests.items()]

    async def _write_vpa(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        await self.api.merge_patch(VPAS.item(namespace, name), patch, resource="verticalpodautoscalers")

    def _others_selecting(self, target: Target, pods: list[PodRecord]) -> list[str]:
        """Other targets in the namespace whose selector also picks one of these pods (AmbiguousSelector).

        Exactly what matching every other selector against these pods would answer, but the
        pod → selecting targets map of a namespace is rebuilt only when its pods come, go or change
        labels, or its targets or their selectors change: a steady sync costs a lookup per pod, not a
        match per pod and selector (which made a sync's cost grow with the number of targets)."""
        namespace = target.namespace
        running = self._running_in.get(namespace)
        if not running or (len(running) == 1 and target.key in running):
            return []
        version = (self.pods.membership_version(namespace), self._selectors_version[namespace])
        memo = self._selecting.get(namespace)
        if memo is None or memo[0] != version:
            owners: dict[str, list[Key]] = {}
            for key, r in running.items():
                if r.reconciler.selector is not None:
                    for pod in self.pods.select(namespace, r.reconciler.selector):
                        owners.setdefault(pod.name, []).append(key)
            memo = self._selecting[namespace] = (version, owners, {})
        # The same version means the same pods for this target's selector: its answer is kept too.
        answer = memo[2].get(target.key)
        if answer is None:
            others = {key for p in pods for key in memo[1].get(p.name, ()) if key != target.key}
            answer = memo[2][target.key] = sorted(f"{key[0]}/{key[1]}" for key in others)
        return answer

    def _selector_changed(self, target: Target) -> None:
        self._selectors_version[target.namespace] += 1

    def _involved(self, target: Target) -> InvolvedObject:
        if self.static and target.spec is not None:
            # Standalone targets do not exist in the cluster: their Events go to the scaled workload.
            ref = target.spec.scale_target_ref
            return InvolvedObject(ref.api_version or DEFAULT_API_VERSIONS.get(ref.kind, ""), ref.kind,
                                  target.namespace, ref.name)
        return InvolvedObject(API_VERSION, KIND, target.namespace, target.name, target.uid)

    async def _read_metrics(self, query: TargetQuery) -> list[MetricReading]:
        return await self.batcher.read(query)

    async def _write_status(self, target: Target, document: Mapping[str, Any],
                            previous: Mapping[str, Any] | None) -> None:
        if target.key not in self.running:
            # A running reconciler keeps its own last status (compressed); this copy is for the others
            # (invalid targets), and _stop keeps a stopped reconciler's.
            self.statuses[target.key] = document
        if self.static:
            return
        body = {"status": {**{k: None for k in (previous or {}) if k not in document}, **document}}
        try:
            await self.api.merge_patch(TARGETS.item(target.namespace, target.name, "status"), body,
                                       resource="scalingtargets/status")
        except KubeError as exc:
            if not exc.not_found:  # a target deleted meanwhile needs no status
                log.warning("could not write status", namespace=target.namespace, name=target.name, error=str(exc))

    # -- introspection ------------------------------------------------------------------------------

    def target_documents(self) -> dict[Key, Mapping[str, Any]]:
        """The latest status of every target, for /api/targets and ``autoscaler explain``."""
        documents = dict(self.statuses)
        for key, running in self.running.items():
            if running.reconciler.last_status is not None:
                documents[key] = running.reconciler.last_status
        return documents

    def list_calls(self) -> int:
        return sum(cache.lists for cache in self.caches)
