"""Replay a scenario through the engine, step by step, carrying state as the service would."""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.decision import Decision, TargetState, apply_scale_result, decide
from autoscaler.core.observation import Observation
from autoscaler.simulate.scenario import Scenario, ScenarioStep, observation_for


@dataclass(frozen=True, slots=True)
class StepResult:
    step: ScenarioStep
    observation: Observation
    decision: Decision


def run_scenario(scenario: Scenario) -> list[StepResult]:
    """Every step's decision. A step without ``replicas`` starts from the previous step's result;
    every scale the engine asks for is assumed to succeed."""
    state = TargetState(history=scenario.history, conditions=scenario.conditions)
    replicas = 0
    results: list[StepResult] = []
    for step in scenario.steps:
        if step.replicas is not None:
            replicas = step.replicas
        observation = observation_for(scenario, step, replicas)
        decision = decide(scenario.spec, observation, state, scenario.settings, step.at)
        if decision.scale:
            decision = apply_scale_result(decision, scenario.spec, True, step.at)
        state = TargetState(decision.history, decision.conditions, decision.status_desired_replicas,
                            decision.last_scale_time)
        replicas = decision.replicas
        results.append(StepResult(step, observation, decision))
    return results
