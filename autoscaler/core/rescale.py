"""What a scale write changes in a decision: what upstream's controller records after it writes the
scale subresource (AbleToScale SucceededRescale / FailedUpdateScale, ScaledToZero, the Event, the stored
scale event, lastScaleTime).

Apart from :mod:`autoscaler.core.decision` because it runs after the write, on a decision already made:
:func:`~autoscaler.core.sync.settle` calls it with how the write went.

A write whose outcome was never recorded (the writer stopped between sending it and writing the status) is
settled here too: the status recorded the write before it was sent (:func:`state_before_write`, the
service's ``status.pendingScale``), and :func:`resolve_scale_intent` records it as landed or not from the
count the workload has when the next sync reads it.
"""

from __future__ import annotations

from dataclasses import replace

from autoscaler.core import conditions as c
from autoscaler.core.conditions import Condition, set_condition
from autoscaler.core.decision import NORMAL, WARNING, Decision, Event, TargetState, kept_desired_replicas
from autoscaler.core.history import ScaleIntent, record_scale_event, with_initial_recommendation
from autoscaler.core.spec import TargetSpec


def apply_scale_result(
    decision: Decision, spec: TargetSpec, succeeded: bool, now: float, error: str | None = None
) -> Decision:
    """Record the outcome of writing ``decision.replicas`` to the scale subresource."""
    if not decision.scale:
        return decision
    if not succeeded:
        message = error or "unknown error"
        conditions = set_condition(
            decision.conditions,
            c.ABLE_TO_SCALE,
            c.FALSE,
            "FailedUpdateScale",
            c.MSG_FAILED_UPDATE_SCALE.format(message),
            now,
        )
        event = Event(
            WARNING,
            "FailedRescale",
            f"New size: {decision.replicas}; reason: {decision.rescale_reason}; error: {message}",
        )
        return replace(
            decision,
            conditions=conditions,
            events=(*decision.events, event),
            applied=False,
            status_desired_replicas=kept_desired_replicas(
                decision.previous_desired_replicas, decision.current_replicas
            ),
            error=f"failed to rescale: {message}",
        )
    conditions = _rescaled_conditions(decision.conditions, spec, decision.current_replicas, decision.replicas, now)
    history = record_scale_event(decision.history, spec.behavior, decision.current_replicas, decision.replicas, now)
    return replace(
        decision,
        conditions=conditions,
        history=history,
        events=(*decision.events, _rescaled_event(decision.replicas, decision.rescale_reason)),
        applied=True,
        last_scale_time=now,
    )


def _rescaled_conditions(
    conditions: tuple[Condition, ...], spec: TargetSpec, previous: int, replicas: int, now: float
) -> tuple[Condition, ...]:
    """The conditions after a scale write from ``previous`` to ``replicas`` went through."""
    conditions = set_condition(
        conditions, c.ABLE_TO_SCALE, c.TRUE, "SucceededRescale", c.MSG_SUCCEEDED_RESCALE.format(replicas), now
    )
    # Set on every rescale (upstream master, HPAScaleToZero on) so that it is never stale.
    # With activation, a scale to 0 is the step to idle (autoscaler.core.activation), whatever minReplicas is.
    to_zero_allowed = spec.min_replicas == 0 or spec.activation is not None
    if previous > 0 and replicas == 0 and to_zero_allowed and spec.has_object_or_external_metric:
        return set_condition(conditions, c.SCALED_TO_ZERO, c.TRUE, "ScaledToZero", c.MSG_SCALED_TO_ZERO, now)
    return set_condition(conditions, c.SCALED_TO_ZERO, c.FALSE, "NotScaledToZero", c.MSG_NOT_SCALED_TO_ZERO, now)


def _rescaled_event(replicas: int, reason: str) -> Event:
    return Event(NORMAL, "SuccessfulRescale", f"New size: {replicas}; reason: {reason}")


def scale_intent(decision: Decision, now: float) -> ScaleIntent:
    """The write ``decision`` makes (it scales), as the status records it before the write is sent."""
    return ScaleIntent(decision.current_replicas, decision.replicas, now, decision.rescale_reason)


def state_before_write(decision: Decision, intent: ScaleIntent) -> TargetState:
    """What a status written before the scale write holds: the decision as made (its history with this
    sync's recommendation, its conditions), its write not yet recorded, and the write as ``intent``."""
    return TargetState(
        history=decision.history,
        conditions=decision.conditions,
        desired_replicas=decision.status_desired_replicas,
        last_scale_time=decision.last_scale_time,
        scale_intent=intent,
        last_active_time=decision.activation.last_active_time if decision.activation is not None else None,
        metric_health=decision.metric_health,
        pause=decision.pause,
    )


def resolve_scale_intent(state: TargetState, spec: TargetSpec, current: int) -> tuple[TargetState, Event | None]:
    """``state`` with its scale intent settled against ``current``, the count the workload has now; with
    the SuccessfulRescale Event the writer never posted when the write is known to have landed.

    - ``current`` is the intent's ``previous``: the write never landed. The intent is dropped, and the
      state is what the writer held while the write was in flight: the decision as made, no scale event.
    - ``current`` is the intent's ``replicas``: it landed. It is recorded exactly as the writer would have
      recorded it (:func:`apply_scale_result`): the scale event at the decision's time, ``lastScaleTime``,
      AbleToScale SucceededRescale, ScaledToZero, status.desiredReplicas.
    - any other count: another writer changed the count since. Whether this write landed first cannot be
      told, so it is recorded as landed, without the Event: a scale event counted that never happened only
      holds the next scale for a policy period, one not counted could break the policy.
    """
    intent = state.scale_intent
    if intent is None:
        return state, None
    if current == intent.previous:
        return replace(state, scale_intent=None), None
    history = record_scale_event(
        with_initial_recommendation(state.history, intent.previous, intent.at),
        spec.behavior,
        intent.previous,
        intent.replicas,
        intent.at,
    )
    conditions = _rescaled_conditions(state.conditions, spec, intent.previous, intent.replicas, intent.at)
    landed = TargetState(
        history=history,
        conditions=conditions,
        desired_replicas=intent.replicas,
        last_scale_time=intent.at,
        last_active_time=state.last_active_time,
        metric_health=state.metric_health,
        pause=state.pause,
    )
    return landed, _rescaled_event(intent.replicas, intent.reason) if current == intent.replicas else None
