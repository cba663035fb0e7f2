"""Seasonal naive: the value one season before the forecast instant (same time yesterday, or last week)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from autoscaler.core.prediction.grid import Setup, error_percent_over_last_season
from autoscaler.core.prediction.spec import PredictionModel


def season_back(values: Sequence[float | None], index: float, season_steps: int, latest: int) -> float | None:
    """The value a whole number of seasons before (fractional) step ``index``, the nearest such that is not a
    gap, using only steps up to ``latest``; between two steps, read on the line between them."""
    back = index - season_steps
    while back > latest:
        back -= season_steps
    while back >= 0:
        value = read_between(values, back, latest)
        if value is not None:
            return value
        back -= season_steps
    return None


def read_between(values: Sequence[float | None], index: float, latest: int) -> float | None:
    low = math.floor(index + 1e-9)
    fraction = index - low
    if fraction < 1e-9 or low + 1 > latest:
        return values[low] if 0 <= low <= latest else None
    before, after = values[low], values[low + 1]
    if before is None or after is None:
        return before if fraction < 0.5 else after
    return before + (after - before) * fraction


def naive_line(setup: Setup) -> list[float | None]:
    values = setup.grid.values
    m = setup.season_steps
    h = setup.horizon_steps
    return [season_back(values, i, m, i - h) if i >= m else None for i in range(setup.grid.count)]


def seasonal_naive(setup: Setup, instants: Sequence[float]) -> tuple[float | None, str, float | None]:
    """The largest forecast over ``instants`` (None if none has one), the model's name and its error."""
    grid = setup.grid
    found = [
        season_back(grid.values, (at - grid.start) / grid.step, setup.season_steps, grid.count - 1) for at in instants
    ]
    value = max((v for v in found if v is not None), default=None)
    return value, PredictionModel.SEASONAL_NAIVE.value, error_percent_over_last_season(setup, naive_line(setup))
