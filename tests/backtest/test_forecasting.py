"""The replay's forecasts (autoscaler/backtest/forecasting.py) over the known step/steady history: a value
that repeats every 600 s (20 for five minutes, then 60), read at the prediction's own 60 s step from a real
Prometheus. Seasonal naive forecasts it exactly, so every error is 0 and each forecast is known."""

from __future__ import annotations

import pytest

from autoscaler.backtest.forecasting import ForecastFeed, history_grid
from autoscaler.backtest.history import FetchStats
from autoscaler.backtest.report import forecast_json
from autoscaler.core.prediction.spec import PredictionModel, PredictionSpec
from autoscaler.core.spec import MetricSourceType
from autoscaler.core.spec_parse import read_target_spec
from autoscaler.prometheus import PrometheusClient, PrometheusSettings
from autoscaler.values.fields import ErrorList
from autoscaler.values.timestamps import rfc3339_millis
from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data as hd
from tests.backtest import prediction_data as pd

pytestmark = pytest.mark.prometheus

PREDICTION = PredictionSpec(
    model=PredictionModel.SEASONAL_NAIVE,
    season_seconds=pd.SEASON,
    pod_startup_seconds=45,
    step_seconds=60,
    history_seconds=2 * pd.SEASON,
    min_history_seconds=2 * pd.SEASON,
)
WINDOW_END = hd.T0 + (hd.SYNCS - 1) * hd.STEP


def queue_metric() -> object:
    errors = ErrorList()
    spec = read_target_spec(pd.STEADY_SPEC, "spec", errors, require_queries=True)
    errors.raise_if_any()
    assert spec is not None
    (metric,) = spec.metrics
    assert metric.type is MetricSourceType.EXTERNAL
    return metric


async def test_forecasts_from_the_history_before_each_sync(history_prometheus: PrometheusSandbox) -> None:
    metric = queue_metric()
    feed = ForecastFeed(PREDICTION, [metric], float(hd.STEP))  # type: ignore[list-item]
    assert feed.horizon == 45 + 15
    settings = PrometheusSettings(url=history_prometheus.url)
    stats = FetchStats()
    async with PrometheusClient(settings) as client:
        await feed.load(client, {"queue_rate": pd.QUERY}, hd.T0, WINDOW_END, max_points=11_000, stats=stats)
    grid = history_grid(PREDICTION, hd.T0, WINDOW_END)
    assert stats.range_queries == 1 and stats.points == grid.count  # one query, one series, read once
    made = []
    for k in range(hd.SYNCS):
        now = hd.T0 + k * hd.STEP
        forecasts = feed.at(now)
        feed.score(forecasts, raised=False, caused_scale_down=False)
        made.append(forecasts["queue_rate"])
    assert all(f.usable and f.error_percent == pytest.approx(0.0, abs=1e-9) for f in made)
    # Each is the largest value forecast from now + 60 s to the next refresh's (a step later) + 60 s; refreshed at
    # the first sync after each new point (T0 − 20 s + 60 s × n: syncs 3, 7, 11…), seasonal naive interpolating
    # between the points of a season ago (the rise between the points at T0 + 280 s and T0 + 340 s, the fall
    # between T0 + 580 s and T0 + 640 s). At sync 11 (T0 + 165 s) the span ends at T0 + 285 s, 5 s into the
    # rise; at sync 35 (T0 + 525 s) it starts at T0 + 585 s, 5 s into the fall; at 39 it is past the fall.
    rise, fall = pd.LOW + (pd.HIGH - pd.LOW) * 5 / 60, pd.HIGH - (pd.HIGH - pd.LOW) * 5 / 60
    expected = [pd.LOW] * 11 + [rise] * 4 + [pd.HIGH] * 20 + [fall] * 4 + [pd.LOW]
    assert [f.value for f in made] == pytest.approx(expected)
    assert feed.tally.syncs == hd.SYNCS and feed.tally.usable_syncs == hd.SYNCS and not feed.tally.ignored

    lines = feed.lines()
    history, line = lines["queue_rate"]
    assert [v for _, v in history] == [pd.value_at(t) for t, _ in history]
    assert line and all(value == pd.value_at(t) for t, value in line)  # the season repeats exactly
    assert feed.tally.mape == 0.0 and len(feed.tally.errors) == len(line)
    document = forecast_json(feed.tally)
    assert document is not None
    assert document["mapePercent"] == 0.0 and document["comparedPoints"] == len(line)
    assert document["lines"]["queue_rate"] == [
        {"at": rfc3339_millis(t), "forecast": value, "actual": float(pd.value_at(t))} for t, value in line
    ]


async def test_a_short_history_is_not_used(history_prometheus: PrometheusSandbox) -> None:
    """Five seasons asked for, four at most there: ShortHistory at every sync, counted by reason."""
    longer = PredictionSpec(
        model=PredictionModel.SEASONAL_NAIVE,
        season_seconds=pd.SEASON,
        pod_startup_seconds=45,
        step_seconds=60,
        history_seconds=5 * pd.SEASON,
        min_history_seconds=5 * pd.SEASON,
    )
    feed = ForecastFeed(longer, [queue_metric()], float(hd.STEP))  # type: ignore[list-item]
    settings = PrometheusSettings(url=history_prometheus.url)
    async with PrometheusClient(settings) as client:
        await feed.load(client, {"queue_rate": pd.QUERY}, hd.T0, WINDOW_END, max_points=11_000, stats=FetchStats())
    for k in range(hd.SYNCS):
        feed.score(feed.at(hd.T0 + k * hd.STEP), raised=False, caused_scale_down=False)
    assert feed.tally.usable_syncs == 0 and feed.tally.ignored == {"ShortHistory": hd.SYNCS}
