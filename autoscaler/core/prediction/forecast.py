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

# Holt-Winters' smoothing parameters are searched on this grid (level, trend, season); the trend is damped
# by DAMPING with dampedTrend. Coarse on purpose: the error surface is flat near its minimum, and a grid
# is deterministic and bounded (60 passes over the history).
ALPHAS = (0.05, 0.15, 0.3, 0.5, 0.8)
BETAS = (0.0, 0.02, 0.1)
GAMMAS = (0.05, 0.15, 0.3, 0.5)
DAMPING = 0.98
# A history whose last point is more than this many steps before now is stale.
STALE_STEPS = 3


@dataclass(frozen=True, slots=True)
class Forecast:
    """One metric's forecast. ``value``: the forecast value (None when there is none); ``model``: the model
    that made it (``seasonalNaive`` or ``holtWinters``; the spec's when none did); ``error_percent``: its
    error over the history's last season (None when not measured); ``usable``: whether the decision may use
    it; ``reason``: why not ("" when usable); ``message``: the same in words, for conditions and explain."""

    value: float | None
    model: str
    error_percent: float | None
    usable: bool
    reason: str
    message: str = ""


def failed(spec: PredictionSpec, message: str) -> Forecast:
    """The forecast of a metric whose history could not be read."""
    return Forecast(None, spec.model.value, None, False, REASON_METRIC_FAILED, message)


def forecast(
    history: Sequence[tuple[float, float]],
    at: float,
    spec: PredictionSpec,
    *,
    horizon_seconds: float | None = None,
) -> Forecast:
    """The value at ``at`` (now + the horizon) forecast from ``history``, ``(unix time, value)`` pairs at
    ``spec.step_seconds`` in time order, ending at or before now.

    ``horizon_seconds``: how far ahead of now ``at`` is (default ``spec.horizon()``); the error is measured
    on forecasts that far ahead, and "now" is ``at`` minus it."""
    horizon = spec.horizon() if horizon_seconds is None else horizon_seconds
    grid = _Grid.of(history, spec.step_seconds)
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
    setup = _Setup(grid, spec, horizon)
    candidates: list[tuple[float | None, str, float | None]] = []
    if spec.model is not PredictionModel.HOLT_WINTERS:
        candidates.append(_seasonal_naive(setup, at))
    if spec.model is not PredictionModel.SEASONAL_NAIVE:
        if grid.count >= 3 * setup.season_steps:
            candidates.append(_holt_winters(setup, at))
        elif spec.model is PredictionModel.HOLT_WINTERS:
            return Forecast(
                None,
                model_name,
                None,
                False,
                REASON_SHORT_HISTORY,
                f"{span:.0f}s of history, Holt-Winters needs three seasons ({3 * season}s)",
            )
    value, chosen, error = min(candidates, key=_error_key)
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
    grid = _Grid.of(history, spec.step_seconds)
    if grid is None:
        return []
    setup = _Setup(grid, spec, horizon)
    naive = _naive_line(setup)
    if spec.model is PredictionModel.SEASONAL_NAIVE or grid.count < 3 * setup.season_steps:
        line = naive
    else:
        params = _fit(setup)
        holt = _holt_line(setup, params)[0]
        if spec.model is PredictionModel.HOLT_WINTERS:
            line = holt
        else:
            naive_error = _error(setup, naive)
            holt_error = _error(setup, holt)
            line = holt if _error_key((None, "", holt_error)) < _error_key((None, "", naive_error)) else naive
    return [(grid.time(i), value) for i, value in enumerate(line) if value is not None]


# -- the grid ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Grid:
    """The history on its step's grid: ``values[i]`` at ``start + i * step``, None for a gap."""

    start: float
    step: float
    values: tuple[float | None, ...]

    @staticmethod
    def of(history: Sequence[tuple[float, float]], step: float) -> _Grid | None:
        finite = [(t, v) for t, v in history if math.isfinite(v) and math.isfinite(t)]
        if not finite:
            return None
        start = min(t for t, _ in finite)
        slots: dict[int, float] = {}
        for t, v in finite:
            slots[round((t - start) / step)] = v  # the later of two points on one step wins
        count = max(slots) + 1
        return _Grid(start, step, tuple(slots.get(i) for i in range(count)))

    @property
    def count(self) -> int:
        return len(self.values)

    @property
    def last_time(self) -> float:
        return self.time(self.count - 1)

    @property
    def span_seconds(self) -> float:
        """The time the history covers, counting each point as a step."""
        return self.count * self.step

    def time(self, index: int) -> float:
        return self.start + index * self.step


class _Setup:
    """The grid and the spec's figures in steps."""

    __slots__ = ("grid", "horizon_steps", "season_steps", "spec")

    def __init__(self, grid: _Grid, spec: PredictionSpec, horizon: float) -> None:
        self.grid = grid
        self.spec = spec
        self.season_steps = max(1, round(spec.season_seconds / grid.step))
        # A forecast for step i is made at step i - horizon_steps: the last step at least the horizon before.
        self.horizon_steps = min(self.season_steps, max(1, math.ceil(horizon / grid.step - 1e-9)))

    @property
    def evaluation_start(self) -> int:
        """The first step of the last season: the error is measured from it on."""
        return max(0, self.grid.count - self.season_steps)


def _error_key(candidate: tuple[float | None, str, float | None]) -> float:
    error = candidate[2]
    return math.inf if error is None else error


