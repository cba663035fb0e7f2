"""Replay a scenario through the engine, step by step, carrying state as the service would."""

from __future__ import annotations

from dataclasses import dataclass, replace

from autoscaler.core.decision import Decision, TargetState, apply_scale_result, decide
from autoscaler.core.hvpa.decision import HvpaDecision, HvpaObservation, HvpaState, VpaObservation, decide_hvpa
from autoscaler.core.hvpa.hpa_link import adopt_hvpa, hpa_off_decision
from autoscaler.core.hvpa.spec import Source
from autoscaler.core.observation import Observation
from autoscaler.simulate.scenario import Scenario, ScenarioStep, observation_for


@dataclass(frozen=True, slots=True)
class StepResult:
    step: ScenarioStep
    observation: Observation
    decision: Decision
    hvpa: HvpaDecision | None = None


def run_scenario(scenario: Scenario) -> list[StepResult]:
    """Every step's decision. A step without ``replicas`` starts from the previous step's result;
    every scale (and VPA pin) the engine asks for is assumed to succeed.

    With ``spec.hvpa``, HVPA decides the replicas: the HPA engine's decision is the HPA source's
    proposal, and the count HVPA sets is the step's result (see autoscaler.core.hvpa.hpa_link).
    HVPA's own state (when it last applied a scaling) is carried from step to step.
    """
    spec = scenario.spec
    state = TargetState(history=scenario.history, conditions=scenario.conditions)
    hvpa_state = HvpaState()
    replicas = 0
    results: list[StepResult] = []
    for step in scenario.steps:
        if step.replicas is not None:
            replicas = step.replicas
        observation = observation_for(scenario, step, replicas)
        hvpa: HvpaDecision | None = None
        if spec.hvpa is None:
            decision = decide(spec, observation, state, scenario.settings, step.at)
        else:
            if Source.HPA in spec.hvpa.sources:
                decision = decide(spec, observation, state, scenario.settings, step.at)
            else:
                decision = hpa_off_decision(spec, replicas, state, step.at)
            inputs = step.hvpa
            if inputs is not None and inputs.last_scale_time is not None:
                hvpa_state = replace(hvpa_state, last_applied=inputs.last_scale_time)
            vpa = VpaObservation(inputs.vpa) if inputs is not None and inputs.vpa is not None else None
            hvpa_observation = HvpaObservation(replicas, observation.pods, vpa,
                                               clock=inputs.clock if inputs is not None else None)
            hvpa = decide_hvpa(spec, hvpa_observation, decision, hvpa_state, step.at)
            decision = adopt_hvpa(decision, hvpa)
            hvpa_state = hvpa.state
        if decision.scale:
            decision = apply_scale_result(decision, spec, True, step.at)
        state = TargetState(decision.history, decision.conditions, decision.status_desired_replicas,
                            decision.last_scale_time)
        replicas = decision.replicas
        results.append(StepResult(step, observation, decision, hvpa))
    return results
