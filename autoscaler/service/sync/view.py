"""What the service reads: everything a reconciler observes about its target, from the watch caches,
the scale subresource and Prometheus (through the batcher); an HVPA target's VPA too (:func:`vpa_for`,
:func:`vpa_observation`: its CRD may not say what its parts hold, so a part that is not what it should be
reads as empty; HVPA's decision is :func:`autoscaler.core.hvpa.decision.decide_hvpa`, docs/hvpa.md).

:class:`ClusterView` is the interface a reconciler depends on; :class:`CachedView` answers it from the
service's caches. A reconciler never reads the cluster any other way, and the view holds no state of a
reconciler: which targets select which pods (for AmbiguousSelector) is told to it as each sync selects.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from autoscaler.core.hvpa.decision import VpaObservation
from autoscaler.core.hvpa.vpa import read_vpa_status
from autoscaler.core.observation import ContainerInfo, MetricReading
from autoscaler.core.other_autoscalers import api_group, scaled_by
from autoscaler.core.prediction.forecast import Forecast
from autoscaler.core.spec import TargetSpec
from autoscaler.kube.labels import LabelSelector
from autoscaler.kube.pods import PodIndex
from autoscaler.kube.records import PodRecord
from autoscaler.kube.scale import DEFAULT_API_VERSIONS, Scale
from autoscaler.kube.watch import Key
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.service.cluster.caches import ClusterCaches
from autoscaler.service.cluster.targets import Target
from autoscaler.service.prediction.cache import ForecastCache
from autoscaler.service.sync.batcher import MetricsBatcher
from autoscaler.service.sync.scales import ClusterScales
from autoscaler.values.fields import ErrorList
from autoscaler.values.loose_json import as_mapping, mappings_in


@dataclass(frozen=True, slots=True)
class Selection:
    """A target's pods, and the other targets of the namespace selecting any of them (AmbiguousSelector)."""

    pods: list[PodRecord] = field(default_factory=list)  # a shared list: do not modify it
    others: list[str] = field(default_factory=list)  # "namespace/name", sorted
    namespace_pods: int = 0  # every pod of the namespace, selected or not


NOTHING_SELECTED = Selection()


class ClusterView(Protocol):
    """What a reconciler reads."""

    def cache_problem(self, target: Target) -> str | None:
        """Why the cached state the target's decision rests on cannot be trusted now, or None."""

    async def read_scale(self, target: Target) -> Scale:
        """The target's scale; raises :class:`~autoscaler.kube.scale.ScaleError`."""

    def select(self, target: Target, selector: LabelSelector | None) -> Selection:
        """The pods ``selector`` picks for ``target`` (None: the target selects nothing now)."""

    def find_vpa(self, target: Target) -> Mapping[str, Any] | None:
        """The VPA an HVPA target pins (None: none, or not an HVPA target)."""

    def other_autoscaler(self, target: Target) -> str | None:
        """The other autoscaler (an HPA, a KEDA ScaledObject) that scales the target's workload, as the
        condition names it (``HorizontalPodAutoscaler shop/web``), or None."""

    def template_of(self, target: Target) -> Sequence[ContainerInfo]:
        """The containers of the workload's pod template (what HVPA sizes when no pod runs)."""

    def read_metrics(self, query: TargetQuery) -> Awaitable[list[MetricReading]]:
        """The target's metric readings now, one per metric of its spec."""

    def forecasts(
        self, target: Target, spec: TargetSpec, selector: str, period: float, now: float
    ) -> Mapping[str, Forecast] | None:
        """With ``spec.prediction``, its metrics' forecasts as last made (made in the background, never in a
        sync's path: service/prediction/cache.py); None: the service makes none."""


