"""The predictive scale-up scenario (config/scenarios/prediction-morning-ramp.yaml): a step's ``forecasts`` as
the floor under the metrics' proposal; its exact replica sequence, the Predicting condition at each step, and
what its explanation says; a step's forecasts read with their paths."""

from pathlib import Path

import pytest
import yaml

from autoscaler.core.conditions import find_condition
from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario
from autoscaler.values.fields import SpecError

SCENARIO = Path(__file__).resolve().parents[2] / "config" / "scenarios" / "prediction-morning-ramp.yaml"


def test_the_ramp_is_met_ahead_and_the_forecast_never_scales_down() -> None:
    results = run_scenario(parse_scenario(yaml.safe_load(SCENARIO.read_text())))
    assert [r.decision.replicas for r in results] == [2, 4, 8, 8, 8, 12, 12, 4]
    predicting = [find_condition(r.decision.conditions, "Predicting") for r in results]
    assert [None if p is None else (p.status, p.reason) for p in predicting] == [
        ("True", "ReactiveAtOrAboveForecast"),
        ("True", "ForecastAboveReactive"),
        ("True", "ForecastAboveReactive"),
        ("True", "ForecastAboveReactive"),
        ("True", "ReactiveAtOrAboveForecast"),
        ("True", "ReactiveAtOrAboveForecast"),
        ("False", "HighError"),
        ("False", "HighError"),
    ]
    raised = " ".join(results[2].outcome.explanation())
    assert "Forecast of external metric queue_depth: 80 (scenario), asking for 8 replicas." in raised
    assert "The forecast decided: the proposal is raised from 3 to 8" in raised
    ignored = " ".join(results[6].outcome.explanation())
    assert (
        "Forecast of external metric queue_depth 30 (scenario, error 40.0% over the last season) not used: HighError"
        in ignored
    )


def test_forecasts_are_read_with_their_paths() -> None:
    document = yaml.safe_load(SCENARIO.read_text())
    document["steps"][1]["forecasts"] = {"queue_depth": "lots", "jobs": {"reason": 3, "colour": "red"}}
    document["steps"][2]["forecasts"] = {"queue_depth": {}}
    with pytest.raises(SpecError) as raised:
        parse_scenario(document)
    assert [(e.path, e.message.split(":")[0]) for e in raised.value.errors] == [
        ("steps[1].forecasts.queue_depth", "invalid quantity 'lots'"),
        ("steps[1].forecasts.jobs.reason", "must be a string, not integer"),
        ("steps[1].forecasts.jobs.colour", "unknown field"),
        ("steps[2].forecasts.queue_depth", "a usable forecast needs a value (or a reason it is not usable)"),
    ]
