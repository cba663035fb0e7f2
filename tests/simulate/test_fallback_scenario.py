"""The fallback's scenario (config/scenarios/fallback-queue-outage.yaml) with its exact replica sequence,
conditions and Events; and the fallback of a composite metric whose input fails."""

from pathlib import Path
from typing import Any

import yaml

from autoscaler.simulate.output import step_json
from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "config" / "scenarios"


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((SCENARIOS / name).read_text())
    return document


def test_a_queue_outage_falls_back_after_the_threshold_and_ends_at_the_first_answer() -> None:
    steps = [step_json(r) for r in run_scenario(parse_scenario(load("fallback-queue-outage.yaml")))]
    assert [s["replicas"] for s in steps] == [2, 2, 2, 2, 4, 6, 6, 3]
    fallback = [next((c["status"], c["reason"]) for c in s["conditions"] if c["type"] == "Fallback") for s in steps]
    assert (
        fallback
        == [("False", "NoFallbackFound")] * 4 + [("True", "FallbackExists")] * 2 + [("False", "NoFallbackFound")] * 2
    )
    events = [[e["reason"] for e in s["events"] if e["reason"].startswith("Fallback")] for s in steps]
    assert events == [[], [], [], [], ["FallbackActivated"], [], ["FallbackDeactivated"], []]
    assert "Fallback: external/queue_depth is failing since 45s ago" in steps[4]["explanation"]


def test_a_composite_metric_falls_back_when_an_input_fails() -> None:
    scenario = load("composite-two-queues.yaml")
    scenario["spec"]["fallback"] = {"replicas": 12, "failureThreshold": 0}
    results = run_scenario(parse_scenario(scenario))
    # 30 s: queue_a fails, so the composite does: it stands for 12 (8 → 12) instead of holding 8.
    assert [r.decision.replicas for r in results][:3] == [4, 8, 12]
    health = results[2].outcome.state.target.metric_health
    assert [(h.key, h.failures, h.fallback_replicas) for h in health] == [("external/composite-metric", 1, 12)]
    assert results[3].outcome.state.target.metric_health[0].failures == 0
