"""Pure conversions of Prometheus series into the readings the decision engine consumes.

The outcome of bad data is defined here, never a silent zero:

* a NaN or ±Inf sample is not a value: that pod is left out (missing) of a Pods metric; for a
  resource the container is reported without usage (``None``), which makes the pod missing
  exactly as upstream's metrics client does; an Object/External metric fails;
* two series for one pod (one pod and container, for resources) fail the metric, naming the pod;
* an empty result fails Object/External metrics; for per-pod metrics the caller turns "no pod has
  a value" into a failure with a diagnostic (see :func:`no_value_failure`);
* a sample stamped far from its query's evaluation time fails the metric
  (:mod:`autoscaler.prometheus.sample_times`).

Object and External metrics' values are read in steps by :mod:`autoscaler.prometheus.value_readings`.

Values are converted exactly from Prometheus' text (``"0.3"`` → 300 milli, rounded up like
``Quantity.MilliValue()``: :mod:`autoscaler.prometheus.sample_values`).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from autoscaler.core.observation import (
    MetricFailure,
    PodsReading,
    PodUsage,
    ResourceReading,
    Sample,
)
from autoscaler.core.pod_columns import SampleColumns, UsageColumns
from autoscaler.prometheus.results import Series, rows
from autoscaler.prometheus.sample_values import milli_or_none
from autoscaler.prometheus.typed_series import series_decoding


@dataclass(slots=True, init=False, unsafe_hash=True)
class LabelNames:
    pod: Final[str]
    container: Final[str]
    namespace: Final[str]

    def __init__(self, pod: str = "pod", container: str = "container", namespace: str = "namespace") -> None:
        self.pod = pod
        self.container = container
        self.namespace = namespace


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
    first, second = [
        item.labels
        for item in series
        if item.labels.get(names.pod) == pod
        and (container is None or item.labels.get(names.container, "") == container)
    ][:2]
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
        # Not how many it returned: a batched answer's count moves with every target it serves.
        reason = (
            "none of the series it returned belongs to the target's pods (series are "
            f'matched to pods by their "{names.namespace}" and "{names.pod}" labels)'
        )
    else:
        reason = "every series for the target's pods is NaN or infinite"
    return MetricFailure(f"no usable sample for any of the target's {pod_count} pods: {reason}")


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
    answer instead of a split and a pass per set. A generator that yields every ``step`` series and
    returns the readings: the reader runs it on the event loop, giving the loop a turn at each yield.

    ``None`` when the answer needs the general path: a series without the namespace label, a pod
    wanted by two sets, or a duplicate series (the general path's failure names both); a test checks
    that every other answer equals the general path's. The reader reads most answers with
    :class:`PodReadings` as they are decoded; this is the same for a decoded vector."""
    readings = PodReadings(wanted, names, window, per_container=per_container, nanocores=nanocores)
    if not readings.usable:
        return None
    for start in range(0, len(vector), step):
        if start:
            yield
        try:
            part = readings.convert(
                [{"metric": labels, "value": (at, text)} for labels, at, text in rows(vector, start, start + step)]
            )
        except ValueError:  # not what a sink takes (a label that is not a string)
            return None
        if not readings.take(part):
            return None
        del part  # not held across the next turn, when a collection may walk it
    return readings.readings()


