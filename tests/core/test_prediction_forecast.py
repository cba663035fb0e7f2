"""The forecast against series with known answers: a pure sine, a step, a linear trend, gaps, a reset, too short or
stale a history, a high error; and the forecast line each of whose points uses only earlier data."""

from __future__ import annotations

import math
import random

import pytest

from autoscaler.core.prediction.forecast import (
    REASON_HIGH_ERROR,
    REASON_METRIC_FAILED,
    REASON_SHORT_HISTORY,
    REASON_STALE_HISTORY,
    failed,
    forecast,
    forecast_series,
)
from autoscaler.core.prediction.spec import PredictionModel, PredictionSpec

DAY = 86_400
STEP = 300
HORIZON = 900  # three steps: the forecast instant is on the grid


def spec(model: PredictionModel = PredictionModel.AUTO, **extra: object) -> PredictionSpec:
    fields: dict[str, object] = {"model": model, "horizon_seconds": HORIZON, **extra}
    return PredictionSpec(**fields)  # type: ignore[arg-type]


def sine(t: float) -> float:
    return 100.0 + 50.0 * math.sin(2 * math.pi * t / DAY)


def series(days: float, value: object, step: int = STEP) -> list[tuple[float, float]]:
    assert callable(value)
    return [(float(t), float(value(t))) for t in range(0, int(days * DAY), step)]


def at_after(history: list[tuple[float, float]]) -> float:
    return history[-1][0] + HORIZON


def test_a_sine_is_forecast_exactly_by_seasonal_naive_and_closely_by_holt_winters() -> None:
    history = series(3, sine)
    at = at_after(history)
    naive = forecast(history, at, spec(PredictionModel.SEASONAL_NAIVE))
    assert naive.usable and naive.reason == "" and naive.model == "seasonalNaive"
    assert naive.value == pytest.approx(sine(at), abs=1e-9)
    assert naive.error_percent == pytest.approx(0.0, abs=1e-9)
    holt = forecast(history, at, spec(PredictionModel.HOLT_WINTERS))
    assert holt.usable and holt.model == "holtWinters"
    assert holt.value == pytest.approx(sine(at), rel=0.01)
    assert holt.error_percent is not None and holt.error_percent < 1.0


def test_between_two_steps_the_forecast_reads_on_the_line_between_them() -> None:
    history = series(3, sine)
    at = history[-1][0] + 90 + 15  # a pod start-up plus a sync period: not on the grid
    result = forecast(history, at, spec(PredictionModel.SEASONAL_NAIVE), horizon_seconds=105)
    assert result.value == pytest.approx(sine(at), rel=1e-3)


def test_a_step_long_past_is_forecast_at_its_new_level() -> None:
    history = series(3, lambda t: 100.0 if t < DAY else 200.0)
    at = at_after(history)
    naive = forecast(history, at, spec(PredictionModel.SEASONAL_NAIVE))
    assert naive.usable and naive.value == 200.0
    holt = forecast(history, at, spec(PredictionModel.HOLT_WINTERS))
    assert holt.usable and holt.value == pytest.approx(200.0, rel=0.02)


def test_a_step_within_the_last_season_makes_seasonal_naive_err_and_be_ignored() -> None:
    history = series(3, lambda t: 100.0 if t < 2.2 * DAY else 400.0)
    result = forecast(history, at_after(history), spec(PredictionModel.SEASONAL_NAIVE))
    assert not result.usable and result.reason == REASON_HIGH_ERROR
    assert result.error_percent is not None and result.error_percent > 25.0
    assert result.value == 100.0  # what it would have said: kept for explain and the metric