class CachedView:
    """:class:`ClusterView` from the service's caches, its scale access and its metrics batcher."""

    def __init__(
        self,
        caches: ClusterCaches,
        pods: PodIndex,
        scales: ClusterScales,
        batcher: MetricsBatcher,
        forecasts: ForecastCache | None = None,
    ) -> None:
        self._caches = caches
        self._forecasts = forecasts
        self._pods = pods
        self._scales = scales
        self._batcher = batcher
        # AmbiguousSelector: each target's selector, per namespace; and per namespace, which targets select
        # each pod (and each target's answer), as of (pod membership version, selectors version). The
        # selectors version moves when a target's selector changes or it is forgotten. Checks read this map
        # instead of matching every selector again: a steady sync costs a lookup per pod.
        self._selectors: dict[str, dict[Key, LabelSelector]] = {}
        self._selectors_version: dict[str, int] = {}
        self._selecting: dict[str, tuple[tuple[int, int], dict[str, list[Key]], dict[Key, list[str]]]] = {}

    def cache_problem(self, target: Target) -> str | None:
        """Its pods, its workload and the targets themselves (and its VPA, for HVPA) come from watch
        caches; while one of those does not follow the server (a broken or frozen watch, from the moment
        it is noticed until the relist), the target's decisions pause: no decision, and so no write, from
        a state the cluster may have left behind."""
        behind = self._caches.behind(target.namespace, vpas=target.spec is not None and target.spec.hvpa is not None)
        if behind is None:
            return None
        return (
            f"the {behind.name} watch has not followed the API server for {behind.stale_for():.0f}s: "
            f"{behind.last_error}"
        )

    async def read_scale(self, target: Target) -> Scale:
        return await self._scales.read(target)

    def select(self, target: Target, selector: LabelSelector | None) -> Selection:
        namespace = target.namespace
        known = self._selectors.get(namespace, {})
        before = known.get(target.key)
        if before is not selector:
            if selector is None:
                known.pop(target.key, None)
            else:
                self._selectors.setdefault(namespace, known)[target.key] = selector
            if before is None and selector is not None:
                self._added(namespace, target.key, selector)
            else:
                self._changed(namespace)
        if selector is None:
            return NOTHING_SELECTED
        pods = self._pods.select(namespace, selector)
        return Selection(pods, self.others_selecting(target, pods), self._pods.count_in(namespace))

    def forget(self, key: Key) -> None:
        """The target's reconciler stopped: it selects nothing any more."""
        known = self._selectors.get(key[0])
        if known is not None and known.pop(key, None) is not None:
            self._changed(key[0])
            if not known:
                del self._selectors[key[0]]
                self._selecting.pop(key[0], None)

    def _changed(self, namespace: str) -> None:
        self._selectors_version[namespace] = self._selectors_version.get(namespace, 0) + 1

    def _added(self, namespace: str, key: Key, selector: LabelSelector) -> None:
        """A target's first selector: added to the namespace's map as it is, not by rebuilding it (at
        start-up each of a namespace's targets arrives in turn, and rebuilding for each was quadratic:
        seconds of CPU for 200 targets of 2,000 pods)."""
        memo = self._selecting.get(namespace)
        version = self._selectors_version.get(namespace, 0)
        if memo is None or memo[0] != (self._pods.membership_version(namespace), version):
            self._changed(namespace)  # no map of the current pods to add to: the next check builds one
            return
        version += 1
        self._selectors_version[namespace] = version
        owners = memo[1]
        for pod in self._pods.select(namespace, selector):
            owners.setdefault(pod.name, []).append(key)
        # Other targets' answers may now name this one: they are worked out again when asked.
        self._selecting[namespace] = ((memo[0][0], version), owners, {})

    def others_selecting(self, target: Target, pods: list[PodRecord]) -> list[str]:
        """Other targets in the namespace whose selector also picks one of these pods. Exactly what
        matching every other selector against these pods would answer, but the pod → selecting targets map
        of a namespace is rebuilt only when its pods come, go or change labels, or its targets' selectors
        change: a steady sync costs a lookup per pod, not a match per pod and selector (which made a sync's
        cost grow with the number of targets)."""
        namespace = target.namespace
        selectors = self._selectors.get(namespace)
        if not selectors or (len(selectors) == 1 and target.key in selectors):
            return []
        version = (self._pods.membership_version(namespace), self._selectors_version.get(namespace, 0))
        memo = self._selecting.get(namespace)
        if memo is None or memo[0] != version:
            owners: dict[str, list[Key]] = {}
            for key, selector in selectors.items():
                for pod in self._pods.select(namespace, selector):
                    owners.setdefault(pod.name, []).append(key)
            memo = self._selecting[namespace] = (version, owners, {})
        # The same version means the same pods for this target's selector: its answer is kept too.
        answer = memo[2].get(target.key)
        if answer is None:
            others = {key for p in pods for key in memo[1].get(p.name, ()) if key != target.key}
            answer = memo[2][target.key] = sorted(f"{key[0]}/{key[1]}" for key in others)
        return answer

    def find_vpa(self, target: Target) -> Mapping[str, Any] | None:
        if target.spec is None or target.spec.hvpa is None:
            return None
        return vpa_for(self._caches.vpas_of(target.namespace), target.namespace, target.spec)

    def other_autoscaler(self, target: Target) -> str | None:
        if target.spec is None:
            return None
        ref = target.spec.scale_target_ref
        group = api_group(ref.api_version or DEFAULT_API_VERSIONS.get(ref.kind, ""))
        return scaled_by(
            target.namespace, group, ref.kind, ref.name, self._caches.other_autoscalers(target.namespace, ref.name)
        )

    def template_of(self, target: Target) -> list[ContainerInfo]:
        if target.spec is None:
            return []
        record = self._caches.deployment(target.namespace, target.spec.scale_target_ref.name)
        if record is None:
            return []
        return [ContainerInfo(name, dict(requests)) for name, requests in record.container_requests.items()]

    def read_metrics(self, query: TargetQuery) -> Awaitable[list[MetricReading]]:
        # The batcher's coroutine itself, not one around it: a sync waits here for a second or more, and
        # each coroutine it waits in is one more object the cyclic collector walks
        # (docs/benchmarks-history.md, "Start-up, `/metrics`, shorter pauses").
        return self._batcher.read(query)

    def forecasts(
        self, target: Target, spec: TargetSpec, selector: str, period: float, now: float
    ) -> Mapping[str, Forecast] | None:
        cache = self._forecasts
        if cache is None:
            return None
        return cache.current(target.namespace, target.name, spec, selector, period, now)


