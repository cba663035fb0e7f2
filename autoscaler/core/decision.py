"""One sync's decision for one target: upstream's ``reconcileAutoscaler`` without the I/O.

:func:`decide` takes the spec, what was observed (scale, pods, metric readings), the state the
target carries between syncs (history, conditions, the last status) and "now", and returns a
:class:`Decision`: the replica count to apply, the conditions, the Events, the new history and
everything needed to explain it. It writes nothing; the caller applies the scale and then calls
:func:`~autoscaler.core.rescale.apply_scale_result` with the outcome, which adds what upstream records after the write
(AbleToScale SucceededRescale/FailedUpdateScale, the stored scale event, lastScaleTime).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from autoscaler.core import conditions as c
from autoscaler.core.activation_outcome import ActivationOutcome
from autoscaler.core.behavior import Normalization, normalize_legacy, normalize_with_behavior, tolerances_for
from autoscaler.core.conditions import Condition, find_condition, set_condition
from autoscaler.core.history import DecisionHistory, ScaleIntent, with_initial_recommendation
from autoscaler.core.metric_health import MetricHealth
from autoscaler.core.metrics import combine_metrics, compute_metric
from autoscaler.core.observation import Observation
from autoscaler.core.pause_state import PauseState
from autoscaler.core.prediction.floor import ForecastOutcome, apply_forecasts
from autoscaler.core.prediction.forecast import Forecast
from autoscaler.core.results import MetricOutcome, MetricsOutcome
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import TargetSpec

NORMAL = "Normal"
WARNING = "Warning"


@dataclass(slots=True, init=False, unsafe_hash=True)
class Event:
    """A Kubernetes Event to post on the target."""

    type: Final[str]
    reason: Final[str]
    message: Final[str]

    def __init__(self, type: str, reason: str, message: str) -> None:
        self.type = type
        self.reason = reason
        self.message = message


@dataclass(slots=True, init=False, unsafe_hash=True)
class TargetState:
    """What a target carries from one sync to the next (persisted in its status by the service).

    ``scale_intent``: a scale write a status recorded before it was sent, whose outcome no status told
    (the writer stopped mid-write); the next sync settles it against the count it reads
    (:func:`~autoscaler.core.rescale.resolve_scale_intent`). None in any state a sync leaves.
    ``last_active_time``: with ``spec.activation``, the last sync a metric was above its activation
    threshold (KEDA's ``status.lastActiveTime``); the cooldown to idle counts from it."""

    history: Final[DecisionHistory | None]
    conditions: Final[tuple[Condition, ...]]
    desired_replicas: Final[int | None]  # status.desiredReplicas as last written
    last_scale_time: Final[float | None]
    scale_intent: Final[ScaleIntent | None]
    last_active_time: Final[float | None]
    metric_health: Final[tuple[MetricHealth, ...]]  # with spec.fallback: each metric's failures (core/metric_health.py)
    pause: Final[PauseState | None]  # a pause in effect: its mode and since when (autoscaler.core.pause)

    def __init__(
        self,
        history: DecisionHistory | None = None,
        conditions: tuple[Condition, ...] = (),
        desired_replicas: int | None = None,
        last_scale_time: float | None = None,
        scale_intent: ScaleIntent | None = None,
        last_active_time: float | None = None,
        metric_health: tuple[MetricHealth, ...] = (),
        pause: PauseState | None = None,
    ) -> None:
        self.history = history
        self.conditions = conditions
        self.desired_replicas = desired_replicas
        self.last_scale_time = last_scale_time
        self.scale_intent = scale_intent
        self.last_active_time = last_active_time
        self.metric_health = metric_health
        self.pause = pause


@dataclass(slots=True, init=False, unsafe_hash=True)
class Decision:
    current_replicas: Final[int]
    desired_replicas: Final[int | None]  # the sync's proposal before normalization; None when metrics failed
    replicas: Final[int]  # the count the scale is to be set to (== current when not scaling)
    scale: Final[bool]
    branch: Final[str]  # which path the sync took (see BRANCHES)
    rescale_reason: Final[str]
    metrics: Final[tuple[MetricOutcome, ...]]
    combined: Final[MetricsOutcome | None]
    normalization: Final[Normalization | None]
    conditions: Final[tuple[Condition, ...]]
    history: Final[DecisionHistory]
    status_desired_replicas: Final[int]  # what status.desiredReplicas becomes
    last_scale_time: Final[float | None]
    events: Final[tuple[Event, ...]]
    error: Final[str | None]  # the sync's error (a metric failed, or the scale could not be written)
    applied: Final[bool | None]  # after apply_scale_result: whether the scale write succeeded
    previous_desired_replicas: Final[int | None]  # status.desiredReplicas before this sync
    notes: Final[tuple[str, ...]]  # sentences explain shows before the metrics' (the composite's, core/composite)
    activation: Final[ActivationOutcome | None]  # with spec.activation: what its step found and did
    metric_health: Final[tuple[MetricHealth, ...]]  # with spec.fallback: each metric's health after this sync
    held_replicas: Final[int | None]  # the count a pause kept the decision from setting (autoscaler.core.pause)
    pause: Final[PauseState | None]  # the pause in effect after this sync (the next sync's TargetState.pause)
    forecast: Final[ForecastOutcome | None]  # with spec.prediction: what the forecasts did to the proposal

    def __init__(
        self,
        current_replicas: int,
        desired_replicas: int | None,
        replicas: int,
        scale: bool,
        branch: str,
        rescale_reason: str,
        metrics: tuple[MetricOutcome, ...],
        combined: MetricsOutcome | None,
        normalization: Normalization | None,
        conditions: tuple[Condition, ...],
        history: DecisionHistory,
        status_desired_replicas: int,
        last_scale_time: float | None,
        events: tuple[Event, ...] = (),
        error: str | None = None,
        applied: bool | None = None,
        previous_desired_replicas: int | None = None,
        notes: tuple[str, ...] = (),
        activation: ActivationOutcome | None = None,
        metric_health: tuple[MetricHealth, ...] = (),
        held_replicas: int | None = None,
        pause: PauseState | None = None,
        forecast: ForecastOutcome | None = None,
    ) -> None:
        self.current_replicas = current_replicas
        self.desired_replicas = desired_replicas
        self.replicas = replicas
        self.scale = scale
        self.branch = branch
        self.rescale_reason = rescale_reason
        self.metrics = metrics
        self.combined = combined
        self.normalization = normalization
        self.conditions = conditions
        self.history = history
        self.status_desired_replicas = status_desired_replicas
        self.last_scale_time = last_scale_time
        self.events = events
        self.error = error
        self.applied = applied
        self.previous_desired_replicas = previous_desired_replicas
        self.notes = notes
        self.activation = activation
        self.metric_health = metric_health
        self.held_replicas = held_replicas
        self.pause = pause
        self.forecast = forecast

    @property
    def limited_by(self) -> str | None:
        """What held the count back from the metrics' proposal: a limit (``ScaleUpLimit``,
        ``TooManyReplicas``…), else a stabilization window (``ScaleDownStabilized``…); None if nothing."""
        norm = self.normalization
        if norm is None:
            return None
        if norm.limited:
            return norm.limit_reason
        return norm.able_reason if norm.stabilized != norm.proposal else None


def decide(
    spec: TargetSpec,
    observation: Observation,
    state: TargetState,
    settings: ControllerSettings,
    now: float,
    forecasts: Mapping[str, Forecast] | None = None,
) -> Decision:
    """Compute one sync's decision. Pure: same inputs, same decision. ``forecasts``: with ``spec.prediction``,
    each forecast metric's forecast by name (autoscaler.core.prediction: a floor under the proposal)."""
    return _decide(spec, observation, state, settings, now, forecasts)


def _decide(
    spec: TargetSpec,
    observation: Observation,
    state: TargetState,
    settings: ControllerSettings,
    now: float,
    forecasts: Mapping[str, Forecast] | None = None,
) -> Decision:
    known = state.conditions
    current = observation.scale.spec_replicas
    history = with_initial_recommendation(state.history, current, now)
    min_replicas = spec.min_replicas
    scaled_to_zero = _carries_scaled_to_zero(state)

    if current == 0:
        # At zero, metrics are read only if this autoscaler put the target there (ScaledToZero True) and it
        # can ever leave zero (minReplicas ≠ 0, or an Object/External metric); a person's 0 is left alone.
        # The out-of-range branches below are not taken at zero.
        if not (scaled_to_zero and (min_replicas != 0 or spec.has_object_or_external_metric)):
            conditions = set_condition(
                _scale_read(known, now), c.SCALING_ACTIVE, c.FALSE, "ScalingDisabled", c.MSG_SCALING_DISABLED, now
            )
            return _without_metrics(spec, state, history, current, "disabled", 0, "", conditions)
    elif current > spec.max_replicas:
        return _without_metrics(
            spec,
            state,
            history,
            current,
            "above-max",
            spec.max_replicas,
            "Current number of replicas above Spec.MaxReplicas",
            _scale_read(known, now),
        )
    elif current < min_replicas:
        return _without_metrics(
            spec,
            state,
            history,
            current,
            "below-min",
            min_replicas,
            "Current number of replicas below Spec.MinReplicas",
            _scale_read(known, now),
        )

    selector_failure = _selector_failure(observation)
    if selector_failure is not None:
        event, reason, message = selector_failure
        conditions = set_condition(_scale_read(known, now), c.SCALING_ACTIVE, c.FALSE, reason, message, now)
        return Decision(
            current_replicas=current,
            desired_replicas=None,
            replicas=current,
            scale=False,
            branch="selector",
            rescale_reason="",
            metrics=_skipped(spec),
            combined=None,
            normalization=None,
            conditions=conditions,
            history=history,
            status_desired_replicas=kept_desired_replicas(state.desired_replicas, current),
            last_scale_time=state.last_scale_time,
            events=(event,),
            error=event.message,
            previous_desired_replicas=state.desired_replicas,
        )

    tolerances = tolerances_for(spec, settings)
    outcomes = tuple(
        compute_metric(metric, reading, observation.scale, observation.pods, tolerances, settings, now)
        for metric, reading in zip(spec.metrics, observation.readings, strict=True)
    )
    events = [Event(WARNING, o.reason or "", o.error or "") for o in outcomes if o.error is not None]
    combined = combine_metrics(outcomes, current)
    if combined.proposal is None:
        first = combined.first_invalid
        assert first is not None and combined.error is not None
        conditions = set_condition(
            _scale_read(known, now),
            c.SCALING_ACTIVE,
            c.FALSE,
            first.reason or "",
            c.MSG_UNABLE_TO_COMPUTE.format(first.error),
            now,
        )
        events.append(Event(WARNING, "FailedComputeMetricsReplicas", combined.error))
        return Decision(
            current_replicas=current,
            desired_replicas=None,
            replicas=current,
            scale=False,
            branch="metrics-failed",
            rescale_reason="",
            metrics=outcomes,
            combined=combined,
            normalization=None,
            conditions=conditions,
            history=history,
            status_desired_replicas=kept_desired_replicas(state.desired_replicas, current),
            last_scale_time=state.last_scale_time,
            events=tuple(events),
            error=combined.error,
            previous_desired_replicas=state.desired_replicas,
        )
    # AbleToScale is set to True again below: where the target holds it, "SucceededGetScale" first would leave
    # nothing different (same place, same transition time); where not, it puts it before ScalingActive.
    conditions = set_condition(
        known if find_condition(known, c.ABLE_TO_SCALE) is not None else _scale_read(known, now),
        c.SCALING_ACTIVE,
        c.TRUE,
        "ValidMetricFound",
        c.MSG_VALID_METRIC_FOUND.format(combined.description),
        now,
    )

    desired = max(0, combined.proposal)
    rescale_reason = ""
    forecast: ForecastOutcome | None = None
    if spec.prediction is not None:  # only ever up: the forecasts' replicas are a floor (core/prediction/floor.py)
        forecast = apply_forecasts(
            spec.prediction,
            forecasts or {},
            outcomes,
            observation,
            tolerances,
            desired,
            composite=spec.composite is not None,
        )
        desired = forecast.proposal
    if desired > current:
        deciding = forecast.deciding if forecast is not None and forecast.raised else None
        text = f"{deciding.description} forecast" if deciding is not None else combined.description
        rescale_reason = f"{text} above target"
    elif desired < current:
        rescale_reason = "All metrics below target"
    if spec.behavior is None:
        norm = normalize_legacy(
            history, current, desired, min_replicas, spec.max_replicas, settings.downscale_stabilization_window, now
        )
    else:
        norm = normalize_with_behavior(
            history,
            spec.behavior,
            current,
            desired,
            min_replicas,
            spec.max_replicas,
            settings.downscale_stabilization_window,
            now,
        )
    conditions = set_condition(conditions, c.ABLE_TO_SCALE, c.TRUE, norm.able_reason, norm.able_message, now)
    conditions = set_condition(
        conditions, c.SCALING_LIMITED, c.TRUE if norm.limited else c.FALSE, norm.limit_reason, norm.limit_message, now
    )
    final = norm.final
    if current == 0 and min_replicas != 0 and scaled_to_zero and final < min_replicas:
        # Scaling from zero after minReplicas was raised: never stop below it.
        final = min_replicas
        rescale_reason = rescale_reason or "Current number of replicas below Spec.MinReplicas"
    scale = final != current
    return Decision(
        current_replicas=current,
        desired_replicas=desired,
        replicas=final if scale else current,
        scale=scale,
        branch="metrics",
        rescale_reason=rescale_reason,
        metrics=outcomes,
        combined=combined,
        normalization=norm,
        conditions=conditions,
        history=norm.history,
        status_desired_replicas=final if scale else current,
        last_scale_time=state.last_scale_time,
        events=tuple(events),
        error=combined.error,
        previous_desired_replicas=state.desired_replicas,
        forecast=forecast,
    )


def _scale_read(conditions: tuple[Condition, ...], now: float) -> tuple[Condition, ...]:
    """AbleToScale once the scale was read: upstream sets it first, whatever the sync does next."""
    return set_condition(conditions, c.ABLE_TO_SCALE, c.TRUE, "SucceededGetScale", c.MSG_SUCCEEDED_GET_SCALE, now)


def _skipped(spec: TargetSpec) -> tuple[MetricOutcome, ...]:
    """Every metric's outcome when the branch taken reads none."""
    return tuple(MetricOutcome(spec=m, skipped=True) for m in spec.metrics)


def _without_metrics(
    spec: TargetSpec,
    state: TargetState,
    history: DecisionHistory,
    current: int,
    branch: str,
    desired: int,
    reason: str,
    conds: tuple[Condition, ...],
) -> Decision:
    """The decision of a branch taken before any metric is read (scaling disabled, replicas out of range)."""
    scale = branch in ("above-max", "below-min") and desired != current
    return Decision(
        current_replicas=current,
        desired_replicas=desired,
        replicas=desired if scale else current,
        scale=scale,
        branch=branch,
        rescale_reason=reason,
        metrics=_skipped(spec),
        combined=None,
        normalization=None,
        conditions=conds,
        history=history,
        status_desired_replicas=desired if scale else current,
        last_scale_time=state.last_scale_time,
        previous_desired_replicas=state.desired_replicas,
    )


def _carries_scaled_to_zero(state: TargetState) -> bool:
    flag = find_condition(state.conditions, c.SCALED_TO_ZERO)
    return flag is not None and flag.status == c.TRUE


def kept_desired_replicas(previous: int | None, current: int) -> int:
    """status.desiredReplicas when a sync does not change it (it cannot decide, or its scale write failed):
    upstream leaves the last written value, ``previous``; the current count when none was written yet."""
    return previous if previous is not None else current


def _selector_failure(observation: Observation) -> tuple[Event, str, str] | None:
    if not observation.scale.selector:
        return (Event(WARNING, "SelectorRequired", "selector is required"), "InvalidSelector", c.MSG_MISSING_SELECTOR)
    problem = observation.selector_problem
    if problem is not None:
        return Event(WARNING, problem.reason, problem.message), problem.reason, problem.message
    return None
