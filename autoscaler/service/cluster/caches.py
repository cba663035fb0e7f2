"""The watch caches the service keeps of the cluster: pods, Deployments, VPAs and the other autoscalers (HPAs,
KEDA ScaledObjects: :mod:`autoscaler.service.cluster.other_autoscalers`) per watched scope (every namespace, or each
listed one), and the targets themselves unless they come from a file."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from autoscaler.core.other_autoscalers import OtherAutoscaler
from autoscaler.kube.api import DEPLOYMENTS, HPAS, PODS, SCALED_OBJECTS, VPAS, KubeApi, ResourcePath
from autoscaler.kube.records import PodRecord, WorkloadRecord, trim_deployment, trim_object, trim_pod
from autoscaler.kube.relists import DEFAULT_RELIST_POLICY, RelistPolicy
from autoscaler.kube.watch import ChangeHandler, Key, WatchCache
from autoscaler.service.cluster.other_autoscalers import AutoscalerIndex, trim_hpa, trim_scaled_object
from autoscaler.service.cluster.scope import Scope, scoped_retrim, scoped_trim
from autoscaler.service.cluster.sharding import ShardingSettings
from autoscaler.service.cluster.targets import TARGETS, Target, target_from_object

# LISTs at once across an instance's caches: the four kinds of one scope (an unsharded instance's whole
# start-up); more would only hold more pages in memory, as decoding them is what takes the time.
LISTS_AT_ONCE = 4

PodHandler = Callable[[Key, PodRecord | None, PodRecord | None], None]
TargetHandler = Callable[[Key, Target | None, Target | None], None]
R = TypeVar("R")


def trim_target(obj: Mapping[str, Any], known: Target | None = None) -> Target | None:
    """The target cache keeps parsed targets (spec validated once per change, status as compact text).
    A target past the depth and size limits is an invalid target with the path of the problem
    (:func:`~autoscaler.service.cluster.targets.target_from_object` never raises). ``known``: the target of an
    earlier version of the object, whose spec is kept at the same generation (each status write comes back
    through the watch; at 10,000 targets, parsing their specs again was a tenth of the service's CPU)."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
        return None
    return target_from_object(obj, known=known)


def retrim_target(known: Target, obj: Mapping[str, Any]) -> Target | None:
    """:func:`trim_target` of a new version of ``known``'s object (a watch cache's ``retrim``)."""
    return trim_target(obj, known)


def _scope(resource: ResourcePath, namespace: str | None, sharding: ShardingSettings | None = None) -> Scope:
    """What one cache (named as the watch cache names itself) may hold."""
    return Scope(f"{resource.label} in {namespace}" if namespace else resource.label, namespace, sharding)


def _scoped_caches(
    api: KubeApi,
    resource: ResourcePath,
    trim: Callable[[Mapping[str, Any]], R | None],
    scopes: tuple[str | None, ...],
    *,
    silence_seconds: float,
    list_slots: asyncio.Semaphore,
    relist_policy: RelistPolicy,
    on_change: ChangeHandler | None = None,
    optional: bool = False,
) -> dict[str | None, WatchCache[R]]:
    """One cache of ``resource`` per watched scope, each leaving out what is outside its scope."""
    return {
        ns: WatchCache(
            api,
            resource,
            scoped_trim(trim, _scope(resource, ns)),
            namespace=ns,
            on_change=on_change,
            optional=optional,
            silence_seconds=silence_seconds,
            list_slots=list_slots,
            relist_policy=relist_policy,
        )
        for ns in scopes
    }


def _target_cache(
    api: KubeApi,
    namespace: str | None,
    on_target: TargetHandler,
    sharding: ShardingSettings | None,
    *,
    silence_seconds: float,
    list_slots: asyncio.Semaphore,
    relist_policy: RelistPolicy,
) -> WatchCache[Target]:
    scope = _scope(TARGETS, namespace, sharding)
    return WatchCache(
        api,
        TARGETS,
        scoped_trim(trim_target, scope),
        retrim=scoped_retrim(retrim_target, scope),
        namespace=namespace,
        on_change=on_target,
        label_selector=sharding.label_selector if sharding is not None else None,
        silence_seconds=silence_seconds,
        list_slots=list_slots,
        relist_policy=relist_policy,
    )


class ClusterCaches:
    def __init__(
        self,
        api: KubeApi,
        namespaces: tuple[str, ...],
        *,
        on_pod: PodHandler,
        watch_targets: bool,
        silence_seconds: float,
        sharding: ShardingSettings | None = None,
        relist_policy: RelistPolicy = DEFAULT_RELIST_POLICY,
    ) -> None:
        """``watch_targets`` false: targets come from a file, no target cache; else each change of a target
        goes to the handler given to :meth:`listen_to_targets` (the manager's). ``sharding``: the targets this
        instance serves (its shard's label selector, see :mod:`autoscaler.service.cluster.sharding`); the workloads,
        pods and VPAs carry no shard label and are watched whole. Every cache leaves out what the API server
        sends from outside its namespace or shard (:mod:`autoscaler.service.cluster.scope`). ``relist_policy``: every
        cache's backoff and relist limit (``kubernetes.relists``)."""
        self.api = api
        self.namespaces = namespaces
        self.sharding = sharding or ShardingSettings()
        self._on_target: TargetHandler | None = None
        scopes: tuple[str | None, ...] = namespaces or (None,)
        # Caches per namespace (kubernetes.namespaces) would otherwise all list at once, and hold all their
        # LISTs' pages in memory together at start-up (docs/benchmarks-history.md, "Shared tick timers, the
        # harness's core at start-up, shards by namespace").
        slots = asyncio.Semaphore(LISTS_AT_ONCE)
        quiet, policy = silence_seconds, relist_policy
        self.pods = _scoped_caches(
            api, PODS, trim_pod, scopes, on_change=on_pod, silence_seconds=quiet, list_slots=slots, relist_policy=policy
        )
        self.deployments = _scoped_caches(
            api, DEPLOYMENTS, trim_deployment, scopes, silence_seconds=quiet, list_slots=slots, relist_policy=policy
        )
        self.vpas = _scoped_caches(
            api, VPAS, trim_object, scopes, optional=True, silence_seconds=quiet, list_slots=slots, relist_policy=policy
        )
        # Never two writers: a workload another autoscaler scales is not scaled here (issue 43). KEDA's CRD
        # may be missing (most clusters): its cache is empty until it is served.
        self.autoscalers = AutoscalerIndex()
        on_autoscaler = self.autoscalers.on_change
        self.hpas = _scoped_caches(
            api,
            HPAS,
            trim_hpa,
            scopes,
            on_change=on_autoscaler,
            silence_seconds=quiet,
            list_slots=slots,
            relist_policy=policy,
        )
        self.scaled_objects = _scoped_caches(
            api,
            SCALED_OBJECTS,
            trim_scaled_object,
            scopes,
            on_change=on_autoscaler,
            optional=True,
            silence_seconds=quiet,
            list_slots=slots,
            relist_policy=policy,
        )
        self.targets = (
            {
                ns: _target_cache(
                    api,
                    ns,
                    self._target_changed,
                    sharding,
                    silence_seconds=quiet,
                    list_slots=slots,
                    relist_policy=policy,
                )
                for ns in scopes
            }
            if watch_targets
            else {}
        )
        self._tasks: list[asyncio.Task[None]] = []

    def listen_to_targets(self, handler: TargetHandler) -> None:
        """Tell ``handler`` of every change of a target the target caches hold (one listener: the manager)."""
        self._on_target = handler

    def _target_changed(self, key: Key, old: Target | None, new: Target | None) -> None:
        if self._on_target is not None:
            self._on_target(key, old, new)

    def scope(self, namespace: str) -> str | None:
        """The cache scope that holds ``namespace``'s objects."""
        return namespace if self.namespaces else None

    @property
    def all(self) -> list[WatchCache[Any]]:
        return [
            *self.pods.values(),
            *self.deployments.values(),
            *self.vpas.values(),
            *self.hpas.values(),
            *self.scaled_objects.values(),
            *self.targets.values(),
        ]

    def deployment(self, namespace: str, name: str) -> WorkloadRecord | None:
        cache = self.deployments.get(self.scope(namespace))
        return cache.get(namespace, name) if cache is not None else None

    def vpas_of(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        cache = self.vpas.get(self.scope(namespace))
        return cache.values() if cache is not None else ()

    def other_autoscalers(self, namespace: str, workload: str) -> list[OtherAutoscaler]:
        """The HPAs and ScaledObjects the caches hold whose scaleTargetRef names ``workload``."""
        return self.autoscalers.scaling(namespace, workload)

    def behind(self, namespace: str, *, vpas: bool) -> WatchCache[Any] | None:
        """A cache holding ``namespace``'s pods, workloads, targets or other autoscalers (and VPAs, with
        ``vpas``) that does not follow the API server now, if one does not: a broken HPA watch may hide the
        HPA that now scales the workload."""
        scope = self.scope(namespace)
        caches: list[WatchCache[Any] | None] = [
            self.pods.get(scope),
            self.deployments.get(scope),
            self.targets.get(scope),
            self.hpas.get(scope),
            self.scaled_objects.get(scope),
        ]
        if vpas:
            caches.append(self.vpas.get(scope))
        return next((cache for cache in caches if cache is not None and not cache.following), None)

    def target_problem(self, target: Target) -> str | None:
        """Why this instance may not write ``target`` now, or None: asked right before every write. The
        target must still be in this instance's target cache (a label change that moves it to another
        shard, or its deletion, takes it out the moment the watch tells), and that cache must follow the
        API server (a broken watch may hide such a change). Targets from a file have no cache: None."""
        cache = self.targets.get(self.scope(target.namespace))
        if cache is None:
            return None
        if not cache.following:
            return f"the {cache.name} watch does not follow the API server"
        held = cache.get(target.namespace, target.name)
        if held is None or held.uid != target.uid:
            return "the target is no longer among this instance's (deleted, or labelled for another shard)"
        return None

    def targets_listed_after(self, moment: float) -> bool:
        """Whether every target cache follows the API server from a LIST that began after ``moment``
        (monotonic): then it holds every status written before that moment. False without target caches."""
        caches = list(self.targets.values())
        return bool(caches) and all(
            cache.following and cache.listed_since is not None and cache.listed_since > moment for cache in caches
        )

    async def start(self) -> None:
        for cache in self.all:
            self._tasks.append(asyncio.create_task(cache.run(), name=f"watch {cache.name}"))

    def stopped(self) -> list[str]:
        """Caches whose task ended (it never should while the service runs: a bug), for /healthz."""
        return [task.get_name() for task in self._tasks if task.done()]

    def synced(self) -> bool:
        return all(cache.synced.is_set() for cache in self.all)

    async def wait_synced(self) -> None:
        await asyncio.gather(*(cache.synced.wait() for cache in self.all))

    def list_calls(self) -> int:
        return sum(cache.lists for cache in self.all)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
