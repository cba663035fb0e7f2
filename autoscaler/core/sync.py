"""One sync of one target, whole: what was observed and the state carried in → what to write, and,
once the writes are done, the state the next sync starts from.

This is the only place the steps of a sync are put together; the service, ``autoscaler simulate`` and
``autoscaler backtest`` all run a sync through it and differ only in where the inputs come from and
whether the writes are real:

1. :func:`plan_sync`: a scale write a status recorded before sending it, its outcome never recorded (the
   writer stopped mid-write), settled against the count observed
   (:func:`~autoscaler.core.rescale.resolve_scale_intent`); then the HPA engine's decision
   (:func:`~autoscaler.core.decision.decide`, or
   :func:`~autoscaler.core.hvpa.hpa_link.hpa_off_decision` when HVPA leaves the HPA out; with
   ``spec.composite`` it sees the composite metric in place of its External inputs:
   :func:`~autoscaler.core.composite.apply_composite`), then, for a
   target with ``hvpa``, HVPA's decision and the replica count it sets
   (:func:`~autoscaler.core.hvpa.hpa_link.adopt_hvpa`). The plan says which writes to make: the scale
   (``scale_to``) and the VPA (``vpa_patch``).
2. The caller makes the writes (the service), or makes none and takes them as done (simulate, backtest).
3. :func:`settle`: the outcome of the writes recorded as upstream records it
   (:func:`~autoscaler.core.rescale.apply_scale_result`), HVPA's state moved on only when its writes
   went through, and the :class:`SyncState` the next sync starts from.

Pure: no I/O, no clock (``now`` is an argument). Same inputs, same outcome.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Final

from autoscaler.core import conditions as c
from autoscaler.core.activation import (
    activation_events,
    activity_readings,
    apply_activation,
    spec_for_decide,
    without_activation,
)
from autoscaler.core.composite import apply_composite
from autoscaler.core.conditions import set_condition
from autoscaler.core.decision import WARNING, Decision, Event, TargetState, decide
from autoscaler.core.explain import explain_lines
from autoscaler.core.fallback import fallback_readings, record_fallback
from autoscaler.core.hvpa.decision import HvpaDecision, HvpaObservation, HvpaState, VpaObservation, decide_hvpa
from autoscaler.core.hvpa.explain import explain_hvpa
from autoscaler.core.hvpa.hpa_link import adopt_hvpa, hpa_off_decision
from autoscaler.core.hvpa.spec import Source
from autoscaler.core.observation import ContainerInfo, Observation
from autoscaler.core.pause import pause_step, settle_pause
from autoscaler.core.prediction.condition import record_prediction
from autoscaler.core.prediction.forecast import Forecast
from autoscaler.core.rescale import apply_scale_result, resolve_scale_intent
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import TargetSpec


@dataclass(slots=True, init=False, unsafe_hash=True)
class SyncState:
    """Everything a target carries from one sync to the next: the HPA engine's state and HVPA's."""

    target: Final[TargetState]
    hvpa: Final[HvpaState]

    def __init__(self, target: TargetState | None = None, hvpa: HvpaState | None = None) -> None:
        self.target = TargetState() if target is None else target
        self.hvpa = HvpaState() if hvpa is None else hvpa


@dataclass(slots=True, init=False, unsafe_hash=True)
class SyncInputs:
    """What one sync observed. ``observation`` is what the HPA engine reads (its metric readings are
    "not read" failures when :func:`reads_metrics` is False); the rest is read by HVPA only: the VPA,
    the workload's pod template and the wall clock (Unix seconds, for maintenance windows). ``created``: when
    the target was created (its metadata.creationTimestamp; simulate: the scenario's start), which
    ``activation.initialCooldownSeconds`` counts from; None: unknown (no initial cooldown)."""

    observation: Final[Observation]
    vpa: Final[VpaObservation | None]
    template: Final[Sequence[ContainerInfo]]
    clock: Final[Fraction | float | None]
    created: Final[float | None]
    # The target's pause annotations (autoscaler.core.pause_spec.pause_annotation_items): annotations restart
    # nothing, so they come with each sync's inputs rather than with the spec.
    annotations: Final[tuple[tuple[str, str], ...]]
    # With spec.prediction: each forecast metric's forecast by name, as last made (the service's background
    # refresh: autoscaler.service.prediction); None or a metric missing: none made yet.
    forecasts: Final[Mapping[str, Forecast] | None]

    def __init__(
        self,
        observation: Observation,
        vpa: VpaObservation | None = None,
        template: Sequence[ContainerInfo] = (),
        clock: Fraction | float | None = None,
        created: float | None = None,
        annotations: tuple[tuple[str, str], ...] = (),
        forecasts: Mapping[str, Forecast] | None = None,
    ) -> None:
        self.observation = observation
        self.vpa = vpa
        self.template = template
        self.clock = clock
        self.created = created
        self.annotations = annotations
        self.forecasts = forecasts


def reads_metrics(spec: TargetSpec) -> bool:
    """Whether a sync of ``spec`` reads its metrics: always, unless ``hvpa.sources`` leaves the HPA out."""
    return spec.hvpa is None or Source.HPA in spec.hvpa.sources


@dataclass(slots=True, init=False, unsafe_hash=True)
class SyncPlan:
    """A sync decided, before its writes: what to write, and what :func:`settle` needs afterwards."""

    spec: Final[TargetSpec]
    now: Final[float]
    state: Final[SyncState]  # the state the sync started from
    decision: Final[Decision]  # the HPA engine's decision, carrying HVPA's count when there is HVPA
    hvpa: Final[HvpaDecision | None]

    def __init__(
        self, spec: TargetSpec, now: float, state: SyncState, decision: Decision, hvpa: HvpaDecision | None
    ) -> None:
        self.spec = spec
        self.now = now
        self.state = state
        self.decision = decision
        self.hvpa = hvpa

    @property
    def scale_to(self) -> int | None:
        """The replica count to write to the scale subresource, or None: no scale write."""
        return self.decision.replicas if self.decision.scale else None

    @property
    def vpa_patch(self) -> Mapping[str, Any] | None:
        """The merge patch that pins the VPA (written after the scale, and only if that went through)."""
        return self.hvpa.vpa_patch if self.hvpa is not None else None


@dataclass(slots=True, init=False, unsafe_hash=True)
class WriteResults:
    """How a plan's writes went.

    ``scale``: True written (or nothing to write), False failed (``scale_error`` says why, as the
    condition and the Event will), None not attempted (a dry run). ``vpa``: whether HVPA's writes went
    through, the VPA patch included when there was one; False leaves HVPA's state where it was, so
    the next sync decides again from it.
    """

    scale: Final[bool | None]
    scale_error: Final[str | None]
    vpa: Final[bool]

    def __init__(self, scale: bool | None = True, scale_error: str | None = None, vpa: bool = True) -> None:
        self.scale = scale
        self.scale_error = scale_error
        self.vpa = vpa


ALL_WRITTEN = WriteResults()  # simulate and backtest: every write succeeds
NOTHING_WRITTEN = WriteResults(scale=None, vpa=False)  # a dry run


@dataclass(slots=True, init=False, unsafe_hash=True)
class SyncOutcome:
    """A sync after its writes: the decisions as recorded, and the state the next sync starts from."""

    now: Final[float]
    decision: Final[Decision]
    hvpa: Final[HvpaDecision | None]
    state: Final[SyncState]

    def __init__(self, now: float, decision: Decision, hvpa: HvpaDecision | None, state: SyncState) -> None:
        self.now = now
        self.decision = decision
        self.hvpa = hvpa
        self.state = state

    def explanation(self) -> list[str]:
        """The decision in words, HVPA's after the HPA engine's."""
        lines = explain_lines(self.decision, self.now)
        if self.hvpa is not None:
            lines.extend(explain_hvpa(self.hvpa))
        return lines


def plan_sync(
    spec: TargetSpec, inputs: SyncInputs, state: SyncState, settings: ControllerSettings, now: float
) -> SyncPlan:
    """Decide one sync (step 1 in the module docstring)."""
    observation = inputs.observation
    landed: Event | None = None
    if state.target.scale_intent is not None:
        target, landed = resolve_scale_intent(state.target, spec, observation.scale.spec_replicas)
        state = SyncState(target, state.hvpa)
    # The composite metric: its External inputs → one reading. What decide sees (and the steps after it that
    # read metrics: the composite stands for its inputs) is decided_spec with decided's readings.
    decided_spec, decided, composite_notes = apply_composite(spec, observation)
    if reads_metrics(spec):
        # A failed reading past spec.fallback's threshold stands for the fallback count (autoscaler.core.fallback).
        fallback = (
            fallback_readings(decided_spec, decided, state.target.metric_health, now)
            if spec.fallback is not None
            else None
        )
        decide_reads = decided if fallback is None else fallback.observation
        decision = decide(spec_for_decide(decided_spec), decide_reads, state.target, settings, now, inputs.forecasts)
        if composite_notes:
            decision = replace(decision, notes=(*composite_notes, *decision.notes))
        if fallback is not None or state.target.metric_health:
            decision = record_fallback(decided_spec, decision, state.target.metric_health, fallback, now)
    else:
        decision = hpa_off_decision(spec, observation.scale.spec_replicas, state.target, now)
    decision = record_prediction(spec, decision, now)  # the Predicting condition (core/prediction/condition.py)
    if spec.activation is not None:  # idle <-> active (KEDA's phase) around the HPA engine's decision
        activity = activity_readings(spec, decided_spec.metrics, decided.readings)  # composite's, before fallback
        decision = apply_activation(spec, activity, decision, state.target.last_active_time, inputs.created, now)
    else:
        decision = without_activation(decision)
    if landed is not None:  # the Event the writer of that scale could not post: first among this sync's
        decision = replace(decision, events=(landed, *decision.events))
    hvpa: HvpaDecision | None = None
    if spec.hvpa is not None:
        seen = HvpaObservation(
            observation.scale.spec_replicas, observation.pods, inputs.vpa, template=inputs.template, clock=inputs.clock
        )
        hvpa = decide_hvpa(spec, seen, decision, state.hvpa, now)
        decision = adopt_hvpa(decision, hvpa)
    # The pause last, so that it holds whatever set the count (HVPA's included): autoscaler.core.pause.
    decision = pause_step(spec.pause, inputs.annotations, decision, state.target.pause, now)
    return SyncPlan(spec, now, state, decision, hvpa)


def settle(plan: SyncPlan, results: WriteResults) -> SyncOutcome:
    """Record how the plan's writes went (step 3 in the module docstring)."""
    decision = plan.decision
    if results.scale is not None:
        decision = apply_scale_result(decision, plan.spec, results.scale, plan.now, results.scale_error)
        decision = settle_pause(decision, plan.now)
        if decision.activation is not None:
            decision = replace(decision, events=(*decision.events, *activation_events(decision, plan.spec)))
    hvpa_state = plan.state.hvpa
    if plan.hvpa is not None and decision.applied is not False and results.vpa:
        hvpa_state = plan.hvpa.state
    target = TargetState(
        history=decision.history,
        conditions=decision.conditions,
        desired_replicas=decision.status_desired_replicas,
        last_scale_time=decision.last_scale_time,
        last_active_time=decision.activation.last_active_time if decision.activation is not None else None,
        metric_health=decision.metric_health,
        pause=decision.pause,
    )
    return SyncOutcome(plan.now, decision, plan.hvpa, SyncState(target, hvpa_state))


def sync(
    spec: TargetSpec, inputs: SyncInputs, state: SyncState, settings: ControllerSettings, now: float
) -> SyncOutcome:
    """A whole sync whose writes all succeed (what ``simulate`` and ``backtest`` replay)."""
    return settle(plan_sync(spec, inputs, state, settings, now), ALL_WRITTEN)


def scale_unreadable(state: SyncState, error: str, now: float) -> tuple[SyncState, Event]:
    """A sync that could not read the scale decides nothing: AbleToScale False (FailedGetScale) is
    all it carries on, with the Event upstream posts."""
    conditions = set_condition(
        state.target.conditions, c.ABLE_TO_SCALE, c.FALSE, "FailedGetScale", c.MSG_FAILED_GET_SCALE.format(error), now
    )
    return replace(state, target=replace(state.target, conditions=conditions)), Event(WARNING, "FailedGetScale", error)
