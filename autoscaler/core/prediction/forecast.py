"""The forecast of one metric's value a horizon ahead, from its own history. Pure: the time is passed in.

Two models, both seasonal (the load repeats every ``seasonSeconds``: a day, a week):

- **seasonal naive**: the value one season before the forecast instant (same time yesterday, or last week);
  where that point is missing, the one a season earlier.
- **Holt-Winters**, additive: a level, a trend (damped with ``dampedTrend``) and one seasonal offset per step
  of the season, each smoothed as the values come (Hyndman & Athanasopoulos, *Forecasting: Principles and
  Practice*, 3rd ed., §8.3 and §8.4). The smoothing parameters are chosen on a grid by the squared error of
  horizon-ahead forecasts over the history before its last season.

``auto`` takes the model whose forecasts were nearer over the history's last season.

**The error.** Each model forecasts every step of the history's last season from the data at least a
horizon before it (rolling origin, horizon ahead), and its error is the sum of the absolute errors over the
sum of the absolute values, in percent (the weighted absolute percentage error: MAPE weighted by value, so a
quiet night's values near zero do not blow it up as they blow up a plain mean of percentages). A forecast
whose error is above ``maxErrorPercent`` is not used (reason ``HighError``).

**Gaps.** The history is laid on its step's grid; a missing step, or a NaN or infinite value, is a gap.
Seasonal naive looks a season further back across a gap; Holt-Winters carries its state through it (the
state advances by its own forecast, the seasonal offsets unchanged). Counter resets: the history is the
metric's own query evaluated over a range (a ``rate()`` or ``increase()`` in Prometheus already reads a
counter's reset as one), so the values are the metric's, not a raw counter's; a drop in them is a drop in
the load and is forecast as one.

**Why our own Holt-Winters** (the sentence docs/prediction.md's "Why" paragraph takes): statsmodels'
``ExponentialSmoothing`` brings numpy, scipy, pandas and patsy, some 250 MB into an image that has none of
them today, for a model that is forty lines of arithmetic on a few thousand points; its fit (a scipy
optimizer) is also several times slower than a grid search over a dozen parameter sets here, and what this
module needs of it — additive seasonality, an optional damped trend, and forecasts that use only the data
before each point — is the textbook recursion, tested here against series with known answers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from autoscaler.core.prediction.grid import Grid, Setup, error_key, error_percent_over_last_season
from autoscaler.core.prediction.holt_winters import fit, holt_line, holt_winters
from autoscaler.core.prediction.seasonal_naive import naive_line, seasonal_naive
from autoscaler.core.prediction.spec import PredictionModel, PredictionSpec

__all__ = [
    "REASON_HIGH_ERROR",
    "REASON_METRIC_FAILED",
    "REASON_NO_VALUE",
    "REASON_SHORT_HISTORY",
    "REASON_STALE_HISTORY",
    "Forecast",
    "failed",
    "forecast",
    "forecast_series",
]

# Why a forecast is not used (its ``reason``; a usable forecast has "").
REASON_SHORT_HISTORY = "ShortHistory"  # less history than minHistorySeconds, or than the model needs
REASON_HIGH_ERROR = "HighError"  # the error over the last season is above maxErrorPercent
REASON_METRIC_FAILED = "MetricFailed"  # the history could not be read (the service's range query failed)
REASON_NO_VALUE = "NoValue"  # no value to forecast from at the instant (every season back is a gap)
REASON_STALE_HISTORY = "StaleHistory"  # the history ends too long before now (the metric stopped)

# A history whose last point is more than this many steps before now is stale.
STALE_STEPS = 3


@dataclass(slots=True, init=False, unsafe_hash=True)
class Forecast:
    """One metric's forecast. ``value``: the forecast value (None when there is none); ``model``: the model
    that made it (``seasonalNaive`` or ``holtWinters``; the spec's when none did); ``error_percent``: its
    error over the history's last season (None when not measured); ``usable``: whether the decision may use
    it; ``reason``: why not ("" when usable); ``message``: the same in words, for conditions and explain."""

    value: Final[float | None]
    model: Final[str]
    error_percent: Final[float | None]
    usable: Final[bool]
    reason: Final[str]
    message: Final[str]

    def __init__(
        self, value: float | None, model: str, error_percent: float | None, usable: bool, reason: str, message: str = ""
    ) -> None:
        self.value = value
        self.model = model
        self.error_percent = error_percent
        self.usable = usable
        self.reason = reason
        self.message = message


def failed(spec: PredictionSpec, message: str) -> Forecast:
    """The forecast of a metric whose history could not be read."""
    return Forecast(None, spec.model.value, None, False, REASON_METRIC_FAILED, message)


def forecast(
    history: Sequence[tuple[float, float]],
    at: float,
    spec: PredictionSpec,
    *,
    horizon_seconds: float | None = None,
    until: float | None = None,
) -> Forecast:
    """The value at ``at`` (now + the horizon) forecast from ``history``, ``(unix time, value)`` pairs at
    ``spec.step_seconds`` in time order, ending at or before now.

    ``horizon_seconds``: how far ahead of now ``at`` is (default ``spec.horizon()``); the error is measured
    on forecasts that far ahead, and "now" is ``at`` minus it. ``until``: the value is the largest forecast
    from ``at`` to ``until`` (at ``at``, each step between, and ``until``): a forecast kept for the syncs of
    a while (the service's, refreshed every step) covers the instants each of them looks ahead to."""
    horizon = spec.horizon() if horizon_seconds is None else horizon_seconds
    grid = Grid.of(history, spec.step_seconds)
    model_name = spec.model.value
    if grid is None:
        return Forecast(None, model_name, None, False, REASON_SHORT_HISTORY, "no history")
    now = at - horizon
    if now - grid.last_time > STALE_STEPS * spec.step_seconds:
        return Forecast(
            None,
            model_name,
            None,
            False,
            REASON_STALE_HISTORY,
            f"the history ends {now - grid.last_time:.0f}s before now (at most {STALE_STEPS} steps)",
        )
    span = grid.span_seconds
    season = spec.season_seconds
    if span < spec.min_history_seconds:
        return Forecast(
            None,
            model_name,
            None,
            False,
            REASON_SHORT_HISTORY,
            f"{span:.0f}s of history, {spec.min_history_seconds}s needed",
        )
    setup = Setup(grid, spec, horizon)
    instants = [at]
    if until is not None and until > at:
        instants.extend(at + k * grid.step for k in range(1, math.ceil((until - at) / grid.step)))
        instants.append(until)
    candidates: list[tuple[float | None, str, float | None]] = []
    if spec.model is not PredictionModel.HOLT_WINTERS:
        candidates.append(seasonal_naive(setup, instants))
    if spec.model is not PredictionModel.SEASONAL_NAIVE:
        if grid.count >= 3 * setup.season_steps:
            candidates.append(holt_winters(setup, instants))
        elif spec.model is PredictionModel.HOLT_WINTERS:
            return Forecast(
                None,
                model_name,
                None,
                False,
                REASON_SHORT_HISTORY,
                f"{span:.0f}s of history, Holt-Winters needs three seasons ({3 * season}s)",
            )
    value, chosen, error = min(candidates, key=error_key)
    if error is None:
        return Forecast(value, chosen, None, False, REASON_SHORT_HISTORY, "no error measured over the last season")
    if value is None:
        return Forecast(None, chosen, error, False, REASON_NO_VALUE, "every season back from the instant is a gap")
    if error > spec.max_error_percent:
        return Forecast(
            value,
            chosen,
            error,
            False,
            REASON_HIGH_ERROR,
            f"error {error:.1f}% over the last season, above maxErrorPercent {spec.max_error_percent:g}%",
        )
    return Forecast(value, chosen, error, True, "", f"{chosen} forecast {value:g} (error {error:.1f}%)")


def forecast_series(
    history: Sequence[tuple[float, float]], spec: PredictionSpec, *, horizon_seconds: float | None = None
) -> list[tuple[float, float]]:
    """The forecast line over the history's span: ``(time, value)`` for each step that has a forecast, each
    made from the data at least the horizon before it (for a backtest's error and plot).

    The model is the spec's; with ``auto``, the one a forecast at the history's end would choose.
    Holt-Winters' smoothing parameters are those a forecast at the history's end would choose (fitted on the
    history before its last season); its state is filtered forward, so each point uses only earlier data."""
    horizon = spec.horizon() if horizon_seconds is None else horizon_seconds
    grid = Grid.of(history, spec.step_seconds)
    if grid is None:
        return []
    setup = Setup(grid, spec, horizon)
    naive = naive_line(setup)
    if spec.model is PredictionModel.SEASONAL_NAIVE or grid.count < 3 * setup.season_steps:
        line = naive
    else:
        params, start = fit(setup)
        holt = holt_line(setup, params, start)[0]
        if spec.model is PredictionModel.HOLT_WINTERS:
            line = holt
        else:
            naive_error = error_percent_over_last_season(setup, naive)
            holt_error = error_percent_over_last_season(setup, holt)
            line = holt if error_key((None, "", holt_error)) < error_key((None, "", naive_error)) else naive
    return [(grid.time(i), value) for i, value in enumerate(line) if value is not None]
