"""The floor rule: a forecast enters a sync's decision only as a floor under the reactive proposal.

Each forecast metric's value becomes the replicas it asks for by the same rule as the metric's own reactive
proposal (:func:`~autoscaler.core.replicas.per_pod_replicas` for an ``AverageValue`` target,
:func:`~autoscaler.core.replicas.usage_ratio_replicas` for a ``Value`` target: tolerance included), and the
proposal the behavior policies and the replica bounds then see is ``max(reactive, forecast replicas)``. So a
forecast never lowers a proposal, and what the count does with the raised proposal (stabilization windows,
rate limits, min/max) is what it would do had the metric itself asked for it (docs/decisions.md,
"Predictive scale-up").

A forecast is left out (with its reason) when it is not usable (:mod:`autoscaler.core.prediction.forecast`:
short or stale history, high error, no value, its history could not be read), and when the metric it is of
failed this sync (``MetricFailed``: a forecast does not stand in for a metric that cannot be read).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from autoscaler.core.gomath import MAX_INT64
from autoscaler.core.observation import Observation
from autoscaler.core.prediction.forecast import REASON_METRIC_FAILED, Forecast
from autoscaler.core.prediction.spec import PredictionSpec
from autoscaler.core.replicas import ReplicaCalculationError, per_pod_replicas, usage_ratio_replicas
from autoscaler.core.results import MetricOutcome
from autoscaler.core.settings import Tolerances

# Why no forecast was used (ForecastOutcome.reason), besides a forecast's own reasons.
REASON_NO_FORECAST = "NoForecast"  # none made yet for this metric (the service's first history read pending)
# Why one was (a usable forecast): it raised the proposal, or the reactive proposal was as high.
REASON_FORECAST_DECIDED = "ForecastAboveReactive"
REASON_REACTIVE_DECIDED = "ReactiveAtOrAboveForecast"


@dataclass(slots=True, init=False, unsafe_hash=True)
class MetricForecast:
    """One forecast metric at one sync: its forecast and the replicas the forecast asks for (None when the
    forecast is not used: ``reason`` says why)."""

    metric: Final[str]  # the metric's name
    description: Final[str]  # the metric's text as conditions show it ("external metric queue(<nil>)")
    forecast: Final[Forecast]
    replicas: Final[int | None]
    reason: Final[str]  # "" when used; else a forecast reason (ShortHistory, HighError…) or NoForecast
    message: Final[str]

    def __init__(
        self, metric: str, description: str, forecast: Forecast, replicas: int | None, reason: str, message: str = ""
    ) -> None:
        self.metric = metric
        self.description = description
        self.forecast = forecast
        self.replicas = replicas
        self.reason = reason
        self.message = message


@dataclass(slots=True, init=False, unsafe_hash=True)
class ForecastOutcome:
    """What the forecasts did to one sync's proposal: ``reactive`` the metrics' own proposal, ``replicas``
    the largest a usable forecast asked for (None: none usable), ``proposal`` the larger of the two (what
    the behavior policies and bounds were given). ``raised``: the forecast decided (``proposal`` above
    ``reactive``)."""

    metrics: Final[tuple[MetricForecast, ...]]
    reactive: Final[int]
    replicas: Final[int | None]
    proposal: Final[int]
    deciding: Final[MetricForecast | None]  # the metric whose forecast asked for ``replicas``

    def __init__(
        self,
        metrics: tuple[MetricForecast, ...],
        reactive: int,
        replicas: int | None,
        proposal: int,
        deciding: MetricForecast | None,
    ) -> None:
        self.metrics = metrics
        self.reactive = reactive
        self.replicas = replicas
        self.proposal = proposal
        self.deciding = deciding

    @property
    def raised(self) -> bool:
        return self.proposal > self.reactive

    @property
    def usable(self) -> bool:
        return self.replicas is not None

    @property
    def reason(self) -> str:
        """The Predicting condition's reason: whether the forecast decided, else why none was used (the
        first forecast metric's reason)."""
        if self.replicas is not None:
            return REASON_FORECAST_DECIDED if self.raised else REASON_REACTIVE_DECIDED
        return self.metrics[0].reason if self.metrics else REASON_NO_FORECAST

    @property
    def message(self) -> str:
        deciding = self.deciding
        if deciding is not None and deciding.forecast.value is not None:
            where = "above" if self.raised else "at or below"
            return (
                f"the {deciding.forecast.model} forecast of {deciding.description}, "
                f"{deciding.forecast.value:g}, asks for {deciding.replicas} replicas, {where} the "
                f"metrics' own {self.reactive}"
            )
        first = self.metrics[0] if self.metrics else None
        if first is None:
            return "no metric is forecast"
        return f"the forecast of {first.description} is not used: {first.message or first.reason}"


