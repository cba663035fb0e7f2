"""What a sync with ``spec.prediction`` says of its forecast: the ``Predicting`` condition and the sentences
``explain`` adds.

``Predicting`` (a condition type of its own: ScalingActive's reasons are upstream's, and a forecast ignored
does not make scaling inactive):

- ``True``, ``ForecastAboveReactive``: a usable forecast asked for more replicas than the metrics' own
  proposal, and the proposal was raised to it;
- ``True``, ``ReactiveAtOrAboveForecast``: a usable forecast, the metrics' own proposal as high or higher;
- ``False``, with the forecast's reason: ``ShortHistory``, ``HighError``, ``StaleHistory``, ``NoValue``,
  ``MetricFailed`` (the history could not be read, or the metric failed this sync), ``NoForecast`` (none
  made yet), or ``NoProposal`` (the sync made no proposal from the metrics: a forecast is only a floor under
  one).

The condition's message stays the same while the situation does (no forecast value or error in it: those
change every refresh and would rewrite the status); ``explain`` gives the numbers.
"""

from __future__ import annotations

from dataclasses import replace

from autoscaler.core import conditions as c
from autoscaler.core.conditions import find_condition, remove_condition, set_condition, steady_message
from autoscaler.core.decision import Decision
from autoscaler.core.prediction.floor import (
    REASON_FORECAST_DECIDED,
    REASON_NO_FORECAST,
    REASON_REACTIVE_DECIDED,
    ForecastOutcome,
)
from autoscaler.core.prediction.forecast import (
    REASON_HIGH_ERROR,
    REASON_METRIC_FAILED,
    REASON_NO_VALUE,
    REASON_SHORT_HISTORY,
    REASON_STALE_HISTORY,
)
from autoscaler.core.spec import TargetSpec

PREDICTING = "Predicting"
REASON_NO_PROPOSAL = "NoProposal"

_STEADY = {
    REASON_FORECAST_DECIDED: "the forecast asks for more replicas than the metrics: the proposal is raised to it",
    REASON_REACTIVE_DECIDED: "the metrics ask for as many replicas as the forecast or more",
    REASON_SHORT_HISTORY: "not used: less history than minHistorySeconds or than the model needs",
    REASON_STALE_HISTORY: "not used: the metric's history stopped (no recent point)",
    REASON_NO_VALUE: "not used: the history has no value a season back from the forecast instant",
    REASON_NO_FORECAST: "not used: no forecast made yet (the history is read in the background)",
    REASON_NO_PROPOSAL: "not used: this sync made no proposal from the metrics, and a forecast is only a floor",
}


def record_prediction(spec: TargetSpec, decision: Decision, now: float) -> Decision:
    """``decision`` with its ``Predicting`` condition set from its forecast outcome; without
    ``spec.prediction``, a condition left from when the target had it removed."""
    prediction = spec.prediction
    if prediction is None:
        if find_condition(decision.conditions, PREDICTING) is None:
            return decision
        return replace(decision, conditions=remove_condition(decision.conditions, PREDICTING))
    outcome = decision.forecast
    if outcome is None:
        status, reason = c.FALSE, REASON_NO_PROPOSAL
        message = _STEADY[REASON_NO_PROPOSAL]
    else:
        status = c.TRUE if outcome.usable else c.FALSE
        reason = outcome.reason
        message = _condition_message(outcome, prediction.max_error_percent)
    conditions = set_condition(decision.conditions, PREDICTING, status, reason, message, now)
    return decision if conditions is decision.conditions else replace(decision, conditions=conditions)


def _condition_message(outcome: ForecastOutcome, max_error_percent: float) -> str:
    reason = outcome.reason
    if reason == REASON_HIGH_ERROR:
        return f"not used: its error over the last season is above maxErrorPercent ({max_error_percent:g}%)"
    if reason == REASON_METRIC_FAILED:
        first = outcome.metrics[0] if outcome.metrics else None
        detail = steady_message(first.message) if first is not None and first.message else "the metric failed"
        return f"not used: {detail}"
    return _STEADY.get(reason, f"not used: {reason}")


def forecast_lines(outcome: ForecastOutcome) -> list[str]:
    """``explain``'s sentences: what each metric's forecast said, and whether it decided."""
    lines = []
    for metric in outcome.metrics:
        made = metric.forecast
        error = f", error {made.error_percent:.1f}% over the last season" if made.error_percent is not None else ""
        if metric.replicas is not None and made.value is not None:
            lines.append(
                f"Forecast of {metric.description.replace('(<nil>)', '')}: {made.value:g} ({made.model}{error}), "
                f"asking for {metric.replicas} replicas."
            )
        else:
            predicted = f" {made.value:g} ({made.model}{error})" if made.value is not None else ""
            lines.append(
                f"Forecast of {metric.description.replace('(<nil>)', '')}{predicted} not used: "
                f"{metric.reason} ({metric.message or metric.reason})."
            )
    if outcome.raised:
        lines.append(
            f"The forecast decided: the proposal is raised from {outcome.reactive} to {outcome.proposal} "
            "(a forecast only ever raises it)."
        )
    elif outcome.usable:
        lines.append(f"The metrics decided: their {outcome.reactive} is at or above the forecast's {outcome.replicas}.")
    return lines
