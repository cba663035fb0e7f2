"""What one sync of a target observes: the pods its scale's selector selects and their metrics.

From the scale the reconciler read, this builds the :class:`~autoscaler.core.observation.Observation` the
step (:mod:`autoscaler.core.sync`) decides on: the selector parsed (or the problem with it: invalid, or
shared with another target), the selected pods from the cache, and the readings of the target's metrics
from Prometheus. It reads only through the :class:`~autoscaler.service.sync.view.ClusterView`.

Apart from the reconciler because it is the read half of a sync, with memos of its own that make a steady
sync cheap: the selector is parsed once per text, and the pods' names and infos are made again only when
the cache hands out a new list.
"""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.core.observation import MetricFailure, MetricReading, Observation, PodInfo, ScaleInfo, SelectorProblem
from autoscaler.core.spec import TargetSpec
from autoscaler.kube.labels import LabelSelector, SelectorError, parse_label_selector
from autoscaler.kube.records import PodRecord
from autoscaler.kube.scale import Scale
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.service.cluster.targets import Target
from autoscaler.service.sync.schedule import ConcurrencySlot
from autoscaler.service.sync.view import NOTHING_SELECTED, ClusterView


class TargetObserver:
    """One target's observations, sync after sync (the reconciler keeps one)."""

    def __init__(self, view: ClusterView) -> None:
        self._view = view
        self._selector: LabelSelector | None = None
        self._selector_text: str | None = None  # the scale's selector that _selector was parsed from
        self._pods_seen: list[PodRecord] | None = None  # see _pod_lists
        self._pod_lists_seen: tuple[list[str], list[PodInfo]] = ([], [])

    async def observe(
        self, target: Target, spec: TargetSpec, scale: Scale, *, read_metrics: bool, slot: ConcurrencySlot | None
    ) -> Observation:
        """What the sync of ``target`` decides on; its metrics are read only when ``read_metrics`` and
        there is something to measure. ``slot``: the sync's concurrency slot, given back while the metrics
        are read."""
        problem: SelectorProblem | None = None
        selection = NOTHING_SELECTED
        if scale.selector:
            if scale.selector != self._selector_text or self._selector is None:
                # Parsed once per selector, and the same object kept: the view's AmbiguousSelector memo
                # compares the selectors of a namespace's targets on every sync.
                try:
                    self._selector = parse_label_selector(scale.selector)
                    self._selector_text = scale.selector
                except SelectorError as exc:
                    self._selector, self._selector_text = None, None
                    problem = SelectorProblem(
                        "InvalidSelector",
                        f"couldn't convert selector into a corresponding internal selector object: {exc}",
                    )
            selection = self._view.select(target, self._selector)
            if selection.others:
                problem = SelectorProblem(
                    "AmbiguousSelector",
                    f"pods by selector {scale.selector} are controlled by more than one HPA "
                    f"(e.g. [{' '.join(selection.others)}])",
                )
        else:  # the scale has no selector: this target selects nothing
            self._selector, self._selector_text = None, None
            selection = self._view.select(target, None)
        readings: Sequence[MetricReading]
        if (
            read_metrics
            and problem is None
            and scale.selector
            and (scale.spec_replicas > 0 or spec.has_object_or_external_metric)
        ):
            query = TargetQuery(
                namespace=target.namespace,
                name=target.name,
                scale_target=spec.scale_target_ref,
                selector=scale.selector,
                pod_names=self._pod_lists(selection.pods)[0],
                metrics=spec.metrics,
                namespace_pods=selection.namespace_pods,
            )
            async with ConcurrencySlot.given_back(slot):
                readings = await self._view.read_metrics(query)
        else:
            readings = [MetricFailure("not read") for _ in spec.metrics]
        return Observation(
            ScaleInfo(scale.spec_replicas, scale.status_replicas, scale.selector),
            self._pod_lists(selection.pods)[1],
            readings,
            problem,
        )

    def _pod_lists(self, pods: list[PodRecord]) -> tuple[list[str], list[PodInfo]]:
        """The pods' names and infos, made again only when the selection is a new list (the pod index
        hands out the same list until the namespace's pods change)."""
        if pods is not self._pods_seen:
            self._pods_seen, self._pod_lists_seen = pods, ([p.name for p in pods], [p.info for p in pods])
        return self._pod_lists_seen
