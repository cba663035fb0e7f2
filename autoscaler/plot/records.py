"""What a plot reads of one sync: a small, typed record made from the sync's outcome.

``simulate`` and ``backtest`` (and ``convert --compare``, which is a backtest) make one
:class:`StepRecord` per sync with :func:`step_record`; :mod:`autoscaler.plot.series` draws them. The
record keeps only what is drawn, so a backtest of weeks keeps a few hundred bytes per sync, not the
sync's observation and decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autoscaler.core.results import MetricOutcome
from autoscaler.core.spec import MetricSpec, MetricTargetType
from autoscaler.core.sync import SyncOutcome


@dataclass(frozen=True, slots=True)
class MetricPoint:
    """One metric at one sync: its value in the unit its target uses (None: not read), and whether it
    failed."""

    spec: MetricSpec
    value: float | None
    failed: bool


@dataclass(frozen=True, slots=True)
class HvpaPoint:
    """HVPA at one sync: its own count, the per-pod requests it proposes (cores, bytes…) and the gate
    that blocked it, if one did."""

    desired_replicas: int
    requests: Mapping[tuple[str, str], float]  # (container, resource) → per-pod request
    blocked: str | None


@dataclass(frozen=True, slots=True)
class ForecastPoint:
    """One metric's forecast made at a sync (backtest of a spec with ``spec.prediction``): the instant it is
    for, its value (None: no forecast), whether the decision could use it, and the replicas it asks for."""

    metric: str
    at: float
    value: float | None
    usable: bool
    replicas: int | None


@dataclass(frozen=True, slots=True)
class StepRecord:
    at: float
    current_replicas: int
    desired_replicas: int | None  # the metrics' proposal (None: no proposal)
    replicas: int  # the count set
    limited_by: str | None
    metrics: tuple[MetricPoint, ...]
    hvpa: HvpaPoint | None = None
    real_replicas: int | None = None  # backtest: what the workload really had
    old_desired_replicas: int | None = None  # convert --compare: what the old autoscaler wanted
    forecasts: tuple[ForecastPoint, ...] = ()  # backtest with spec.prediction: the forecasts made at this sync


def metric_value(outcome: MetricOutcome) -> float | None:
    """The value the metric read, in the unit of its target (utilization in %, values in units)."""
    current = outcome.current
    if current is None:
        return None
    kind = outcome.spec.target.type
    if kind is MetricTargetType.UTILIZATION:
        return float(current.average_utilization) if current.average_utilization is not None else None
    milli = current.average_value if kind is MetricTargetType.AVERAGE_VALUE else current.value
    return milli / 1000 if milli is not None else None


def step_record(
    at: float,
    outcome: SyncOutcome,
    *,
    real_replicas: int | None = None,
    forecasts: tuple[ForecastPoint, ...] = (),
) -> StepRecord:
    """The plotted part of one sync at ``at``."""
    decision = outcome.decision
    hvpa = outcome.hvpa
    point = None
    if hvpa is not None:
        point = HvpaPoint(
            hvpa.desired_replicas,
            {
                (container, resource): float(value)
                for container, amounts in hvpa.requests.items()
                for resource, value in amounts.items()
            },
            hvpa.blocked.value if hvpa.blocked is not None else None,
        )
    return StepRecord(
        at,
        decision.current_replicas,
        decision.desired_replicas,
        decision.replicas,
        decision.limited_by,
        tuple(MetricPoint(o.spec, metric_value(o), bool(o.error)) for o in decision.metrics),
        point,
        real_replicas,
        forecasts=forecasts,
    )
