"""The fallback's scenario (config/scenarios/fallback-queue-outage.yaml) with its exact replica sequence,
conditions and Events; and the fallback of a composite metric whose input fails."""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.core.observation import ExternalReading, MetricFailure, MetricReading, Observation, ScaleInfo
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.core.sync import ALL_WRITTEN, SyncInputs, SyncState, plan_sync, settle
from autoscaler.simulate.output import step_json
from autoscaler.simulate.recording import scenario_from_recording, sync_line
from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario
from autoscaler.values.fields import SpecError

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


QUEUE = {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}}
QUEUE_SPEC: dict[str, Any] = {
    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
    "maxReplicas": 20,
    "metrics": [{"type": "External", "external": QUEUE}],
    "fallback": {"replicas": 6, "failureThreshold": 3},
}


def recorded_outage() -> list[dict[str, Any]]:
    """The lines a service would have recorded for QUEUE_SPEC: a sync every 15 s, the queue answering, then
    failing for five syncs, then answering."""
    spec = parse_target_spec(QUEUE_SPEC, require_queries=False)
    state, replicas, lines = SyncState(), 2, []
    readings: list[MetricReading] = [ExternalReading((20_000,), 0.0)] + [MetricFailure("no answer")] * 5
    for index, reading in enumerate([*readings, ExternalReading((30_000,), 0.0)]):
        now = 1_764_000_000.5 + 15 * index
        observation = Observation(ScaleInfo(replicas, replicas, "app=worker"), [], [reading])
        plan = plan_sync(spec, SyncInputs(observation), state, ControllerSettings(), now)
        outcome = settle(plan, ALL_WRITTEN)
        line = sync_line("shop/worker", QUEUE_SPEC, ControllerSettings(), plan, observation, ALL_WRITTEN, outcome)
        lines.append(json.loads(json.dumps(line)))
        state, replicas = outcome.state, outcome.decision.replicas
    return lines


def test_a_recording_that_starts_mid_outage_replays_the_fallback_where_the_service_fell_back() -> None:
    lines = recorded_outage()[2:]  # recorded from the 2nd failure on: the status carried 1 failure
    assert lines[0]["state"]["metricHealth"] == {
        "external/queue": {"numberOfFailures": 1, "status": "Failing", "since": 1_764_000_015.5}
    }
    scenario = parse_scenario(yaml.safe_load(yaml.safe_dump(scenario_from_recording(lines, "shop/worker"))))
    replayed = [r.decision.replicas for r in run_scenario(scenario)]
    assert replayed == [line["decision"]["replicas"] for line in lines] == [2, 2, 4, 6, 6]


def test_a_scenario_s_metric_health_is_checked_with_its_paths() -> None:
    document = load("fallback-queue-outage.yaml")
    document["status"] = {"metricHealth": {"external/queue_depth": {"numberOfFailures": -1, "status": "Sad"}, "x": 3}}
    with pytest.raises(SpecError) as raised:
        parse_scenario(document)
    assert [str(e) for e in raised.value.errors] == [
        "status.metricHealth.external/queue_depth.numberOfFailures: must be between 0 and 2147483647",
        'status.metricHealth.external/queue_depth.status: Unsupported value: "Sad": supported values: "Happy", '
        '"Failing"',
        "status.metricHealth.x: must be an object, not integer",
    ]
    document["status"] = {"metricHealth": {"external/queue_depth": {"numberOfFailures": 3, "since": -45}}}
    document["steps"][0] = {"at": 0, "replicas": 2, "failures": ["queue_depth"]}
    first = run_scenario(parse_scenario(document))[0]
    assert first.decision.replicas == 4  # the 4th failure in a row: it falls back (6, the legacy limit allows 4)
    assert "is failing since 45s ago" in "\n".join(first.outcome.explanation())