def _error(setup: _Setup, line: Sequence[float | None]) -> float | None:
    """The weighted absolute percentage error of ``line`` over the last season (None if nothing to measure)."""
    values = setup.grid.values
    absolute_error = 0.0
    total = 0.0
    measured = 0
    for i in range(setup.evaluation_start, setup.grid.count):
        actual = values[i]
        predicted = line[i]
        if actual is None or predicted is None:
            continue
        absolute_error += abs(predicted - actual)
        total += abs(actual)
        measured += 1
    # Half the season measured at least: a few points say nothing of a season.
    if measured * 2 < setup.season_steps:
        return None
    if total == 0.0:
        return 0.0 if absolute_error == 0.0 else math.inf
    return 100.0 * absolute_error / total


# -- seasonal naive ------------------------------------------------------------------------------------------


def _season_back(values: Sequence[float | None], index: float, season_steps: int, latest: int) -> float | None:
    """The value a whole number of seasons before (fractional) step ``index``, the nearest such that is not a
    gap, using only steps up to ``latest``; between two steps, read on the line between them."""
    back = index - season_steps
    while back > latest:
        back -= season_steps
    while back >= 0:
        value = _read_between(values, back, latest)
        if value is not None:
            return value
        back -= season_steps
    return None


def _read_between(values: Sequence[float | None], index: float, latest: int) -> float | None:
    low = math.floor(index + 1e-9)
    fraction = index - low
    if fraction < 1e-9 or low + 1 > latest:
        return values[low] if 0 <= low <= latest else None
    before, after = values[low], values[low + 1]
    if before is None or after is None:
        return before if fraction < 0.5 else after
    return before + (after - before) * fraction


def _naive_line(setup: _Setup) -> list[float | None]:
    values = setup.grid.values
    m = setup.season_steps
    h = setup.horizon_steps
    return [_season_back(values, i, m, i - h) if i >= m else None for i in range(setup.grid.count)]


def _seasonal_naive(setup: _Setup, at: float) -> tuple[float | None, str, float | None]:
    grid = setup.grid
    index = (at - grid.start) / grid.step
    value = _season_back(grid.values, index, setup.season_steps, grid.count - 1)
    return value, PredictionModel.SEASONAL_NAIVE.value, _error(setup, _naive_line(setup))


# -- Holt-Winters --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _HoltParams:
    alpha: float
    beta: float
    gamma: float
    phi: float


@dataclass(frozen=True, slots=True)
class _HoltState:
    level: float
    trend: float
    seasonal: tuple[float, ...]  # indexed by step % season_steps
    last: int  # the step the state is at


def _holt_line(setup: _Setup, params: _HoltParams) -> tuple[list[float | None], _HoltState]:
    """Every step's horizon-ahead forecast (None before the first season plus the horizon) and the final state.

    Initial state from the first season: the level its mean, the trend 0, each offset its value less the
    mean (a gap: 0)."""
    values = setup.grid.values
    m = setup.season_steps
    h = setup.horizon_steps
    count = setup.grid.count
    first = [v for v in values[:m] if v is not None]
    line: list[float | None] = [None] * count
    level = sum(first) / len(first) if first else 0.0
    trend = 0.0
    seasonal = [(v - level) if v is not None else 0.0 for v in values[:m]]
    alpha, beta, gamma, phi = params.alpha, params.beta, params.gamma, params.phi
    ahead = _damped_sum(phi, h)
    for t in range(m, count):
        slot = t % m
        value = values[t]
        damped = phi * trend
        if value is None:
            level, trend = level + damped, damped
        else:
            new_level = alpha * (value - seasonal[slot]) + (1.0 - alpha) * (level + damped)
            trend = beta * (new_level - level) + (1.0 - beta) * damped
            level = new_level
            seasonal[slot] = gamma * (value - level) + (1.0 - gamma) * seasonal[slot]
        target = t + h
        if target < count:
            line[target] = level + ahead * trend + seasonal[target % m]
    return line, _HoltState(level, trend, tuple(seasonal), count - 1)


def _damped_sum(phi: float, steps: int) -> float:
    """phi + phi² + … + phi^steps (steps when phi is 1): the trend's weight ``steps`` ahead."""
    if phi == 1.0:
        return float(steps)
    return phi * (1.0 - phi**steps) / (1.0 - phi)


def _fit(setup: _Setup) -> _HoltParams:
    """The grid's parameters with the least squared horizon-ahead error before the last season."""
    values = setup.grid.values
    end = setup.evaluation_start
    phi = DAMPING if setup.spec.damped_trend else 1.0
    best: tuple[float, _HoltParams] | None = None
    for alpha in ALPHAS:
        for beta in BETAS:
            for gamma in GAMMAS:
                params = _HoltParams(alpha, beta, gamma, phi)
                line = _holt_line(setup, params)[0]
                squared = 0.0
                for i in range(setup.season_steps, end):
                    actual = values[i]
                    predicted = line[i]
                    if actual is not None and predicted is not None:
                        squared += (predicted - actual) ** 2
                if best is None or squared < best[0]:
                    best = (squared, params)
    assert best is not None
    return best[1]


def _holt_winters(setup: _Setup, at: float) -> tuple[float | None, str, float | None]:
    params = _fit(setup)
    line, state = _holt_line(setup, params)
    grid = setup.grid
    ahead = max(0.0, (at - grid.time(state.last)) / grid.step)
    low = math.floor(ahead)
    fraction = ahead - low
    value = _holt_ahead(state, params, low, setup.season_steps)
    if fraction > 1e-9:
        after = _holt_ahead(state, params, low + 1, setup.season_steps)
        value += (after - value) * fraction
    return value, PredictionModel.HOLT_WINTERS.value, _error(setup, line)


def _holt_ahead(state: _HoltState, params: _HoltParams, steps: int, season_steps: int) -> float:
    """The state's forecast ``steps`` after its step (0: its own smoothed value)."""
    slot = (state.last + steps) % season_steps
    return state.level + _damped_sum(params.phi, steps) * state.trend + state.seasonal[slot]
