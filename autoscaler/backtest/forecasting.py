"""The replay's forecasts (``spec.prediction``): each predicted metric's history is read once, before the
replay, at the prediction's coarse step (one range query per metric, split at the points limit), from
``historySeconds`` before ``--from`` to ``--to``; at each sync the forecast is made from the points before
that sync only (:func:`autoscaler.core.prediction.forecast.forecast`), refreshed when a new point is there
(every ``stepSeconds``, as the service refreshes it) and reused in between: so that it covers every instant
the syncs it serves look ahead to, it is the largest forecast from the refresh plus the horizon to the next
refresh plus the horizon, as the service's.

The metric's history is its query's series summed at each step (what an Object or External metric's value
is), over the service's window: the ``historySeconds ÷ stepSeconds`` points up to the sync's step. The
report's error is the forecast line's (:func:`~autoscaler.core.prediction.forecast.forecast_series`: each
point forecast the horizon ahead from the points before it) against the history, over the points within the
window: the mean absolute percentage error (points whose value is 0 have no percentage error and are left
out).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence

from autoscaler.backtest.history import FetchStats, Grid, RangeQuerier, fetch_matrix
from autoscaler.backtest.report import ForecastTally
from autoscaler.core.prediction.floor import ForecastOutcome
from autoscaler.core.prediction.forecast import Forecast, forecast, forecast_series
from autoscaler.core.prediction.spec import PredictionSpec
from autoscaler.core.spec import MetricSpec
from autoscaler.plot.records import ForecastPoint


def history_grid(prediction: PredictionSpec, start: float, end: float) -> Grid:
    """The prediction's step grid from ``historySeconds`` before ``start`` to ``end`` (aligned on the step,
    as the service's range query is)."""
    step = prediction.step_seconds
    first = math.floor((start - prediction.history_seconds) / step) * step
    last = math.floor(end / step) * step
    return Grid(first * 1000, step * 1000, (last - first) // step + 1)


class ForecastFeed:
    """One run's forecasts of its predicted metrics, sync by sync."""

    def __init__(self, prediction: PredictionSpec, metrics: Sequence[MetricSpec], sync_period: float) -> None:
        self.prediction = prediction
        self.metrics = list(metrics)
        self.horizon = prediction.horizon(sync_period)
        self.tally = ForecastTally(model=prediction.model.value)
        self._points: dict[str, list[tuple[float, float]]] = {}
        self._times: dict[str, list[float]] = {}
        self._values: dict[str, dict[int, float]] = {}
        self._made: dict[str, int] = {}  # metric → how many points the cached forecast was made from
        self._cached: dict[str, Forecast] = {}
        self._start = self._end = 0.0
        self._models: list[str] = []  # the models that made forecasts (auto picks one each time)

    async def load(
        self,
        client: RangeQuerier,
        queries: Mapping[str, str],
        start: float,
        end: float,
        *,
        max_points: int,
        stats: FetchStats,
    ) -> None:
        """Read each metric's history (``queries``: metric name → its PromQL) once for the whole replay."""
        self._start, self._end = start, end
        grid = history_grid(self.prediction, start, end)
        for metric in self.metrics:
            matrix = await fetch_matrix(client, queries[metric.name], grid, max_points=max_points, stats=stats)
            # The series summed at each step, as the service's forecast cache sums them.
            points = [(t_ms / 1000, sum(float(s.value) for s in matrix.at(t_ms))) for t_ms in sorted(matrix.by_time)]
            self._points[metric.name] = points
            self._times[metric.name] = [t for t, _ in points]
            self._values[metric.name] = {round(t * 1000): v for t, v in points}

    def at(self, now: float) -> dict[str, Forecast]:
        """Each predicted metric's forecast at the sync at ``now``, from the points before it."""
        result = {}
        for metric in self.metrics:
            name = metric.name
            times = self._times.get(name, [])
            end = bisect.bisect_right(times, now)
            if end != self._made.get(name) or name not in self._cached:
                # The service's window: the historySeconds ÷ stepSeconds points up to now's step.
                step = self.prediction.step_seconds
                begin = bisect.bisect_left(
                    times, math.floor(now / step) * step - self.prediction.history_seconds + step
                )
                made = forecast(
                    self._points[name][begin:end],
                    now + self.horizon,
                    self.prediction,
                    horizon_seconds=self.horizon,
                    until=now + self.prediction.step_seconds + self.horizon,
                )
                self._made[name] = end
                self._cached[name] = made
            result[name] = self._cached[name]
        return result

    def score(self, forecasts: Mapping[str, Forecast], raised: bool, caused_scale_down: bool) -> None:
        """Count this sync's forecasts: usable or why not, whether the forecast decided the proposal
        (``raised``), and whether the sync scaled down where it would not have without them."""
        tally = self.tally
        tally.syncs += 1
        if forecasts and all(f.usable for f in forecasts.values()):
            tally.usable_syncs += 1
        for made in forecasts.values():
            if not made.usable:
                tally.ignored[made.reason] = tally.ignored.get(made.reason, 0) + 1
            if made.model and made.model not in self._models:
                self._models.append(made.model)
                tally.model = ", ".join(self._models)
        if raised:
            tally.decided_syncs += 1
        if caused_scale_down:
            tally.caused_scale_downs += 1

    def lines(self) -> dict[str, tuple[list[tuple[float, float]], list[tuple[float, float]]]]:
        """Per metric, within the window: its history and its forecast line (each point forecast the
        horizon ahead from the points before it); also sets the tally's error and model."""
        lines = {}
        errors: list[float] = []
        for metric in self.metrics:
            points = self._points.get(metric.name, [])
            line = forecast_series(points, self.prediction, horizon_seconds=self.horizon)
            inside = [(t, v) for t, v in line if self._start <= t <= self._end]
            actual = self._values.get(metric.name, {})
            for t, value in inside:
                seen = actual.get(round(t * 1000))
                if seen is not None and seen != 0:
                    errors.append(abs(value - seen) / abs(seen))
            lines[metric.name] = ([(t, v) for t, v in points if self._start <= t <= self._end], inside)
            self.tally.lines[metric.name] = [(t, value, actual.get(round(t * 1000))) for t, value in inside]
        self.tally.errors = errors
        return lines

    def points(self, outcome: ForecastOutcome | None, now: float) -> tuple[ForecastPoint, ...]:
        """This sync's forecasts as plot points: the instant each is for, and the replicas it asked for when the
        decision used it (by the metric's own rule: :mod:`autoscaler.core.prediction.floor`)."""
        if outcome is None:
            return ()
        return tuple(
            ForecastPoint(m.metric, now + self.horizon, m.forecast.value, m.replicas is not None, m.replicas)
            for m in outcome.metrics
        )
