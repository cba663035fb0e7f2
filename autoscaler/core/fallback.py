"""``spec.fallback``: a metric that failed long enough stands for a replica count (KEDA's fallback).

Two steps of a sync (:func:`~autoscaler.core.sync.plan_sync`), around the decision:

1. :func:`fallback_readings`, before ``decide``: each metric's failures counted on from the state
   (:mod:`autoscaler.core.metric_health`); a failed reading past ``failureThreshold`` (more failed syncs in a
   row) or ``failureDurationSeconds`` (failing that long) is replaced by the reading KEDA feeds the HPA in its
   place (:func:`stand_in`), so that the HPA algorithm — tolerance, behavior, stabilization, min/max — decides
   on it exactly as under KEDA.
2. :func:`record_fallback`, after it: the health the next sync starts from (a sync whose decision read no
   metric leaves it as it was), the ``Fallback`` condition (KEDA's: True ``FallbackExists``, False
   ``NoFallbackFound``; only on targets with ``fallback``), an Event when a fallback begins and when it ends,
   and the sentences ``explain`` shows.

The fallback ends at the first sync its metric answers (the count starts again from 0). A target without
``fallback`` is untouched: a failed metric never causes a scale-down.

Pure: no I/O, no clock (``now`` is an argument).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from autoscaler.core import conditions as c
from autoscaler.core.conditions import find_condition, remove_condition, set_condition
from autoscaler.core.decision import NORMAL, WARNING, Decision, Event
from autoscaler.core.fallback_spec import FallbackSpec
from autoscaler.core.gomath import MAX_INT64
from autoscaler.core.metric_health import MetricHealth, metric_keys
from autoscaler.core.observation import (
    ConditionStatus,
    ExternalReading,
    FallbackReading,
    MetricFailure,
    MetricReading,
    ObjectReading,
    Observation,
    PodPhase,
)
from autoscaler.core.spec import MetricSourceType, MetricSpec, MetricTargetType, TargetSpec
from autoscaler.values.quantity import Quantity

FALLBACK = "Fallback"
FALLBACK_EXISTS = "FallbackExists"
NO_FALLBACK_FOUND = "NoFallbackFound"
MSG_NO_FALLBACK = "No fallbacks are active on this target"
FALLBACK_ACTIVATED = "FallbackActivated"
FALLBACK_DEACTIVATED = "FallbackDeactivated"


@dataclass(frozen=True, slots=True)
class FallbackStep:
    """What :func:`fallback_readings` gives: the observation ``decide`` reads (failed readings past the
    threshold replaced) and each metric's health as this sync leaves it, should the decision read the metrics."""

    observation: Observation
    health: tuple[MetricHealth, ...]


def fallback_readings(
    spec: TargetSpec, observation: Observation, previous: Sequence[MetricHealth], now: float
) -> FallbackStep:
    """Step 1 (see the module docstring). ``spec`` is the spec ``decide`` reads, ``spec.fallback`` set."""
    fallback = spec.fallback
    assert fallback is not None
    before = {health.key: health for health in previous}
    replicas = fallback.replicas_for(observation.scale.spec_replicas)
    readings: list[MetricReading] = list(observation.readings)
    healths: list[MetricHealth] = []
    replaced = False
    for index, (metric, key) in enumerate(zip(spec.metrics, metric_keys(spec.metrics), strict=True)):
        reading = readings[index]
        if not isinstance(reading, MetricFailure):
            healths.append(MetricHealth(key=key))
            continue
        last = before.get(key)
        failures, since = (last.failures, last.since) if last is not None else (0, None)
        if not fallback.reached(failures, since, now):  # counted up to the sync the fallback begins at
            failures += 1
        since = now if since is None else since
        health = MetricHealth(key=key, failures=failures, since=since, error=reading.message, backend=reading.backend)
        if fallback.reached(failures, since, now):
            standing = stand_in(metric, replicas, observation, reading, now)
            readings[index] = standing
            replaced = True
            if not isinstance(standing, MetricFailure):
                health = replace(health, fallback_replicas=replicas)
        healths.append(health)
    seen = replace_readings(observation, readings) if replaced else observation
    return FallbackStep(seen, tuple(healths))


def replace_readings(observation: Observation, readings: Sequence[MetricReading]) -> Observation:
    return Observation(observation.scale, observation.pods, readings, observation.selector_problem)


def stand_in(
    metric: MetricSpec, replicas: int, observation: Observation, failure: MetricFailure, now: float
) -> MetricReading:
    """The reading a failed metric is replaced by to stand for ``replicas`` (KEDA's ``doFallback``).

    External and Object metrics: the value KEDA feeds the HPA, ``int64(target × 1000 × replicas)`` milli for
    an AverageValue target, the same divided by the Running and Ready pods for a Value target (none of them:
    no fallback, the metric stays failed, as in KEDA). Pods, Resource and ContainerResource metrics, which
    KEDA never falls back on: a :class:`FallbackReading`, proposed as an AverageValue metric would be."""
    target = metric.target
    if metric.type is MetricSourceType.EXTERNAL:
        # What the HPA reads: averageValue first, whatever the type says (autoscaler.core.metrics).
        average = target.average_value is not None
        quantity = target.average_value if average else target.value
    elif metric.type is MetricSourceType.OBJECT:
        average = target.type is MetricTargetType.AVERAGE_VALUE
        quantity = target.average_value if average else target.value
    else:
        return FallbackReading(replicas, failure.backend)
    assert quantity is not None
    share = float(replicas)
    if not average:
        ready = sum(
            1 for pod in observation.pods if pod.phase is PodPhase.RUNNING and pod.ready is ConditionStatus.TRUE
        )
        if ready == 0:
            return MetricFailure(
                f"{failure.message}; no fallback to {replicas} replicas: a Value target's fallback value is divided "
                "by the ready pods, and none is ready",
                failure.backend,
            )
        share /= float(ready)
    value = _milli(quantity, share)
    if metric.type is MetricSourceType.EXTERNAL:
        return ExternalReading((value,), now)
    return ObjectReading(value, now)


