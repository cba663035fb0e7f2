"""What the engine's metric calculations give, as records: a per-pod metric's replica calculation
(:class:`PodMetricResult`, with its :class:`PodGroups` and :class:`Rebalance`), an Object/External
metric's (:class:`ValueResult`), one metric's outcome (:class:`MetricOutcome`, with the
:class:`MetricValue` the status reports) and the metrics combined (:class:`MetricsOutcome`).

Apart from the calculations (:mod:`autoscaler.core.replicas`, :mod:`autoscaler.core.metrics`) because
the decision, the status, the explanation and the service's report all read them.

The records every sync makes write their ``__init__`` out (``init=False``): compiled, that one is
native code, where the dataclass's own is generated at import and runs interpreted
(:mod:`autoscaler.values.frozen`; tests/core/test_written_inits.py checks each against its fields).
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.spec import MetricSpec


@dataclass(frozen=True, slots=True, init=False)
class PodGroups:
    """How each listed pod was classified; names keep the pod list's order."""

    ready_count: int
    unready: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    def __init__(
        self,
        ready_count: int,
        unready: tuple[str, ...] = (),
        missing: tuple[str, ...] = (),
        ignored: tuple[str, ...] = (),
    ) -> None:
        object.__setattr__(self, "ready_count", ready_count)
        object.__setattr__(self, "unready", unready)
        object.__setattr__(self, "missing", missing)
        object.__setattr__(self, "ignored", ignored)


@dataclass(frozen=True, slots=True)
class Rebalance:
    """The second pass over missing and unready pods (upstream's "rebalance")."""

    new_ratio: float
    considered: int  # samples in the enlarged set (len(metrics) upstream)
    missing_filled_with: str  # "target" / "zero" / "nothing"
    unready_as_zero: bool


@dataclass(frozen=True, slots=True, init=False)
class PodMetricResult:
    """A per-pod metric's proposal with everything that explains it."""

    replicas: int
    ratio: float
    usage: int  # average milli value (raw average for utilization)
    utilization: int | None  # integer percent of request (utilization targets only)
    groups: PodGroups
    samples_used: int  # samples left after dropping ignored and unready pods
    rule: str  # which rule produced ``replicas``
    rebalance: Rebalance | None = None
    superfluous: tuple[str, ...] = ()

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
        object.__setattr__(self, "replicas", replicas)
        object.__setattr__(self, "ratio", ratio)
        object.__setattr__(self, "usage", usage)
        object.__setattr__(self, "utilization", utilization)
        object.__setattr__(self, "groups", groups)
        object.__setattr__(self, "samples_used", samples_used)
        object.__setattr__(self, "rule", rule)
        object.__setattr__(self, "rebalance", rebalance)
        object.__setattr__(self, "superfluous", superfluous)


@dataclass(frozen=True, slots=True)
class ValueResult:
    """An Object/External metric's proposal."""

    replicas: int
    ratio: float
    usage: int  # the value compared (sum of series, or per-pod average)
    ready_pods: int | None  # Running & Ready pods multiplied in (Value targets)
    rule: str


@dataclass(frozen=True, slots=True, init=False)
class MetricValue:
    """``MetricValueStatus``: milli values, or an integer percent."""

    average_utilization: int | None = None
    average_value: int | None = None
    value: int | None = None

    def __init__(
        self, average_utilization: int | None = None, average_value: int | None = None, value: int | None = None
    ) -> None:
        object.__setattr__(self, "average_utilization", average_utilization)
        object.__setattr__(self, "average_value", average_value)
        object.__setattr__(self, "value", value)


@dataclass(frozen=True, slots=True, init=False)
class MetricOutcome:
    """One metric's proposal, the value the status reports, or its error and the condition reason."""

    spec: MetricSpec
    proposal: int | None = None
    current: MetricValue | None = None
    description: str = ""  # upstream's metric name text, e.g. "pods metric qps"
    error: str | None = None  # the condition's error text (None on success)
    reason: str | None = None  # the ScalingActive reason when this metric failed
    pod_result: PodMetricResult | None = None
    value_result: ValueResult | None = None
    skipped: bool = False  # not evaluated this sync (replicas outside [min, max], disabled)
    backend_failure: bool = False  # failed because the backend did (MetricFailure.backend), not the query

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
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "proposal", proposal)
        object.__setattr__(self, "current", current)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "error", error)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "pod_result", pod_result)
        object.__setattr__(self, "value_result", value_result)
        object.__setattr__(self, "skipped", skipped)
        object.__setattr__(self, "backend_failure", backend_failure)


@dataclass(frozen=True, slots=True, init=False)
class MetricsOutcome:
    """The metrics combined: the largest proposal, and what failed."""

    outcomes: tuple[MetricOutcome, ...]
    proposal: int | None  # None: no usable proposal (nothing scales)
    description: str  # the winning metric's text
    invalid: int
    first_invalid: MetricOutcome | None
    error: str | None  # upstream's aggregated error, if any metric failed

    def __init__(
        self,
        outcomes: tuple[MetricOutcome, ...],
        proposal: int | None,
        description: str,
        invalid: int,
        first_invalid: MetricOutcome | None,
        error: str | None,
    ) -> None:
        object.__setattr__(self, "outcomes", outcomes)
        object.__setattr__(self, "proposal", proposal)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "invalid", invalid)
        object.__setattr__(self, "first_invalid", first_invalid)
        object.__setattr__(self, "error", error)