def test_a_linear_trend_is_followed_by_holt_winters_and_auto_picks_it() -> None:
    def trend(t: float) -> float:
        return 10.0 + t / 3600.0

    history = series(3, trend)
    at = at_after(history)
    holt = forecast(history, at, spec(PredictionModel.HOLT_WINTERS))
    assert holt.usable and holt.value == pytest.approx(trend(at), rel=0.01)
    naive = forecast(history, at, spec(PredictionModel.SEASONAL_NAIVE))
    assert naive.value == pytest.approx(trend(at - DAY))  # a day behind the trend
    chosen = forecast(history, at, spec())
    assert chosen.model == "holtWinters" and chosen.value == holt.value
    assert chosen.error_percent is not None and naive.error_percent is not None
    assert chosen.error_percent < naive.error_percent


def test_gaps_and_non_finite_values_are_crossed() -> None:
    rng = random.Random(7)
    history = [(t, v) for t, v in series(3, sine) if rng.random() > 0.2]  # a fifth of the steps missing
    history = [(t, math.nan if rng.random() < 0.05 else v) for t, v in history]
    history.append((history[-1][0] + STEP, math.inf))  # a last, infinite value: a gap too
    at = at_after(history)
    naive = forecast(history, at, spec(PredictionModel.SEASONAL_NAIVE, history_seconds=4 * DAY))
    assert naive.usable and naive.value == pytest.approx(sine(at), rel=0.01)
    holt = forecast(history, at, spec(PredictionModel.HOLT_WINTERS))
    assert holt.usable and holt.value == pytest.approx(sine(at), rel=0.03)


def test_a_reset_a_season_back_is_repeated_by_seasonal_naive_smoothed_by_holt_winters() -> None:
    """A restart a season ago read 0 for three steps (a counter's reset as a rate that does not absorb it).
    Seasonal naive repeats it at that instant (a forecast of 0: a floor that asks for nothing, never a
    lower count); Holt-Winters smooths it to near the curve; the error rises but stays under the bound; and
    over the span the syncs look ahead to (``until``) the curve's larger values stand."""
    history = series(3, sine)
    at = at_after(history)
    reset = at - DAY
    history = [(t, 0.0 if abs(t - reset) <= STEP else v) for t, v in history]
    naive = forecast(history, at, spec(PredictionModel.SEASONAL_NAIVE))
    assert naive.usable and naive.value == 0.0
    assert naive.error_percent is not None and 0.5 < naive.error_percent < 25
    holt = forecast(history, at, spec(PredictionModel.HOLT_WINTERS))
    assert holt.usable and holt.value == pytest.approx(sine(at), rel=0.06)
    over = forecast(history, at, spec(PredictionModel.SEASONAL_NAIVE), until=at + 2 * STEP)
    assert over.value == pytest.approx(sine(at + 2 * STEP))


def test_seasonal_naive_looks_a_season_further_back_across_a_gap() -> None:
    history = series(4, sine)
    at = at_after(history)
    missing = at - DAY
    history = [(t, v) for t, v in history if abs(t - missing) > 1]
    result = forecast(history, at, spec(PredictionModel.SEASONAL_NAIVE, history_seconds=4 * DAY))
    assert result.value == pytest.approx(sine(at - 2 * DAY))


@pytest.mark.parametrize(
    ("model", "days", "words"),
    [
        (PredictionModel.SEASONAL_NAIVE, 1.5, "129600s of history, 172800s needed"),
        (PredictionModel.AUTO, 1.9, "of history, 172800s needed"),
        (PredictionModel.HOLT_WINTERS, 2.5, "Holt-Winters needs three seasons (259200s)"),
    ],
)
def test_too_short_a_history_gives_no_forecast(model: PredictionModel, days: float, words: str) -> None:
    history = series(days, sine)
    result = forecast(history, at_after(history), spec(model))
    assert (result.usable, result.value, result.reason) == (False, None, REASON_SHORT_HISTORY)
    assert words in result.message


def test_auto_forecasts_with_seasonal_naive_while_holt_winters_has_too_little_history() -> None:
    history = series(2.5, sine)
    result = forecast(history, at_after(history), spec())
    assert result.usable and result.model == "seasonalNaive"