def _milli(target: Quantity, replicas: float) -> int:
    """``int64(normalisationValue*1000*replicas)``: truncated toward zero, as Go converts a float64."""
    value = target.as_float() * 1000 * replicas
    return min(int(value), MAX_INT64) if value < float(MAX_INT64) else MAX_INT64


def record_fallback(
    spec: TargetSpec, decision: Decision, previous: Sequence[MetricHealth], step: FallbackStep | None, now: float
) -> Decision:
    """Step 2 (see the module docstring). ``spec`` is the spec ``decide`` read; ``step`` what step 1 gave
    (None: it did not run, the target has no ``fallback``)."""
    fallback = spec.fallback
    if fallback is None or step is None:
        if find_condition(decision.conditions, FALLBACK) is None and not decision.metric_health:
            return decision
        return replace(decision, conditions=remove_condition(decision.conditions, FALLBACK), metric_health=())
    conditions = decision.conditions
    if all(outcome.skipped for outcome in decision.metrics):
        # No metric was read (scaling disabled, replicas out of range, no usable selector): nothing is
        # counted, nothing ends.
        kept = _kept(spec, previous)
        if find_condition(conditions, FALLBACK) is None:
            conditions = set_condition(conditions, FALLBACK, c.FALSE, NO_FALLBACK_FOUND, MSG_NO_FALLBACK, now)
        return replace(decision, conditions=conditions, metric_health=kept)
    falling = [health for health in step.health if health.fallback_replicas is not None]
    was = find_condition(conditions, FALLBACK)
    was_active = was is not None and was.status == c.TRUE
    events = decision.events
    if falling:
        message = fallback_message(fallback, falling)
        conditions = set_condition(conditions, FALLBACK, c.TRUE, FALLBACK_EXISTS, message, now)
        if not was_active:
            causes = "; ".join(f"{health.key}: {health.error}" for health in falling)
            events = (*events, Event(WARNING, FALLBACK_ACTIVATED, f"{message} ({causes})"))
    else:
        conditions = set_condition(conditions, FALLBACK, c.FALSE, NO_FALLBACK_FOUND, MSG_NO_FALLBACK, now)
        if was_active:
            events = (*events, Event(NORMAL, FALLBACK_DEACTIVATED, "The fallback ended: every metric answers again"))
    # The backend's health (service/backends/health.py) still sees a metric its backend failed.
    backend_failed = {health.key for health in falling if health.backend}
    outcomes = decision.metrics
    if backend_failed:
        keys = metric_keys([outcome.spec for outcome in outcomes])
        outcomes = tuple(
            replace(outcome, backend_failure=True) if key in backend_failed else outcome
            for outcome, key in zip(outcomes, keys, strict=True)
        )
    notes = decision.notes
    if falling:
        notes = (*notes, *(fallback_note(fallback, health, now) for health in falling))
    return replace(
        decision, conditions=conditions, events=events, metric_health=step.health, metrics=outcomes, notes=notes
    )


def _kept(spec: TargetSpec, previous: Sequence[MetricHealth]) -> tuple[MetricHealth, ...]:
    """The health a sync that read no metric leaves: each metric's as it was, without this sync's details."""
    before = {health.key: health for health in previous}
    kept = []
    for key in metric_keys(spec.metrics):
        last = before.get(key)
        kept.append(
            MetricHealth(key=key, failures=last.failures, since=last.since)
            if last is not None
            else MetricHealth(key=key)
        )
    return tuple(kept)


def fallback_message(fallback: FallbackSpec, falling: Sequence[MetricHealth]) -> str:
    """The Fallback condition's message: the same at every sync while the same metrics fall back to the same
    count (no failure text, no count that moves: a condition is written when its words change)."""
    names = ", ".join(health.key for health in falling)
    replicas = falling[0].fallback_replicas
    return (
        f"At least one metric is falling back: {names} failed {fallback.threshold_text()}; "
        f"it stands for {replicas} replicas (fallback.behavior {fallback.behavior.value}, "
        f"fallback.replicas {fallback.replicas})"
    )


def fallback_note(fallback: FallbackSpec, health: MetricHealth, now: float) -> str:
    """The sentence ``explain`` shows for a metric that falls back."""
    since = f"{now - health.since:g}s ago" if health.since is not None else "now"
    return (
        f"Fallback: {health.key} is failing since {since} ({health.error}); it fell back at its failed sync "
        f"{health.failures} in a row (once it failed {fallback.threshold_text()}) and stands for "
        f"{health.fallback_replicas} replicas (behavior {fallback.behavior.value})."
    )
