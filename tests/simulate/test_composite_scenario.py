"""The composite metric's scenario (config/scenarios/composite-two-queues.yaml), with its exact replica
sequence and what its explanation says."""

from pathlib import Path

import yaml

from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "config" / "scenarios" / "composite-two-queues.yaml"


def test_two_queues_averaged_scale_as_one_metric_and_a_failed_input_never_scales_down() -> None:
    results = run_scenario(parse_scenario(yaml.safe_load(SCENARIO.read_text())))
    assert [r.decision.replicas for r in results] == [4, 8, 8, 8, 1]
    assert [[m.spec.name for m in r.decision.metrics] for r in results] == [["composite-metric"]] * 5
    first = results[0].outcome.explanation()
    assert "Composite metric composite-metric = (queue_a + queue_b) / 2 with queue_a = 100, queue_b = 60 → 80." in first
    failed = results[2].decision
    assert failed.error is not None and "input queue_a failed" in failed.error
    assert not failed.scale
