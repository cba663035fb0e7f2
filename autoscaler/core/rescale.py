"""What a scale write changes in a decision: what upstream's controller records after it writes the
scale subresource (AbleToScale SucceededRescale / FailedUpdateScale, ScaledToZero, the Event, the stored
scale event, lastScaleTime).

Apart from :mod:`autoscaler.core.decision` because it runs after the write, on a decision already made:
:func:`~autoscaler.core.sync.settle` calls it with how the write went.
"""

from __future__ import annotations

from dataclasses import replace

from autoscaler.core import conditions as c
from autoscaler.core.conditions import set_condition
from autoscaler.core.decision import NORMAL, WARNING, Decision, Event, kept_desired_replicas
from autoscaler.core.history import record_scale_event
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
    conditions = set_condition(
        decision.conditions,
        c.ABLE_TO_SCALE,
        c.TRUE,
        "SucceededRescale",
        c.MSG_SUCCEEDED_RESCALE.format(decision.replicas),
        now,
    )
    # Set on every rescale (upstream master, HPAScaleToZero on) so that it is never stale.
    if (
        decision.current_replicas > 0
        and decision.replicas == 0
        and spec.min_replicas == 0
        and spec.has_object_or_external_metric
    ):
        conditions = set_condition(conditions, c.SCALED_TO_ZERO, c.TRUE, "ScaledToZero", c.MSG_SCALED_TO_ZERO, now)
    else:
        conditions = set_condition(
            conditions, c.SCALED_TO_ZERO, c.FALSE, "NotScaledToZero", c.MSG_NOT_SCALED_TO_ZERO, now
        )
    history = record_scale_event(decision.history, spec.behavior, decision.current_replicas, decision.replicas, now)
    event = Event(NORMAL, "SuccessfulRescale", f"New size: {decision.replicas}; reason: {decision.rescale_reason}")
    return replace(
        decision,
        conditions=conditions,
        history=history,
        events=(*decision.events, event),
        applied=True,
        last_scale_time=now,
    )