def vpa_for(vpas: Iterable[Mapping[str, Any]], namespace: str, spec: TargetSpec) -> Mapping[str, Any] | None:
    """The VPA named in ``hvpa.vpa``, else the one in the namespace whose targetRef is the scale target."""
    assert spec.hvpa is not None
    ref = spec.scale_target_ref
    for vpa in vpas:
        meta = as_mapping(vpa.get("metadata"))
        if meta.get("namespace") != namespace:
            continue
        if spec.hvpa.vpa is not None:
            if meta.get("name") == spec.hvpa.vpa:
                return vpa
            continue
        target_ref = as_mapping(as_mapping(vpa.get("spec")).get("targetRef"))
        if target_ref.get("kind") == ref.kind and target_ref.get("name") == ref.name:
            return vpa
    return None


def vpa_observation(vpa: Mapping[str, Any] | None) -> VpaObservation | None:
    """The VPA as the HVPA engine reads it; a malformed status reads as no recommendation."""
    if vpa is None:
        return None
    status = read_vpa_status(vpa.get("status") or {}, "status", ErrorList(), strict=False)
    policies = as_mapping(as_mapping(vpa.get("spec")).get("resourcePolicy")).get("containerPolicies")
    meta = as_mapping(vpa.get("metadata"))
    return VpaObservation(
        status,
        tuple(mappings_in(policies)),
        str(meta.get("resourceVersion") or "") or None,
    )
