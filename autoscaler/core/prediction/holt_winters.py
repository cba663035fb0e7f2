"""Holt-Winters, additive, the trend optionally damped (Hyndman & Athanasopoulos, *Forecasting: Principles
and Practice*, 3rd ed., §8.3 and §8.4): a level, a trend and one seasonal offset per step of the season, each
smoothed as the values come; the smoothing parameters chosen on a grid."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from autoscaler.core.prediction.grid import Setup, error_percent_over_last_season
from autoscaler.core.prediction.spec import PredictionModel

# Holt-Winters' smoothing parameters are searched on this grid (level, trend, season); the trend is damped
# by DAMPING with dampedTrend. Coarse on purpose: the error surface is flat near its minimum, and a grid
# is deterministic and bounded (60 passes over the history).
ALPHAS = (0.05, 0.15, 0.3, 0.5, 0.8)
BETAS = (0.0, 0.02, 0.1)
GAMMAS = (0.05, 0.15, 0.3, 0.5)
DAMPING = 0.98


@dataclass(frozen=True, slots=True)
class HoltParams:
    alpha: float
    beta: float
    gamma: float
    phi: float


@dataclass(frozen=True, slots=True)
class HoltState:
    level: float
    trend: float
    seasonal: tuple[float, ...]  # indexed by step % season_steps
    last: int  # the step the state is at


def initial_states(setup: Setup) -> tuple[HoltState, HoltState]:
    """Two states at the end of the first season to start from, the fit choosing: with a trend and without.

    With one: the trend the least-squares slope through the first season, each offset the season's value less
    that line, the level the line at the season's last step. Without: the level the season's mean, each
    offset its value less the mean. The first suits a trend (without it, the trend within the first season
    would stay in the offsets as a sawtooth for several seasons, each offset being updated once a season), the
    second a season whose own shape has a slope (a sine over one period has one). Not the classic start from
    the step between two seasons' means: that cannot tell a trend from a step between the seasons, and a
    wrong start fits the next seasons as well while drifting. A gap reads on the line between the known values
    around it."""
    m = setup.season_steps
    first = _filled(setup.grid.values[:m])
    if not first:
        empty = HoltState(0.0, 0.0, (0.0,) * m, m - 1)
        return empty, empty
    mean = sum(first) / m
    middle = (m - 1) / 2.0
    spread = sum((i - middle) ** 2 for i in range(m))
    trend = sum((i - middle) * (v - mean) for i, v in enumerate(first)) / spread if spread else 0.0
    sloped = tuple(v - (mean + trend * (i - middle)) for i, v in enumerate(first))
    flat = tuple(v - mean for v in first)
    return HoltState(mean + trend * middle, trend, sloped, m - 1), HoltState(mean, 0.0, flat, m - 1)


def _filled(values: Sequence[float | None]) -> list[float]:
    """``values`` with each gap read on the line between the known values around it (the nearest one at
    either end); empty when none is known."""
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    if not known:
        return []
    filled: list[float] = []
    position = 0
    for i, value in enumerate(values):
        if value is not None:
            filled.append(value)
            continue
        while position + 1 < len(known) and known[position + 1][0] < i:
            position += 1
        before, after = known[position], known[min(position + 1, len(known) - 1)]
        if before[0] > i or after[0] < i or after[0] == before[0]:
            filled.append(before[1] if abs(before[0] - i) <= abs(after[0] - i) else after[1])
        else:
            filled.append(before[1] + (after[1] - before[1]) * (i - before[0]) / (after[0] - before[0]))
    return filled


def holt_line(setup: Setup, params: HoltParams, start: HoltState) -> tuple[list[float | None], HoltState]:
    """Every step's horizon-ahead forecast (None before the first season plus the horizon) and the final
    state, the recursion begun from ``start`` (:func:`initial_states`) after the first season."""
    values = setup.grid.values
    m = setup.season_steps
    h = setup.horizon_steps
    count = setup.grid.count
    line: list[float | None] = [None] * count
    level, trend = start.level, start.trend
    seasonal = list(start.seasonal)
    alpha, beta, gamma, phi = params.alpha, params.beta, params.gamma, params.phi
    ahead = damped_sum(phi, h)
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
    return line, HoltState(level, trend, tuple(seasonal), count - 1)


def damped_sum(phi: float, steps: int) -> float:
    """phi + phi² + … + phi^steps (steps when phi is 1): the trend's weight ``steps`` ahead."""
    if phi == 1.0:
        return float(steps)
    return phi * (1.0 - phi**steps) / (1.0 - phi)


def fit(setup: Setup) -> tuple[HoltParams, HoltState]:
    """The grid's parameters and the start (:func:`initial_states`) with the least squared horizon-ahead
    error before the last season."""
    values = setup.grid.values
    end = setup.evaluation_start
    phi = DAMPING if setup.spec.damped_trend else 1.0
    best: tuple[float, HoltParams, HoltState] | None = None
    for start in dict.fromkeys(initial_states(setup)):
        for alpha in ALPHAS:
            for beta in BETAS:
                for gamma in GAMMAS:
                    params = HoltParams(alpha, beta, gamma, phi)
                    line = holt_line(setup, params, start)[0]
                    squared = 0.0
                    for i in range(setup.season_steps, end):
                        actual = values[i]
                        predicted = line[i]
                        if actual is not None and predicted is not None:
                            squared += (predicted - actual) ** 2
                    if best is None or squared < best[0]:
                        best = (squared, params, start)
    assert best is not None
    return best[1], best[2]


def holt_winters(setup: Setup, instants: Sequence[float]) -> tuple[float | None, str, float | None]:
    """The largest forecast over ``instants``, the model's name and its error."""
    params, start = fit(setup)
    line, state = holt_line(setup, params, start)
    value = max(_holt_at(setup, state, params, at) for at in instants)
    return value, PredictionModel.HOLT_WINTERS.value, error_percent_over_last_season(setup, line)


def _holt_at(setup: Setup, state: HoltState, params: HoltParams, at: float) -> float:
    """The forecast at ``at``: between two steps, on the line between their forecasts."""
    grid = setup.grid
    ahead = max(0.0, (at - grid.time(state.last)) / grid.step)
    low = math.floor(ahead)
    fraction = ahead - low
    value = holt_ahead(state, params, low, setup.season_steps)
    if fraction > 1e-9:
        after = holt_ahead(state, params, low + 1, setup.season_steps)
        value += (after - value) * fraction
    return value


def holt_ahead(state: HoltState, params: HoltParams, steps: int, season_steps: int) -> float:
    """The state's forecast ``steps`` after its step (0: its own smoothed value)."""
    slot = (state.last + steps) % season_steps
    return state.level + damped_sum(params.phi, steps) * state.trend + state.seasonal[slot]
