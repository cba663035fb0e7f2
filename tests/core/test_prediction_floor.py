"""The floor rule in whole syncs: a usable forecast raises the proposal to the replicas it asks for and never
lowers it; it never causes a scale-down and holds no scale-down window beyond the syncs it raised; it is
ignored, with the Predicting condition saying why, when it is not usable or its metric failed."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pytest

from autoscaler.core.observation import (
    ConditionStatus,
    ExternalReading,
    MetricFailure,
    MetricReading,
    ObjectReading,
    Observation,
    ScaleInfo,
)
from autoscaler.core.prediction.condition import PREDICTING
from autoscaler.core.prediction.floor import ForecastOutcome, MetricForecast
from autoscaler.core.prediction.forecast import Forecast
from autoscaler.core.prediction.spec import PredictionSpec
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import TargetSpec
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.core.sync import SyncInputs, SyncOutcome, SyncState, sync
from autoscaler.values.records import record_problems
from tests.core.builders import pod

WINDOW = 60.0
SETTINGS = ControllerSettings(downscale_stabilization_window=WINDOW)
QUEUE: dict[str, Any] = {
    "type": "External",
    "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}},
}
LOAD: dict[str, Any] = {
    "type": "Object",
    "object": {
        "metric": {"name": "load"},
        "describedObject": {"kind": "Service", "name": "web"},
        "target": {"type": "Value", "value": "100"},
    },
}


def target(*, prediction: bool = True, metrics: tuple[dict[str, Any], ...] = (QUEUE,), **extra: Any) -> TargetSpec:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"kind": "Deployment", "name": "worker"},
        "minReplicas": 1,
        "maxReplicas": 20,
        "metrics": list(metrics),
        # No scale-up limit in the way: each sync shows the proposal itself; scale-down: the settings' window.
        "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 100, "periodSeconds": 15}]}},
        **extra,
    }
    if prediction:
        spec["prediction"] = {"podStartupSeconds": 60}
    return parse_target_spec(spec, require_queries=False)


def usable(value: float) -> Forecast:
    return Forecast(value, "seasonalNaive", 4.0, True, "", f"seasonalNaive forecast {value:g}")


def seen(replicas: int, reading: MetricReading, forecasts: Mapping[str, Forecast] | None) -> SyncInputs:
    pods = [pod(f"p{i}", ready=ConditionStatus.TRUE) for i in range(replicas)]
    return SyncInputs(Observation(ScaleInfo(replicas, replicas, "app=w"), pods, [reading]), forecasts=forecasts)


def queue(value: float) -> ExternalReading:
    return ExternalReading((int(value * 1000),), 0.0)


def one(
    spec: TargetSpec, replicas: int, reading: MetricReading, forecasts: Mapping[str, Forecast] | None
) -> SyncOutcome:
    return sync(spec, seen(replicas, reading, forecasts), SyncState(), SETTINGS, 1000.0)


def predicting(outcome: SyncOutcome) -> tuple[str, str] | None:
    found = next((c for c in outcome.decision.conditions if c.type == PREDICTING), None)
    return None if found is None else (found.status, found.reason)


def test_a_forecast_above_the_metrics_raises_the_proposal() -> None:
    outcome = one(target(), 2, queue(20), {"queue": usable(80)})  # the queue asks for 2, its forecast for 8
    decision = outcome.decision
    assert (decision.desired_replicas, decision.replicas, decision.scale) == (8, 8, True)
    assert decision.rescale_reason == "external metric queue(<nil>) forecast above target"
    assert predicting(outcome) == ("True", "ForecastAboveReactive")
    assert decision.forecast is not None and decision.forecast.raised
    assert (decision.forecast.reactive, decision.forecast.replicas) == (2, 8)
    lines = outcome.explanation()
    assert (
        "Forecast of external metric queue: 80 (seasonalNaive, error 4.0% over the last season), asking for 8 replicas."
        in lines
    )
    assert "The forecast decided: the proposal is raised from 2 to 8 (a forecast only ever raises it)." in lines


def test_a_forecast_below_the_metrics_changes_nothing() -> None:
    with_forecast = one(target(), 2, queue(60), {"queue": usable(10)})
    without = one(target(prediction=False), 2, queue(60), None)
    assert with_forecast.decision.replicas == without.decision.replicas == 6
    assert with_forecast.decision.rescale_reason == without.decision.rescale_reason
    assert predicting(with_forecast) == ("True", "ReactiveAtOrAboveForecast")
    assert "The metrics decided: their 6 is at or above the forecast's 1." in with_forecast.explanation()


def test_the_forecast_s_replicas_follow_the_metric_s_own_rule_for_a_value_target() -> None:
    # Value 100 per the whole workload: ceil(forecast / value × ready pods), the tolerance as for the reading.
    spec = target(metrics=(LOAD,))
    pods = [pod(f"p{i}", ready=ConditionStatus.TRUE) for i in range(4)]
    inputs = SyncInputs(
        Observation(ScaleInfo(4, 4, "app=w"), pods, [ObjectReading(100_000, 0.0)]), forecasts={"load": usable(250)}
    )
    decision = sync(spec, inputs, SyncState(), SETTINGS, 1000.0).decision
    assert decision.forecast is not None and decision.forecast.replicas == 10  # ceil(2.5 × 4)
    assert decision.replicas == 10
    inputs = SyncInputs(
        Observation(ScaleInfo(4, 4, "app=w"), pods, [ObjectReading(100_000, 0.0)]), forecasts={"load": usable(105)}
    )
    decision = sync(spec, inputs, SyncState(), SETTINGS, 1000.0).decision
    assert decision.forecast is not None and decision.forecast.replicas == 4  # within the tolerance: as it is
    assert decision.replicas == 4


@pytest.mark.parametrize(
    ("forecast", "reason"),
    [
        (Forecast(None, "auto", None, False, "ShortHistory", "3600s of history, 172800s needed"), "ShortHistory"),
        (Forecast(90.0, "seasonalNaive", 61.0, False, "HighError", "error 61.0%"), "HighError"),
        (Forecast(None, "auto", None, False, "MetricFailed", "range query failed"), "MetricFailed"),
        (None, "NoForecast"),
    ],
)
def test_an_unusable_forecast_is_ignored_with_its_reason(forecast: Forecast | None, reason: str) -> None:
    forecasts = {"queue": forecast} if forecast is not None else {}
    outcome = one(target(), 2, queue(20), forecasts)
    assert outcome.decision.replicas == 2 and not outcome.decision.scale
    assert predicting(outcome) == ("False", reason)
    assert outcome.decision.forecast is not None and outcome.decision.forecast.replicas is None
    assert any(
        line.startswith("Forecast of external metric queue") and "not used" in line for line in outcome.explanation()
    )


def test_the_condition_message_does_not_change_with_the_forecast_s_numbers() -> None:
    first = one(target(), 2, queue(20), {"queue": Forecast(90.0, "seasonalNaive", 61.0, False, "HighError", "61%")})
    second = one(target(), 2, queue(20), {"queue": Forecast(95.0, "seasonalNaive", 70.0, False, "HighError", "70%")})
    assert (
        [c.message for c in first.decision.conditions if c.type == PREDICTING]
        == [c.message for c in second.decision.conditions if c.type == PREDICTING]
        == ["not used: its error over the last season is above maxErrorPercent (25%)"]
    )


def test_a_forecast_does_not_stand_in_for_a_failed_metric() -> None:
    second = {
        "type": "External",
        "external": {"metric": {"name": "jobs"}, "target": {"type": "AverageValue", "averageValue": "5"}},
    }
    spec = target(metrics=(QUEUE, second))
    pods = [pod(f"p{i}", ready=ConditionStatus.TRUE) for i in range(2)]
    inputs = SyncInputs(
        Observation(ScaleInfo(2, 2, "app=w"), pods, [MetricFailure("down"), queue(30)]),
        forecasts={"queue": usable(200), "jobs": usable(10)},
    )
    outcome = sync(spec, inputs, SyncState(), SETTINGS, 1000.0)
    forecast = outcome.decision.forecast
    assert forecast is not None
    assert [(m.metric, m.reason, m.replicas) for m in forecast.metrics] == [
        ("queue", "MetricFailed", None),
        ("jobs", "", 2),
    ]
    assert outcome.decision.replicas == 6  # jobs' own 30 / 5: the failed queue's forecast of 20 replicas is not used


def test_no_proposal_no_forecast() -> None:
    outcome = one(target(), 2, MetricFailure("Prometheus is unreachable"), {"queue": usable(200)})
    assert outcome.decision.replicas == 2 and outcome.decision.forecast is None
    assert predicting(outcome) == ("False", "NoProposal")


def test_the_condition_goes_with_the_prediction() -> None:
    outcome = one(target(), 2, queue(20), {"queue": usable(80)})
    assert predicting(outcome) is not None
    later = sync(target(prediction=False), seen(8, queue(80), None), outcome.state, SETTINGS, 1015.0)
    assert predicting(later) is None


def test_a_forecast_never_causes_a_scale_down() -> None:
    """For every current count, reading and forecast: the count with the forecast is at least the count
    without it, from the same state, and a sync with a forecast scales down only where the one without does."""
    spec, plain = target(), target(prediction=False)
    for current, value, predicted in itertools.product((1, 3, 8, 15), (0, 15, 40, 120, 400), (0, 25, 90, 300)):
        with_forecast = one(spec, current, queue(value), {"queue": usable(predicted)}).decision
        without = one(plain, current, queue(value), None).decision
        assert with_forecast.replicas >= without.replicas, (current, value, predicted)
        if with_forecast.replicas < current:
            assert without.replicas <= with_forecast.replicas, (current, value, predicted)


def test_a_forecast_falling_back_lets_the_scale_down_proceed_after_the_window() -> None:
    spec = target()
    state = SyncState()
    steps: list[tuple[float, int, float, float]] = [  # time, current, queue, forecast
        (0.0, 2, 20, 80),  # the forecast raises 2 → 8
        (15.0, 8, 20, 80),  # still foreseen: 8 recorded at 15
        (30.0, 8, 20, 10),  # the forecast falls back: the metrics' 2, held by the window at 8
        (15.0 + WINDOW - 1, 8, 20, 10),  # still within the window of the last raised recommendation
        (15.0 + WINDOW + 1, 8, 20, 10),  # past it: down to the metrics' 2
    ]
    replicas = []
    for at, current, value, predicted in steps:
        outcome = sync(spec, seen(current, queue(value), {"queue": usable(predicted)}), state, SETTINGS, at)
        replicas.append(outcome.decision.replicas)
        state = outcome.state
    assert replicas == [8, 8, 8, 8, 2]
    # The last forecast, usable but below the metrics: the metrics decided.
    assert predicting(outcome) == ("True", "ReactiveAtOrAboveForecast")


def test_the_records_are_written_the_one_way() -> None:
    for record in (Forecast, MetricForecast, ForecastOutcome, PredictionSpec):
        assert record_problems(record) == [], record
