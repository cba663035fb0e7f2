"""A metric's history on its step's grid, and the error of a forecast line over its last season."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from autoscaler.core.prediction.spec import PredictionSpec


@dataclass(frozen=True, slots=True)
class Grid:
    """The history on its step's grid: ``values[i]`` at ``start + i * step``, None for a gap."""

    start: float
    step: float
    values: tuple[float | None, ...]

    @staticmethod
    def of(history: Sequence[tuple[float, float]], step: float) -> Grid | None:
        finite = [(t, v) for t, v in history if math.isfinite(v) and math.isfinite(t)]
        if not finite:
            return None
        start = min(t for t, _ in finite)
        slots: dict[int, float] = {}
        for t, v in finite:
            slots[round((t - start) / step)] = v  # the later of two points on one step wins
        count = max(slots) + 1
        return Grid(start, step, tuple(slots.get(i) for i in range(count)))

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


class Setup:
    """The grid and the spec's figures in steps."""

    __slots__ = ("grid", "horizon_steps", "season_steps", "spec")

    def __init__(self, grid: Grid, spec: PredictionSpec, horizon: float) -> None:
        self.grid = grid
        self.spec = spec
        self.season_steps = max(1, round(spec.season_seconds / grid.step))
        # A forecast for step i is made at step i - horizon_steps: the last step at least the horizon before.
        self.horizon_steps = min(self.season_steps, max(1, math.ceil(horizon / grid.step - 1e-9)))

    @property
    def evaluation_start(self) -> int:
        """The first step of the last season: the error is measured from it on."""
        return max(0, self.grid.count - self.season_steps)


def error_key(candidate: tuple[float | None, str, float | None]) -> float:
    error = candidate[2]
    return math.inf if error is None else error


def error_percent_over_last_season(setup: Setup, line: Sequence[float | None]) -> float | None:
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