def test_min_history_seconds_can_ask_for_more() -> None:
    history = series(3, sine)
    result = forecast(history, at_after(history), spec(min_history_seconds=4 * DAY, history_seconds=4 * DAY))
    assert result.reason == REASON_SHORT_HISTORY and "345600s needed" in result.message


def test_no_history_and_a_stale_history() -> None:
    assert forecast([], 1000.0, spec()).reason == REASON_SHORT_HISTORY
    history = series(3, sine)
    stale = forecast(history, history[-1][0] + 4 * STEP + HORIZON, spec())
    assert (stale.usable, stale.reason) == (False, REASON_STALE_HISTORY)


def test_noise_is_not_forecast() -> None:
    rng = random.Random(3)
    history = series(3, lambda t: rng.uniform(0.0, 100.0))
    result = forecast(history, at_after(history), spec())
    assert not result.usable and result.reason == REASON_HIGH_ERROR
    assert f"above maxErrorPercent {25:g}%" in result.message


def test_a_bound_a_little_above_the_error_admits_it() -> None:
    rng = random.Random(5)
    history = series(3, lambda t: sine(t) * rng.uniform(0.9, 1.1))
    measured = forecast(history, at_after(history), spec(PredictionModel.SEASONAL_NAIVE, max_error_percent=0.0))
    assert measured.reason == REASON_HIGH_ERROR and measured.error_percent is not None
    bound = measured.error_percent + 0.1
    admitted = forecast(history, at_after(history), spec(PredictionModel.SEASONAL_NAIVE, max_error_percent=bound))
    assert admitted.usable and admitted.value == measured.value


def test_a_failed_history_read() -> None:
    result = failed(spec(), "range query: connection refused")
    assert (result.value, result.usable, result.reason) == (None, False, REASON_METRIC_FAILED)
    assert result.message == "range query: connection refused"


@pytest.mark.parametrize("model", [PredictionModel.SEASONAL_NAIVE, PredictionModel.HOLT_WINTERS])
def test_the_forecast_line_uses_only_data_a_horizon_before_each_point(model: PredictionModel) -> None:
    rng = random.Random(11)
    history = series(3, lambda t: sine(t) + rng.uniform(-5.0, 5.0))
    line = dict(forecast_series(history, spec(model)))
    assert len(line) > DAY // STEP
    cut = len(history) - 20  # change every value from here on: the points before cut + horizon are the same
    changed = history[:cut] + [(t, v * 3.0) for t, v in history[cut:]]
    changed_line = dict(forecast_series(changed, spec(model)))
    horizon_steps = HORIZON // STEP
    for t, _ in history[: cut + horizon_steps]:
        if t in line:
            assert changed_line[t] == pytest.approx(line[t]), t
    later = history[cut + horizon_steps][0]
    if model is PredictionModel.HOLT_WINTERS:  # seasonal naive's later points look a season back: unchanged
        assert changed_line[later] != pytest.approx(line[later])


def test_the_forecast_line_of_seasonal_naive_is_the_series_a_season_later() -> None:
    history = series(3, sine)
    line = forecast_series(history, spec(PredictionModel.SEASONAL_NAIVE))
    assert line[0][0] == DAY
    assert all(value == pytest.approx(sine(t)) for t, value in line)


@pytest.mark.parametrize("model", [PredictionModel.SEASONAL_NAIVE, PredictionModel.HOLT_WINTERS])
def test_until_gives_the_largest_forecast_over_a_span(model: PredictionModel) -> None:
    history = series(3, sine)
    at = at_after(history)  # the sine rises here (a quarter day before its peak at 0.25 day)
    assert sine(at + 3600) > sine(at)
    alone = forecast(history, at, spec(model))
    over = forecast(history, at, spec(model), until=at + 3600)
    assert over.value is not None and alone.value is not None
    assert over.value == pytest.approx(sine(at + 3600), rel=0.01) and over.value > alone.value
    assert over.error_percent == alone.error_percent
