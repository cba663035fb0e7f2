"""What the engine's metric calculations give, as records: a per-pod metric's replica calculation
(:class:`PodMetricResult`, with its :class:`PodGroups` and :class:`Rebalance`), an Object/External
metric's (:class:`ValueResult`), one metric's outcome (:class:`MetricOutcome`, with the
:class:`MetricValue` the status reports) and the metrics combined (:class:`MetricsOutcome`).

Apart from the calculations (:mod:`autoscaler.core.replicas`, :mod:`autoscaler.core.metrics`) because
the decision, the status, the explanation and the service's report all read them.

Records written the one way (:mod:`autoscaler.values.records`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from autoscaler.core.spec import MetricSpec


@dataclass(slots=True, init=False, unsafe_hash=True)
class PodGroups:
    """How each listed pod was classified; names keep the pod list's order."""

    ready_count: Final[int]
    unready: Final[tuple[str, ...]]
    missing: Final[tuple[str, ...]]
    ignored: Final[tuple[str, ...]]

    def __init__(
        self,
        ready_count: int,
        unready: tuple[str, ...] = (),
        missing: tuple[str, ...] = (),
        ignored: tuple[str, ...] = (),
    ) -> None:
        self.ready_count = ready_count
        self.unready = unready
        self.missing = missing
        self.ignored = ignored


@dataclass(slots=True, init=False, unsafe_hash=True)
class Rebalance:
    """The second pass over missing and unready pods (upstream's "rebalance")."""

    new_ratio: Final[float]
    considered: Final[int]  # samples in the enlarged set (len(metrics) upstream)
    missing_filled_with: Final[str]  # "target" / "zero" / "nothing"
    unready_as_zero: Final[bool]

    def __init__(self, new_ratio: float, considered: int, missing_filled_with: str, unready_as_zero: bool) -> None:
        self.new_ratio = new_ratio
        self.considered = considered
        self.missing_filled_with = missing_filled_with
        self.unready_as_zero = unready_as_zero


@dataclass(slots=True, init=False, unsafe_hash=True)
class PodMetricResult:
    """A per-pod metric's proposal with everything that explains it."""

    replicas: Final[int]
    ratio: Final[float]
    usage: Final[int]  # average milli value (raw average for utilization)
    utilization: Final[int | None]  # integer percent of request (utilization targets only)
    groups: Final[PodGroups]
    samples_used: Final[int]  # samples left after dropping ignored and unready pods
    rule: Final[str]  # which rule produced ``replicas``
    rebalance: Final[Rebalance | None]
    superfluous: Final[tuple[str, ...]]

    def __init__(
        self,
        replicas: int,
        ratio: float,
        usage: int,
        utilization: int | None,
        groups: PodGroups,
        samples_used: int,
        rule: str,
        rebalance: Rebalance | None = None,
        superfluous: tuple[str, ...] = (),
    ) -> None:
        self.replicas = replicas
        self.ratio = ratio
        self.usage = usage
        self.utilization = utilization
        self.groups = groups
        self.samples_used = samples_used
        self.rule = rule
        self.rebalance = rebalance
        self.superfluous = superfluous


@dataclass(slots=True, init=False, unsafe_hash=True)
class ValueResult:
    """An Object/External metric's proposal."""

    replicas: Final[int]
    ratio: Final[float]
    usage: Final[int]  # the value compared (sum of series, or per-pod average)
    ready_pods: Final[int | None]  # Running & Ready pods multiplied in (Value targets)
    rule: Final[str]

    def __init__(self, replicas: int, ratio: float, usage: int, ready_pods: int | None, rule: str) -> None:
        self.replicas = replicas
        self.ratio = ratio
        self.usage = usage
        self.ready_pods = ready_pods
        self.rule = rule


@dataclass(slots=True, init=False, unsafe_hash=True)
class MetricValue:
    """``MetricValueStatus``: milli values, or an integer percent."""

    average_utilization: Final[int | None]
    average_value: Final[int | None]
    value: Final[int | None]

    def __init__(
        self, average_utilization: int | None = None, average_value: int | None = None, value: int | None = None
    ) -> None:
        self.average_utilization = average_utilization
        self.average_value = average_value
        self.value = value


@dataclass(slots=True, init=False, unsafe_hash=True)
class MetricOutcome:
    """One metric's proposal, the value the status reports, or its error and the condition reason."""

    spec: Final[MetricSpec]
    proposal: Final[int | None]
    current: Final[MetricValue | None]
    description: Final[str]  # upstream's metric name text, e.g. "pods metric qps"
    error: Final[str | None]  # the condition's error text (None on success)
    reason: Final[str | None]  # the ScalingActive reason when this metric failed
    pod_result: Final[PodMetricResult | None]
    value_result: Final[ValueResult | None]
    skipped: Final[bool]  # not evaluated this sync (replicas outside [min, max], disabled)
    backend_failure: Final[bool]  # failed because the backend did (MetricFailure.backend), not the query

    def __init__(
        self,
        spec: MetricSpec,
        proposal: int | None = None,
        current: MetricValue | None = None,
        description: str = "",
        error: str | None = None,
        reason: str | None = None,
        pod_result: PodMetricResult | None = None,
        value_result: ValueResult | None = None,
        skipped: bool = False,
        backend_failure: bool = False,
    ) -> None:
        self.spec = spec
        self.proposal = proposal
        self.current = current
        self.description = description
        self.error = error
        self.reason = reason
        self.pod_result = pod_result
        self.value_result = value_result
        self.skipped = skipped
        self.backend_failure = backend_failure


@dataclass(slots=True, init=False, unsafe_hash=True)
class MetricsOutcome:
    """The metrics combined: the largest proposal, and what failed."""

    outcomes: Final[tuple[MetricOutcome, ...]]
    proposal: Final[int | None]  # None: no usable proposal (nothing scales)
    description: Final[str]  # the winning metric's text
    invalid: Final[int]
    first_invalid: Final[MetricOutcome | None]
    error: Final[str | None]  # upstream's aggregated error, if any metric failed

    def __init__(
        self,
        outcomes: tuple[MetricOutcome, ...],
        proposal: int | None,
        description: str,
        invalid: int,
        first_invalid: MetricOutcome | None,
        error: str | None,
    ) -> None:
        self.outcomes = outcomes
        self.proposal = proposal
        self.description = description
        self.invalid = invalid
        self.first_invalid = first_invalid
        self.error = error