def apply_forecasts(
    prediction: PredictionSpec,
    forecasts: Mapping[str, Forecast],
    outcomes: Sequence[MetricOutcome],
    observation: Observation,
    tolerances: Tolerances,
    reactive: int,
    *,
    composite: bool = False,
) -> ForecastOutcome:
    """The forecast floor under ``reactive`` (the metrics' combined proposal), from each forecast metric's
    forecast (``forecasts``, by metric name) and its outcome this sync. ``composite``: the target has
    ``spec.composite``, whose metric stands for the External ones (none of them is forecast)."""
    metrics: list[MetricForecast] = []
    best: MetricForecast | None = None
    for outcome in outcomes:
        spec = outcome.spec
        if not prediction.predicts(spec, composite=composite):
            continue
        made = forecasts.get(spec.name)
        metric = _metric_forecast(outcome, made, observation, tolerances)
        metrics.append(metric)
        if metric.replicas is not None and (best is None or best.replicas is None or metric.replicas > best.replicas):
            best = metric
    replicas = best.replicas if best is not None else None
    proposal = reactive if replicas is None else max(reactive, replicas)
    return ForecastOutcome(tuple(metrics), reactive, replicas, proposal, best)


def _metric_forecast(
    outcome: MetricOutcome, made: Forecast | None, observation: Observation, tolerances: Tolerances
) -> MetricForecast:
    spec = outcome.spec
    description = outcome.description
    if made is None:
        none = Forecast(None, "", None, False, REASON_NO_FORECAST, "no forecast made yet")
        return MetricForecast(spec.name, description, none, None, REASON_NO_FORECAST, none.message)
    if outcome.error is not None:
        message = "the metric failed this sync: a forecast does not stand in for it"
        return MetricForecast(spec.name, description, made, None, REASON_METRIC_FAILED, message)
    if not made.usable or made.value is None:
        reason = made.reason or REASON_NO_FORECAST
        return MetricForecast(spec.name, description, made, None, reason, made.message)
    usage = _milli(made.value)
    target = spec.target
    scale = observation.scale
    try:
        if target.average_value is not None:
            result = per_pod_replicas(scale.status_replicas, usage, target.average_value.milli_value(), tolerances)
        elif target.value is not None:
            result = usage_ratio_replicas(
                scale.spec_replicas, usage, target.value.milli_value(), observation.pods, tolerances
            )
        else:
            return MetricForecast(spec.name, description, made, None, REASON_METRIC_FAILED, "no target value")
    except ReplicaCalculationError as exc:
        return MetricForecast(spec.name, description, made, None, REASON_METRIC_FAILED, str(exc))
    return MetricForecast(spec.name, description, made, result.replicas, "", made.message)


def _milli(value: float) -> int:
    """A forecast value in the milli units readings are in: never negative, at most int64's largest."""
    if value <= 0.0:
        return 0
    milli = value * 1000.0
    return MAX_INT64 if milli >= float(MAX_INT64) else math.ceil(milli)
