"""A per-pod query's answer, split back per target into readings.

What a reading holds for per-pod metrics: samples for the target's own pods (``pod_names``) only. The
batched (namespace-wide) answer also holds other workloads' pods; those are dropped, and so is any
series whose pod is not in the list (we cannot tell another workload's pod from a pod the cluster has
not reported yet; the pod list from the cluster is the authority). A series without the namespace label
whose pod name exists in several of the batched namespaces cannot be given to anyone: its members are
*ambiguous* (the reader then asks one namespace at a time).

Apart from the reader because this is the hot loop of a batched sync and pure: series in, buckets and
readings out, no I/O. The conversion of one target's series into a reading is
:mod:`autoscaler.prometheus.extract`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autoscaler.core.observation import MetricReading, PodsReading, ResourceReading
from autoscaler.prometheus.extract import LabelNames, no_value_failure, pods_reading, resource_reading
from autoscaler.prometheus.planning import Member, PodGroup
from autoscaler.prometheus.results import Series, SeriesFilter


def pods_filter(members: Sequence[Member], names: LabelNames) -> SeriesFilter:
    """The series a per-pod query's members can use: their pods' (a large answer is parsed without
    the others). A series without the namespace label is kept when its pod name is wanted anywhere.
    The sets are made on the filter's first use: a small answer never uses it."""
    wanted: dict[str, set[str]] = {}
    anywhere: set[str] = set()
    pod_label, namespace_label = names.pod, names.namespace

    def keep(labels: Mapping[str, str]) -> bool:
        if not anywhere:
            for member in members:
                wanted.setdefault(member.target.namespace, set()).update(member.pods)
                anywhere.update(member.pods)
        pod = labels.get(pod_label)
        if pod is None:
            return False
        namespace = labels.get(namespace_label)
        return pod in (anywhere if namespace is None else wanted.get(namespace, ()))

    return keep


def split(
    vector: Sequence[Series], members: Sequence[Member], names: LabelNames
) -> tuple[list[list[Series]], set[int]]:
    """Each member's series, by (namespace, pod); and members hit by ambiguous series.

    The hot loop of a batched sync: one dict lookup per series. A (namespace, pod) usually
    belongs to one member; the few shared by several (overlapping selectors, or the same pod
    read by two metrics with one query) are kept aside in ``shared``.
    """
    owner: dict[tuple[str, str], int] = {}
    shared: dict[tuple[str, str], list[int]] = {}
    for index, member in enumerate(members):
        namespace = member.target.namespace
        for pod in member.pods:
            key = (namespace, pod)
            first = owner.setdefault(key, index)
            if first != index:
                shared.setdefault(key, [first]).append(index)
    by_pod: dict[str, list[int]] | None = None
    buckets: list[list[Series]] = [[] for _ in members]
    ambiguous: set[int] = set()
    pod_label, namespace_label = names.pod, names.namespace
    for series in vector:
        labels = series.labels
        series_pod = labels.get(pod_label)
        if series_pod is None:
            continue
        series_namespace = labels.get(namespace_label)
        if series_namespace is not None:
            key = (series_namespace, series_pod)
            hit = owner.get(key)
            if hit is None:
                continue
            if shared and key in shared:
                for index in shared[key]:
                    buckets[index].append(series)
            else:
                buckets[hit].append(series)
            continue
        if by_pod is None:
            by_pod = {}
            for (_, pod_name), index in owner.items():
                by_pod.setdefault(pod_name, []).append(index)
            for (_, pod_name), indexes in shared.items():
                by_pod[pod_name].extend(i for i in indexes if i not in by_pod[pod_name])
        hits = by_pod.get(series_pod)
        if not hits:
            continue
        if len({members[i].target.namespace for i in hits}) > 1:
            ambiguous.update(hits)
            continue
        for index in hits:
            buckets[index].append(series)
    return buckets, ambiguous


def pod_reading(
    group: PodGroup, member: Member, series: list[Series], returned: int, names: LabelNames
) -> MetricReading:
    """``member``'s reading from its share of the answer (``returned``: the answer's series count)."""
    reading: MetricReading
    if group.per_container:
        reading = resource_reading(series, names, group.window, nanocores=group.nanocores)
    else:
        reading = pods_reading(series, names, group.window)
    return checked(reading, member, returned, len(series), names)


def checked(reading: MetricReading, member: Member, returned: int, matched: int, names: LabelNames) -> MetricReading:
    """A reading without a single usable pod fails, saying why."""
    if isinstance(reading, PodsReading) and not reading.pods and member.pods:
        return no_value_failure(len(member.pods), returned, matched, names)
    if isinstance(reading, ResourceReading) and not reading.pods and member.pods:
        return no_value_failure(len(member.pods), returned, 0, names)
    return reading
