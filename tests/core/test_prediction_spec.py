"""``spec.prediction``: read with its defaults when valid, each invalid field reported with its path and rule."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.core.prediction.spec import PredictionModel, PredictionSpec
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.values.fields import SpecError

QUEUE = {
    "type": "External",
    "external": {
        "metric": {"name": "queue"},
        "target": {"type": "AverageValue", "averageValue": "10"},
        "query": "sum(queue_depth)",
    },
}
CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}
RPS = {
    "type": "Pods",
    "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "5"}, "query": "rps"},
}


def spec(prediction: object, metrics: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
        "maxReplicas": 10,
        "metrics": metrics if metrics is not None else [QUEUE],
        "prediction": prediction,
        **extra,
    }


def errors(data: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as raised:
        parse_target_spec(data)
    return [str(e) for e in raised.value.errors]


def test_defaults() -> None:
    parsed = parse_target_spec(spec({"podStartupSeconds": 90})).prediction
    assert parsed == PredictionSpec(
        model=PredictionModel.AUTO,
        season_seconds=86400,
        pod_startup_seconds=90,
        horizon_seconds=None,
        step_seconds=300,
        history_seconds=3 * 86400,
        min_history_seconds=2 * 86400,
        max_error_percent=25.0,
        damped_trend=False,
        metrics=(),
    )
    assert parsed.horizon(15) == 105.0  # start-up plus the sync period
    assert parse_target_spec(spec(None)).prediction is None


def test_every_field() -> None:
    parsed = parse_target_spec(
        spec(
            {
                "model": "seasonalNaive",
                "seasonSeconds": 604800,
                "horizonSeconds": 600,
                "stepSeconds": 600,
                "historySeconds": 3 * 604800,
                "minHistorySeconds": 2 * 604800,
                "maxErrorPercent": 12.5,
                "dampedTrend": True,
                "metrics": ["queue"],
            }
        )
    ).prediction
    assert parsed is not None
    assert (parsed.model, parsed.season_seconds, parsed.horizon(15), parsed.step_seconds) == (
        PredictionModel.SEASONAL_NAIVE,
        604800,
        600.0,
        600,
    )
    assert (parsed.history_seconds, parsed.min_history_seconds, parsed.max_error_percent) == (
        3 * 604800,
        2 * 604800,
        12.5,
    )
    assert parsed.damped_trend and parsed.metrics == ("queue",)


def test_the_history_default_is_the_model_s_need() -> None:
    naive = parse_target_spec(spec({"podStartupSeconds": 60, "model": "seasonalNaive"})).prediction
    holt = parse_target_spec(spec({"podStartupSeconds": 60, "model": "holtWinters"})).prediction
    assert naive is not None and holt is not None
    assert (naive.history_seconds, holt.history_seconds) == (2 * 86400, 3 * 86400)


def test_only_object_and_external_metrics_are_forecast() -> None:
    parsed = parse_target_spec(spec({"podStartupSeconds": 60}, [CPU, RPS, QUEUE]))
    assert parsed.prediction is not None
    assert [m.name for m in parsed.metrics if parsed.prediction.predicts(m)] == ["queue"]


@pytest.mark.parametrize(
    ("prediction", "metrics", "expected"),
    [
        ({}, None, ["spec.prediction: must set podStartupSeconds, horizonSeconds or both"]),
        ({"podStartupSeconds": 60, "model": "prophet"}, None, ['spec.prediction.model: Unsupported value: "prophet"']),
        ({"podStartupSeconds": 60, "stepSeconds": 7}, None, ["spec.prediction.stepSeconds: must be between 10 and"]),
        (
            {"podStartupSeconds": 60, "stepSeconds": 700},
            None,
            ["spec.prediction.seasonSeconds: must be a whole number of stepSeconds (700)"],
        ),
        (
            {"horizonSeconds": 86400},
            None,
            ["spec.prediction.horizonSeconds: must be less than seasonSeconds (86400)"],
        ),
        (
            {"podStartupSeconds": 60, "historySeconds": 86400},
            None,
            ["spec.prediction.historySeconds: must be at least two seasons (172800)"],
        ),
        (
            {"podStartupSeconds": 60, "minHistorySeconds": 86400},
            None,
            ["spec.prediction.minHistorySeconds: must be at least two seasons (172800)"],
        ),
        (
            {"podStartupSeconds": 60, "minHistorySeconds": 4 * 86400},
            None,
            ["spec.prediction.minHistorySeconds: must be at most historySeconds (259200)"],
        ),
        (
            {"podStartupSeconds": 60, "seasonSeconds": 604800, "stepSeconds": 60},
            None,
            ["spec.prediction.stepSeconds: the history is read in one range query of at most 11000 points"],
        ),
        ({"podStartupSeconds": 60, "maxErrorPercent": -1}, None, ["spec.prediction.maxErrorPercent: must be"]),
        ({"podStartupSeconds": 60, "metrics": ["nope"]}, None, ['spec.prediction.metrics[0]: Not found: "nope"']),
        (
            {"podStartupSeconds": 60, "metrics": ["rps"]},
            [RPS, QUEUE],
            ['spec.prediction.metrics[0]: Invalid value: "rps": a per-pod metric'],
        ),
        (
            {"podStartupSeconds": 60, "metrics": ["queue", "queue"]},
            None,
            ["spec.prediction.metrics: must not name a metric twice"],
        ),
        ({"podStartupSeconds": 60}, [CPU], ["spec.prediction: needs an Object or External metric to forecast"]),
        ({"podStartupSeconds": 60, "seasons": 2}, None, ["spec.prediction.seasons: unknown field"]),
    ],
)
def test_invalid_fields_are_reported_with_their_path(
    prediction: dict[str, Any], metrics: list[dict[str, Any]] | None, expected: list[str]
) -> None:
    found = errors(spec(prediction, metrics))
    assert len(found) == len(expected), found
    for problem, start in zip(found, expected, strict=True):
        assert problem.startswith(start), found


def test_with_a_composite_the_external_metrics_are_not_forecast() -> None:
    composite = {"formula": "queue / 2", "target": {"type": "AverageValue", "averageValue": "5"}}
    found = errors(spec({"podStartupSeconds": 60, "metrics": ["queue"]}, composite=composite))
    assert found == [
        'spec.prediction.metrics[0]: Invalid value: "queue": with spec.composite the composite stands for '
        "the External metrics"
    ]
    found = errors(spec({"podStartupSeconds": 60}, composite=composite))
    assert found[0].startswith("spec.prediction: needs an Object or External metric to forecast")
