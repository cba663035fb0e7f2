"""HPA status conditions with upstream's types, reasons and messages.

Conditions are a list carried from sync to sync: a condition keeps its position, a new type is
appended the first time it is set, and ``last_transition_time`` changes only when the status flips
(``setConditionInList``).

A condition is written when its words change, so a failure that lasts must read the same at every sync:
:func:`steady_message` takes out of a metric's failure text the values that change from one sync to the
next for the same failure (a backend's measured durations, timestamps, request ids).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

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


@dataclass(slots=True, init=False, unsafe_hash=True)
class Condition:
    type: Final[str]
    status: Final[str]
    reason: Final[str]
    message: Final[str]
    last_transition_time: Final[float | None]

    def __init__(
        self,
        type: str,
        status: str,
        reason: str,
        message: str,
        last_transition_time: float | None = None,
    ) -> None:
        self.type = type
        self.status = status
        self.reason = reason
        self.message = message
        self.last_transition_time = last_transition_time


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


# Values that change from sync to sync within one failure, each with what the condition shows instead. They
# come from the backend's own error texts (Prometheus, Thanos, Mimir, VictoriaMetrics), which quote the deadline
# they were sent (ours, a little shorter at every sync), the time a query took, the query's time range, a
# request or trace id, and a connection's local port. A measured duration has a fraction of two digits or more
# (Go prints a Duration to the nanosecond, VictoriaMetrics to the millisecond); a setting ("5m", a timeout of
# "2.5s") has none or one, and stays.
_CHANGING_VALUES: tuple[tuple[re.Pattern[str], str], ...] = (
    # RFC 3339 and similar date-times
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    # UUIDs (request ids)
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<id>"),
    # measured Go durations: 1.987654321s, 150.25ms, 1m2.05s
    (re.compile(r"\b(?:\d+h)?(?:\d+m)?\d+\.\d{2,}(?:ns|us|µs|ms|s)\b"), "<duration>"),
    # measured durations in words: "1.987 seconds" (VictoriaMetrics' deadline and elapsed time)
    (re.compile(r"\b\d+\.\d{2,} ?(?:seconds?|milliseconds?|minutes?)\b"), "<duration>"),
    # Unix times in seconds, milliseconds, micro- or nanoseconds (ten digits and more)
    (re.compile(r"\b\d{10,}(?:\.\d+)?\b"), "<number>"),
    # trace ids and other long hexadecimal ids
    (re.compile(r"\b[0-9a-f]{16,}\b"), "<id>"),
    # a connection's local port: "read tcp 10.0.0.5:51234->10.0.0.7:10901"
    (re.compile(r"\b(\d{1,3}(?:\.\d{1,3}){3}):\d+->"), r"\1:<port>->"),
)


def steady_message(text: str) -> str:
    """``text`` with the values that change from sync to sync for the same failure replaced by what they
    are (``<duration>``, ``<time>``, ``<number>``, ``<id>``, ``<port>``): a condition that carries it is not
    written again while the failure lasts. The whole text goes to the log (prometheus/sending.py)."""
    for pattern, replacement in _CHANGING_VALUES:
        text = pattern.sub(replacement, text)
    return text


def remove_condition(conditions: tuple[Condition, ...], type_: str) -> tuple[Condition, ...]:
    return tuple(c for c in conditions if c.type != type_)


def find_condition(conditions: tuple[Condition, ...], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)
