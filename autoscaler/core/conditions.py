"""HPA status conditions with upstream's types, reasons and messages.

Conditions are a list carried from sync to sync: a condition keeps its position, a new type is
appended the first time it is set, and ``last_transition_time`` changes only when the status flips
(``setConditionInList``).
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.values.frozen import quick_init

ABLE_TO_SCALE = "AbleToScale"
SCALING_ACTIVE = "ScalingActive"
SCALING_LIMITED = "ScalingLimited"
SCALED_TO_ZERO = "ScaledToZero"

TRUE = "True"
FALSE = "False"

# Messages, verbatim from pkg/controller/podautoscaler/horizontal.go.
MSG_FAILED_GET_SCALE = "the HPA controller was unable to get the target's current scale: {}"
MSG_SUCCEEDED_GET_SCALE = "the HPA controller was able to get the target's current scale"
MSG_READY_FOR_NEW_SCALE = "recommended size matches current size"
MSG_SCALE_DOWN_STABILIZED = (
    "recent recommendations were higher than current one, applying the highest recent recommendation"
)
MSG_SCALE_UP_STABILIZED = (
    "recent recommendations were lower than current one, applying the lowest recent recommendation"
)
MSG_SUCCEEDED_RESCALE = "the HPA controller was able to update the target scale to {}"
MSG_FAILED_UPDATE_SCALE = "the HPA controller was unable to update the target scale: {}"
MSG_VALID_METRIC_FOUND = "the HPA was able to successfully calculate a replica count from {}"
MSG_SCALING_DISABLED = "scaling is disabled since the replica count of the target is zero"
MSG_UNABLE_TO_COMPUTE = "the HPA was unable to compute the replica count: {}"
MSG_MISSING_SELECTOR = "the HPA target's scale is missing a selector"
MSG_DESIRED_WITHIN_RANGE = "the desired count is within the acceptable range"
MSG_SCALE_UP_LIMIT = "the desired replica count is increasing faster than the maximum scale rate"
MSG_SCALE_DOWN_LIMIT = "the desired replica count is decreasing faster than the maximum scale rate"
MSG_TOO_MANY_REPLICAS = "the desired replica count is more than the maximum replica count"
# KEP-853 fixed the TooFewReplicas message, which used to borrow the ScaleUpLimit/TooManyReplicas texts.
MSG_TOO_FEW_REPLICAS = "the desired replica count is less than the minimum replica count"
MSG_SCALED_TO_ZERO = "the HPA controller scaled the workload to zero"
MSG_NOT_SCALED_TO_ZERO = "the HPA controller did not scale the workload to zero"

LIMIT_MESSAGES = {
    "DesiredWithinRange": MSG_DESIRED_WITHIN_RANGE,
    "ScaleUpLimit": MSG_SCALE_UP_LIMIT,
    "ScaleDownLimit": MSG_SCALE_DOWN_LIMIT,
    "TooManyReplicas": MSG_TOO_MANY_REPLICAS,
    "TooFewReplicas": MSG_TOO_FEW_REPLICAS,
}


@quick_init
@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str
    last_transition_time: float | None = None


def set_condition(
    conditions: tuple[Condition, ...], type_: str, status: str, reason: str, message: str, now: float
) -> tuple[Condition, ...]:
    """``setConditionInList``: update in place (transition time only on a status flip) or append."""
    for index, existing in enumerate(conditions):
        if existing.type == type_:
            if existing.status == status and existing.reason == reason and existing.message == message:
                return conditions  # unchanged: the same tuple, not an equal copy (a steady sync's case)
            transition = existing.last_transition_time if existing.status == status else now
            updated = Condition(type_, status, reason, message, transition)
            return (*conditions[:index], updated, *conditions[index + 1 :])
    return (*conditions, Condition(type_, status, reason, message, now))


def remove_condition(conditions: tuple[Condition, ...], type_: str) -> tuple[Condition, ...]:
    return tuple(c for c in conditions if c.type != type_)


def find_condition(conditions: tuple[Condition, ...], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)
