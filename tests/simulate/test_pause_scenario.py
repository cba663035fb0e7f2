"""The pause's scenario (config/scenarios/pause-maintenance.yaml): a pause at a count set and lifted by a step's
``annotations`` (as ``kubectl annotate`` would), then a scale-in pause; its exact replica sequence, and what
its explanation, conditions and Events say."""

from pathlib import Path

import pytest
import yaml

from autoscaler.core.conditions import find_condition
from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario
from autoscaler.values.fields import SpecError

SCENARIO = Path(__file__).resolve().parents[2] / "config" / "scenarios" / "pause-maintenance.yaml"


def test_paused_at_a_count_resumed_then_scale_in_held() -> None:
    results = run_scenario(parse_scenario(yaml.safe_load(SCENARIO.read_text())))
    assert [r.decision.replicas for r in results] == [4, 6, 2, 2, 6, 6, 12, 1]
    assert [r.decision.desired_replicas for r in results] == [4, 6, 6, 8, 8, 1, 12, 1]  # decided all along
    held = results[3].outcome.explanation()
    assert "Would scale 2 → 6; held: paused at 2 replicas since 1970-01-01T00:01:00Z" in " ".join(held)
    paused = [find_condition(r.decision.conditions, "Paused") for r in results]
    assert [None if p is None else (p.status, p.reason) for p in paused] == [
        None,
        None,
        ("True", "ScalingTargetPaused"),
        ("True", "ScalingTargetPaused"),
        ("False", "ScalingTargetResumed"),
        ("True", "PausedScaleIn"),
        ("True", "PausedScaleIn"),
        ("False", "ScalingTargetResumed"),
    ]
    events = [[e.reason for e in r.decision.events] for r in results]
    assert events[2] == ["ScalingTargetPaused", "SuccessfulRescale"] and events[3] == []
    assert "ScalingTargetResumed" in events[4] and events[5] == ["ScalingTargetPaused"]


def test_annotations_must_be_strings() -> None:
    document = yaml.safe_load(SCENARIO.read_text())
    document["steps"][2]["annotations"] = {"autoscaler.dev/paused-replicas": 2}
    with pytest.raises(SpecError) as raised:
        parse_scenario(document)
    assert [(e.path, e.message) for e in raised.value.errors] == [
        ("steps[2].annotations.autoscaler.dev/paused-replicas", "must be a string, not integer")
    ]
