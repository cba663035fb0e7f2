"""Pure conversions of Prometheus series into the readings the decision engine consumes.

The outcome of bad data is defined here, never a silent zero:

* a NaN or ±Inf sample is not a value: that pod is left out (missing) of a Pods metric; for a
  resource the container is reported without usage (``None``), which makes the pod missing
  exactly as upstream's metrics client does; an Object/External metric fails;
* two series for one pod (one pod and container, for resources) fail the metric, naming the pod;
* an empty result fails Object/External metrics; for per-pod metrics the caller turns "no pod has
  a value" into a failure with a diagnostic (see :func:`no_value_failure`).

Values are converted exactly from Prometheus' text (``"0.3"`` → 300 milli, rounded up like
``Quantity.MilliValue()``), never through a float.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from autoscaler.core.observation import (
    ExternalReading,
    MetricFailure,
    ObjectReading,
    PodsReading,
    PodUsage,
    ResourceReading,
    Sample,
)
from autoscaler.prometheus.results import InstantResult, Series, rows
from autoscaler.values.quantity import milli_from_decimal_text


@dataclass(frozen=True, slots=True)
class LabelNames:
    pod: str = "pod"
    container: str = "container"
    namespace: str = "namespace"


def milli_or_none(text: str, *, truncate_to_nano: bool = False) -> int | None:
    """The exact milli value of a sample, or None for NaN/±Inf (and anything unparsable).

    Same result as :func:`milli_from_decimal_text` (a test checks it), with an integer-only fast
    path for the plain decimals Prometheus prints most of the time ("0.3", "104857600"): a
    batched sync converts tens of thousands of values and ``Fraction`` costs ~7 µs each.
    """
    whole, _, fraction = text.partition(".")
    negative = whole[:1] == "-"
    if negative:
        whole = whole[1:]
    if whole.isdigit() and text.isascii() and (fraction.isdigit() or not fraction):
        if not fraction:
            milli = int(whole) * 1000
        else:
            if truncate_to_nano:
                fraction = fraction[:9]
            significant = fraction.rstrip("0")
            milli = int(whole + significant[:3].ljust(3, "0"))
            if len(significant) > 3:
                milli += 1  # a sub-milli remainder rounds away from zero, as MilliValue() does
        return -milli if negative else milli
    try:
        return milli_from_decimal_text(text, truncate_to_nano=truncate_to_nano)
    except ValueError:
        return None


def describe(labels: Mapping[str, str], limit: int = 160) -> str:
    """A series' label set as PromQL prints it, shortened for messages."""
    text = "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"
    return text if len(text) <= limit else text[: limit - 1] + "…}"


def resource_reading(
    series: Sequence[Series], names: LabelNames, window: float, *, nanocores: bool = False
) -> ResourceReading | MetricFailure:
    """Per-pod, per-container usage. A NaN/±Inf container value is reported as ``None`` (a
    container without usage): the engine then treats the pod as missing for a Resource metric, and
    for a ContainerResource metric only when it is that container. A series without the container
    label counts as the pod's whole usage under the container name ``""`` (a pod-level query).
    ``nanocores`` (CPU) drops float noise below one nanocore first, as metrics-server's integers do."""
    pod_label, container_label = names.pod, names.container
    containers_of: dict[str, dict[str, int | None]] = {}
    timestamps: dict[str, float] = {}
    for item in series:
        labels = item.labels
        pod = labels.get(pod_label)
        if pod is None:
            continue
        container = labels.get(container_label, "")
        containers = containers_of.get(pod)
        if containers is None:
            containers = containers_of[pod] = {}
            timestamps[pod] = item.timestamp
        elif container in containers:
            return _duplicate(series, names, pod, container)
        containers[container] = milli_or_none(item.value, truncate_to_nano=nanocores)
    return ResourceReading(
        pods={pod: PodUsage(containers, timestamps[pod], window) for pod, containers in containers_of.items()}
    )


def pods_reading(series: Sequence[Series], names: LabelNames, window: float) -> PodsReading | MetricFailure:
    pod_label = names.pod
    samples: dict[str, Sample] = {}
    unusable: set[str] = set()  # pods whose value is NaN or infinite
    for item in series:
        pod = item.labels.get(pod_label)
        if pod is None:
            continue
        if pod in samples or pod in unusable:
            return _duplicate(series, names, pod, None)
        value = milli_or_none(item.value)
        if value is None:
            unusable.add(pod)
        else:
            samples[pod] = Sample(value, item.timestamp, window)
    return PodsReading(pods=samples)


def _duplicate(series: Sequence[Series], names: LabelNames, pod: str, container: str | None) -> MetricFailure:
    """The failure for two series of one pod (and container, for resources): named by their labels."""

    def same(item: Series) -> bool:
        return item.labels.get(names.pod) == pod and (
            container is None or item.labels.get(names.container, "") == container
        )

    first, second = [item.labels for item in series if same(item)][:2]
    if container is None:
        return MetricFailure(
            f'duplicate series for pod "{pod}": {describe(first)} and {describe(second)}; '
            f"the query must return one series per pod (aggregate with sum by ({names.namespace}, "
            f"{names.pod}))"
        )
    return MetricFailure(
        f'duplicate series for pod "{pod}"'
        + (f' container "{container}"' if container else "")
        + f": {describe(first)} and {describe(second)}; the query must return one "
        f"series per pod and container (aggregate with sum by ({names.namespace}, {names.pod}, "
        f"{names.container}))"
    )