class PodReadings:
    """What :func:`readings_in_steps` gives, made while the answer is decoded: a
    :class:`~autoscaler.prometheus.slicing.SeriesSink` that takes each slice's decoded series straight into
    the readings, with no :class:`~autoscaler.prometheus.results.Vector` columns in between: less client
    CPU than reading the columns afterwards (why: docs/benchmarks-history.md, "Per-pod answers read as they
    are decoded").

    Each slice is decoded by :meth:`decode` into typed records (:mod:`autoscaler.prometheus.typed_series`),
    which :meth:`take` takes.

    ``usable`` is False when a pod is wanted by two sets, or two of the label names are one label (the
    general path reads that answer). The sink refuses, so that the answer is decoded into a vector for the
    general path, what that path must see: a series without the namespace label, a duplicate series, and
    an element that is not a vector's series (the whole decode then says why, or finds it valid after
    all). It checks every element, the ones no target reads included, and refuses whatever the columns
    refuse (and a time written as text or a label that is not a string, which they take)."""

    def __init__(
        self,
        wanted: Sequence[tuple[str, frozenset[str]]],
        names: LabelNames,
        window: float,
        *,
        per_container: bool,
        nanocores: bool = False,
    ) -> None:
        self._names, self._window, self._per_container, self._nanocores = names, window, per_container, nanocores
        self._sets = len(wanted)
        owner: dict[str, dict[str, int]] = {}
        wanted_pods = 0
        for index, (namespace, pods) in enumerate(wanted):
            of_namespace = owner.get(namespace)
            if of_namespace is None:
                of_namespace = owner[namespace] = {}
            for pod in pods:  # not dict.fromkeys: docs/compiled-boundary.md
                of_namespace[pod] = index
            wanted_pods += len(pods)
        self._owner = owner
        self._decoding = series_decoding(names.pod, names.namespace, names.container)
        # A pod wanted by two sets is one key for both: fewer keys than wanted pods.
        self.usable = self._decoding is not None and sum(map(len, owner.values())) == wanted_pods
        self.begin()

    def begin(self) -> None:
        sets = range(self._sets)
        # Columns, not a tuple a pod (see autoscaler.core.pod_columns): by wanted set, each pod's containers'
        # values (resources) or its value (Pods metrics); the answer's time, and the pods whose time differs.
        self._containers: list[dict[str, dict[str, int | None]]] = [{} for _ in sets] if self._per_container else []
        self._taken: list[int] = [0] * self._sets if self._per_container else []  # series taken, by wanted set
        self._values: list[dict[str, int]] = [] if self._per_container else [{} for _ in sets]
        self._timestamp: float | None = None  # the first series' time: in an instant answer, every series'
        self._times: dict[int, dict[str, float]] = {}  # by wanted set: pods whose time is not the answer's
        self._no_value: dict[int, set[str]] = {}  # by wanted set: pods whose sample is NaN/±Inf (left out)

    def decode(self, raw: bytes) -> list[Any]:
        """A slice of the answer (a JSON array of series) decoded into the records :meth:`take` takes; a
        ValueError for anything that is not an array of a vector's series (see
        :mod:`autoscaler.prometheus.typed_series`)."""
        assert self._decoding is not None  # usable
        return self._decoding.decode(raw)

    def convert(self, series: list[dict[str, Any]]) -> list[Any]:
        """Series already decoded (``{"metric": labels, "value": (time, text)}``) as the records :meth:`take`
        takes; a ValueError as for :meth:`decode`."""
        assert self._decoding is not None  # usable
        return self._decoding.convert(series)

    def take(self, items: list[Any]) -> bool:
        """Take the records :meth:`decode` made; False when the answer must be read otherwise."""
        # The hot loop of a batched sync: the records are checked already (labels are strings or None,
        # the value a number and a string). ``milli_or_none`` by its name, not an alias: docs/compiled-boundary.md.
        owner, first_time = self._owner, self._timestamp
        per_container, nanocores = self._per_container, self._nanocores
        containers, values, no_value, times = self._containers, self._values, self._no_value, self._times
        taken = self._taken
        for item in items:
            labels = item.metric
            pod_name = labels.pod
            if pod_name is None:
                continue
            series_namespace = labels.namespace
            if series_namespace is None:
                return False
            in_namespace = owner.get(series_namespace)
            hit = in_namespace.get(pod_name) if in_namespace is not None else None
            if hit is None:
                continue
            timestamp, text = item.value
            if per_container:
                container = labels.container
                taken[hit] += 1  # counted here: summing the pods' containers afterwards cost more
                of_pod = containers[hit].get(pod_name)
                if of_pod is not None:
                    if container in of_pod:
                        return False
                    of_pod[container] = milli_or_none(text, nanocores)
                    continue  # a pod's time is its first series'
                containers[hit][pod_name] = {container: milli_or_none(text, nanocores)}
            else:
                if pod_name in values[hit] or (hit in no_value and pod_name in no_value[hit]):
                    return False
                value = milli_or_none(text)
                if value is None:
                    no_value.setdefault(hit, set()).add(pod_name)
                    continue
                values[hit][pod_name] = value
            if timestamp != first_time:
                if first_time is None:
                    first_time = self._timestamp = timestamp
                else:
                    times.setdefault(hit, {})[pod_name] = timestamp
        return True

    def readings(self) -> list[tuple[ResourceReading | PodsReading, int]]:
        """Each wanted set's reading and how many series it had, from what was taken since :meth:`begin`."""
        # Every series taken added a container to its pod (a duplicate was refused), or a pod's value.
        timestamp, window, times = self._timestamp or 0.0, self._window, self._times
        if self._per_container:
            return [
                (
                    ResourceReading(pods=UsageColumns(pods, timestamp, window, times.get(index))),
                    taken,
                )
                for index, (pods, taken) in enumerate(zip(self._containers, self._taken, strict=True))
            ]
        no_value = self._no_value
        return [
            (
                PodsReading(pods=SampleColumns(pods, timestamp, window, times.get(index))),
                len(pods) + len(no_value.get(index, ())),
            )
            for index, pods in enumerate(self._values)
        ]
