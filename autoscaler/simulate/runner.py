"""Replay a scenario through the engine, step by step, carrying state as the service would."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from autoscaler.core.decision import TargetState
from autoscaler.core.hvpa.decision import VpaObservation
from autoscaler.core.pause_spec import pause_annotation_items
from autoscaler.core.prediction.forecast import Forecast
from autoscaler.core.sync import SyncInputs, SyncState, sync
from autoscaler.core.sync_step import StepResult
from autoscaler.simulate.hvpa_steps import carried_requests, closed_loop_pods, demand_vpa
from autoscaler.simulate.scenario import Scenario, observation_for


def run_scenario(scenario: Scenario) -> list[StepResult]:
    """Every step's decision (:func:`autoscaler.core.sync.sync`). A step without ``replicas`` starts
    from the previous step's result; every scale (and VPA pin) the engine asks for is assumed to succeed.

    With ``spec.hvpa``, HVPA decides the replicas (see autoscaler.core.hvpa.hpa_link); a step's
    ``lastScaleTime`` overrides when HVPA last applied a scaling, and its ``vpa`` and ``clock`` are
    what HVPA reads.
    """
    state = SyncState(
        TargetState(
            history=scenario.history,
            conditions=scenario.conditions,
            desired_replicas=scenario.desired_replicas,
            last_scale_time=scenario.last_scale_time,
            metric_health=scenario.metric_health,
            last_active_time=scenario.last_active_time,
            pause=scenario.pause,
        )
    )
    replicas = 0
    results: list[StepResult] = []
    created = scenario.steps[0].at if scenario.steps else 0.0  # the target exists from the first step on
    annotations: tuple[tuple[str, str], ...] = ()  # the pause annotations in effect (a step's replace them)
    forecasts: Mapping[str, Forecast] | None = None  # spec.prediction: the forecasts in effect (a step's replace them)
    for step in scenario.steps:
        if step.replicas is not None:
            replicas = step.replicas
        if step.annotations is not None:
            annotations = pause_annotation_items(step.annotations)
        if step.forecasts is not None:
            forecasts = step.forecasts
        observation = observation_for(scenario, step, replicas)
        inputs = SyncInputs(observation=observation, created=created, annotations=annotations, forecasts=forecasts)
        hvpa = step.hvpa
        if hvpa is not None:
            if hvpa.last_scale_time is not None:
                state = replace(state, hvpa=replace(state.hvpa, last_applied=hvpa.last_scale_time))
            vpa = hvpa.vpa
            if hvpa.demand is not None:  # a closed loop: the pods carry what the engine last applied
                if not step.pods and results:
                    last = results[-1]
                    pods = closed_loop_pods(carried_requests(last.observation.pods, last.hvpa), replicas)
                    observation = replace(observation, pods=pods)
                vpa = demand_vpa(hvpa.demand, replicas)
            inputs = SyncInputs(
                observation=observation,
                vpa=VpaObservation(vpa) if vpa is not None else None,
                clock=hvpa.clock,
                created=created,
                annotations=annotations,
                forecasts=forecasts,
            )
        outcome = sync(scenario.spec, inputs, state, scenario.settings, step.at)
        state = outcome.state
        replicas = outcome.decision.replicas
        results.append(StepResult(step.at, observation, outcome))
    return results