def no_value_failure(pod_count: int, returned: int, matched: int, names: LabelNames) -> MetricFailure:
    """Why none of the target's pods got a value, for a per-pod metric."""
    if returned == 0:
        reason = "the query returned no series (an empty result; stale or absent data)"
    elif matched == 0:
        reason = (
            f"none of the {returned} series it returned belongs to the target's pods (series are "
            f'matched to pods by their "{names.namespace}" and "{names.pod}" labels)'
        )
    else:
        reason = f"all {matched} series for the target's pods are NaN or infinite"
    return MetricFailure(f"no usable sample for any of the target's {pod_count} pods: {reason}")


_Values = tuple[list[tuple[Mapping[str, str], int]], float]


def _scalar_values(result: InstantResult) -> _Values | MetricFailure:
    if result.result_type == "scalar" and result.scalar is not None:
        items: Sequence[Series] = (result.scalar,)
    elif result.result_type == "vector":
        items = result.vector
    else:
        return MetricFailure(f"the query returned a {result.result_type}; it must return an instant vector or a scalar")
    if not items:
        return MetricFailure("the query returned no series (an empty result; stale or absent data)")
    values = []
    # Vector order is not guaranteed by Prometheus: sort so equal results give equal readings.
    for item in sorted(items, key=lambda s: sorted(s.labels.items())):
        value = milli_or_none(item.value)
        if value is None:
            where = f"series {describe(item.labels)}" if item.labels else "the scalar"
            return MetricFailure(f"{where} has value {item.value}, which is not a number the autoscaler can use")
        values.append((item.labels, value))
    return values, max(item.timestamp for item in items)


def object_reading(result: InstantResult) -> ObjectReading | MetricFailure:
    """One value; several series are summed, as upstream sums an External metric's series."""
    parsed = _scalar_values(result)
    if isinstance(parsed, MetricFailure):
        return parsed
    values, timestamp = parsed
    return ObjectReading(value=sum(v for _, v in values), timestamp=timestamp)


def external_reading(result: InstantResult) -> ExternalReading | MetricFailure:
    """Every series' value; the engine sums them as upstream does."""
    parsed = _scalar_values(result)
    if isinstance(parsed, MetricFailure):
        return parsed
    values, timestamp = parsed
    return ExternalReading(values=tuple(v for _, v in values), timestamp=timestamp)


# Series (or wanted pods) handled per step of :func:`readings_in_steps`: a few milliseconds.
STEP = 2000


def readings_in_steps(
    vector: Sequence[Series],
    wanted: Sequence[tuple[str, frozenset[str]]],
    names: LabelNames,
    window: float,
    *,
    per_container: bool,
    nanocores: bool = False,
    step: int = STEP,
) -> Generator[None, None, list[tuple[ResourceReading | PodsReading, int]] | None]:
    """For each ``wanted`` (namespace, pods) set: what :func:`resource_reading` (``per_container``) or
    :func:`pods_reading` gives for its series, and how many series it has, in one pass over a batched
    answer instead of a split and a pass per set (the hot loop of a batched sync). A generator that
    yields every ``step`` series or pods and returns the readings: the reader runs it on the event loop,
    giving the loop a turn at each yield (a 100,000-pod answer is ~100 ms of work).

    ``None`` when the answer needs the general path: a series without the namespace label, a pod
    wanted by two sets, or a duplicate series (the general path's failure names both); a test checks
    that every other answer equals the general path's."""
    owner: dict[str, dict[str, int]] = {}
    counted = 0
    for index, (namespace, pods) in enumerate(wanted):
        of_namespace = owner.setdefault(namespace, {})
        for pod in pods:
            if of_namespace.setdefault(pod, index) != index:
                return None
        counted += len(pods)
        if counted >= step:
            counted = 0
            yield
    # Each reading's per-pod tuples are made as the pod's first series comes (without the named tuples'
    # Python-level __new__: one per pod per sync); a pod's later containers go into the same dict.
    make = tuple.__new__
    # Only the kind of reading asked for, and the NaN/±Inf pods' sets only where there are some: each of
    # these containers is tracked, and the collector walks a batch's (~900 targets at 10,000) while it is read.
    usages: list[dict[str, PodUsage]] = [{} for _ in wanted] if per_container else []
    samples: list[dict[str, Sample]] = [] if per_container else [{} for _ in wanted]
    no_value: dict[int, set[str]] = {}  # by wanted set: pods whose sample is NaN/±Inf (left out)
    matched = [0] * len(wanted)
    pod_label, namespace_label, container_label = names.pod, names.namespace, names.container
    for start in range(0, len(vector), step):
        if start:
            yield
        for labels, timestamp, text in rows(vector, start, start + step):
            pod_name = labels.get(pod_label)
            if pod_name is None:
                continue
            series_namespace = labels.get(namespace_label)
            if series_namespace is None:
                return None
            in_namespace = owner.get(series_namespace)
            hit = in_namespace.get(pod_name) if in_namespace is not None else None
            if hit is None:
                continue
            matched[hit] += 1
            if per_container:
                container = labels.get(container_label, "")
                usage = usages[hit].get(pod_name)
                value = milli_or_none(text, truncate_to_nano=nanocores)
                if usage is None:
                    usages[hit][pod_name] = make(PodUsage, ({container: value}, timestamp, window))
                elif container in usage.containers:
                    return None
                else:
                    cast(dict[str, int | None], usage.containers)[container] = value  # the dict made above
            else:
                if pod_name in samples[hit] or (hit in no_value and pod_name in no_value[hit]):
                    return None
                value = milli_or_none(text)
                if value is None:
                    no_value.setdefault(hit, set()).add(pod_name)
                else:
                    samples[hit][pod_name] = make(Sample, (value, timestamp, window))
    if per_container:
        return [(ResourceReading(pods=pods), count) for pods, count in zip(usages, matched, strict=True)]
    return [(PodsReading(pods=pods), count) for pods, count in zip(samples, matched, strict=True)]
