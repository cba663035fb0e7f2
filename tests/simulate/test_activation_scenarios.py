"""config/scenarios/activation-*.yaml: KEDA's activation phase over time, with its exact replica sequences."""

from pathlib import Path

import yaml

from autoscaler.core.conditions import find_condition
from autoscaler.core.sync_step import StepResult
from autoscaler.simulate.recording import state_document
from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "config" / "scenarios"


def results_of(name: str) -> list[StepResult]:
    return run_scenario(parse_scenario(yaml.safe_load((SCENARIOS / name).read_text())))


def test_the_queue_worker_keda_left_at_zero_is_woken_and_idles_after_the_cooldown() -> None:
    results = results_of("activation-queue-worker.yaml")
    assert [r.decision.replicas for r in results] == [0, 1, 4, 8, 8, 8, 8, 0, 0, 1]
    reasons = [[e.reason for e in r.decision.events if e.reason in ("Activated", "Deactivated")] for r in results]
    assert reasons == [[], ["Activated"], [], [], [], [], [], ["Deactivated"], [], ["Activated"]]
    active = [find_condition(r.decision.conditions, "Active") for r in results]
    assert [(a.status, a.reason) for a in active if a is not None] == [
        ("False", "ScalerNotActive"),
        ("True", "ScalerActive"),
        ("True", "ScalerActive"),
        ("True", "ScalerActive"),
        ("True", "ScalerActive"),
        ("False", "ScalerCooldown"),
        ("False", "ScalerCooldown"),
        ("False", "ScalerNotActive"),
        ("False", "ScalerNotActive"),
        ("True", "ScalerActive"),
    ]


def test_idle_replicas_the_initial_cooldown_and_a_failing_metric() -> None:
    results = results_of("activation-idle-replicas.yaml")
    assert [r.decision.replicas for r in results] == [5, 5, 1, 1, 1, 3, 5, 5, 5, 1]
    active = [find_condition(r.decision.conditions, "Active") for r in results]
    assert [(a.status, a.reason) for a in active if a is not None] == [
        ("False", "ScalerCooldown"),
        ("False", "ScalerCooldown"),
        ("False", "ScalerNotActive"),
        ("Unknown", "TriggerError"),
        ("False", "ScalerNotActive"),
        ("True", "ScalerActive"),
        ("True", "ScalerActive"),
        ("Unknown", "TriggerError"),
        ("Unknown", "TriggerError"),
        ("False", "ScalerNotActive"),
    ]


def test_a_scenario_starts_from_status_last_active_time_and_a_recording_carries_it() -> None:
    scenario = parse_scenario(
        {
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "worker"},
                "minReplicas": 0,
                "maxReplicas": 10,
                "metrics": [
                    {
                        "type": "External",
                        "external": {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "5"}},
                    }
                ],
                "activation": {"cooldownSeconds": 100},
            },
            "status": {"lastActiveTime": -90},
            "steps": [{"at": 0, "replicas": 2, "external": {"q": "0"}}, {"at": 10.5, "external": {"q": "0"}}],
        }
    )
    results = run_scenario(scenario)
    # Last active at -90: cooling down until 10 (the HPA algorithm's 2 held by its window), idle after it.
    assert [r.decision.replicas for r in results] == [2, 0]
    assert state_document(results[0].outcome.state.target)["lastActiveTime"] == -90
