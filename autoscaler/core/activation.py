"""The activation step of a sync (``spec.activation``): KEDA's activation phase around the HPA algorithm.

KEDA splits scaling in two (``pkg/scaling/executor/scale_scaledobjects.go``): its own executor decides
between "idle" (``idleReplicaCount``, 0 by default) and "active" (at least ``max(minReplicaCount, 1)``), by
whether a trigger is active; the HPA decides between that floor and ``maxReplicas``. Here the HPA engine's
decision (:func:`~autoscaler.core.decision.decide`, run with ``minReplicas`` raised to the floor) is taken
as it is between the bounds, and :func:`apply_activation` decides the rest, after it:

- **active** (an Object/External metric strictly above its ``activationThreshold``; with ``composite``,
  the composite value above ``activationTarget``): below the floor — at 0, whoever set it there — the
  target is scaled to the floor (KEDA's ``scaleFromZeroOrIdle``); above it, the decision stands.
  ``lastActiveTime`` is now.
- **inactive**, above ``idleReplicas``: once ``cooldownSeconds`` have passed since ``lastActiveTime``
  (strictly, as KEDA's ``Before``) — or, never active, ``initialCooldownSeconds`` since the target's
  creation — it is scaled to ``idleReplicas`` (``scaleToZeroOrIdle``); until then it is cooling down and
  the decision stands. At or below ``idleReplicas`` it stays where it is (the HPA engine's "below
  minReplicas" rule does not apply to an idle target).
- **unknown** (none above its threshold, and one failed to read): never idle on a failure — KEDA's
  ``isError`` path. Above ``idleReplicas`` the decision stands (a failed metric never causes a
  scale-down); at or below it the target stays.

Upstream's own rule for a count of 0 (:mod:`autoscaler.core.decision`: only a zero the HPA made is left by
it, a zero a person set is kept) is for targets without ``activation``; a target with it owns the step
from 0 and wakes a workload whoever scaled it to 0.

Pure: time is an argument. The ``Active`` condition is KEDA's (reasons ``ScalerActive``,
``ScalerNotActive``, ``ScalerCooldown``; ``TriggerError`` while activity is unknown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from autoscaler.core import conditions as c
from autoscaler.core.activation_outcome import Action, ActivationOutcome, ActivityReading
from autoscaler.core.activation_spec import ActivationSpec, active_floor
from autoscaler.core.conditions import Condition, find_condition, remove_condition, set_condition
from autoscaler.core.decision import NORMAL, WARNING, Decision, Event
from autoscaler.core.observation import ExternalReading, MetricFailure, MetricReading, ObjectReading
from autoscaler.core.spec import MetricSourceType, MetricSpec, TargetSpec
from autoscaler.values.quantity import format_milli

ACTIVE = "Active"
MSG_ACTIVE = "Scaling is performed because triggers are active"
MSG_NOT_ACTIVE = "Scaling is not performed because triggers are not active"
MSG_COOLDOWN = "Scaler cooling down because triggers are not active"
UNKNOWN = "Unknown"
ACTIVATION_BRANCH = "activation"  # a decision activation changed (decision.BRANCHES)


def spec_for_decide(spec: TargetSpec) -> TargetSpec:
    """The spec the HPA engine decides with: with ``activation``, ``minReplicas`` is at least 1 (the
    engine decides between the active floor and maxReplicas; idle is this step's)."""
    if spec.activation is None or spec.min_replicas >= 1:
        return spec
    return replace(spec, min_replicas=1)


def activity_readings(
    spec: TargetSpec, metrics: Sequence[MetricSpec], readings: Sequence[MetricReading]
) -> tuple[ActivityReading, ...]:
    """The Object/External metrics of ``metrics`` (the ones the HPA engine sees: with ``composite``, the
    composite in place of its inputs) with their values, each against its activation threshold."""
    composite = spec.composite
    out: list[ActivityReading] = []
    for metric, reading in zip(metrics, readings, strict=True):
        if metric.is_pod_metric:
            continue
        threshold = metric.activation_threshold
        if composite is not None and metric.type is MetricSourceType.EXTERNAL and metric.name == composite.name:
            threshold = composite.activation_target
        limit = threshold.milli_value() if threshold is not None else 0
        if isinstance(reading, ObjectReading):
            out.append(ActivityReading(metric.name, reading.value, limit))
        elif isinstance(reading, ExternalReading):
            out.append(ActivityReading(metric.name, sum(reading.values), limit))
        elif isinstance(reading, MetricFailure):
            out.append(ActivityReading(metric.name, None, limit, reading.message))
        else:  # not a reading of one value: the metric is not read as one, so it tells nothing
            out.append(ActivityReading(metric.name, None, limit, "not a value metric's reading"))
    return tuple(out)


def cooldown_end(activation: ActivationSpec, last_active_time: float | None, created: float | None) -> float | None:
    """When an inactive target may go idle: ``cooldownSeconds`` after it was last active; never active,
    ``initialCooldownSeconds`` after its creation (None: no creation time known, so at once)."""
    if last_active_time is not None:
        return last_active_time + activation.cooldown_seconds
    if created is not None:
        return created + activation.initial_cooldown_seconds
    return None


def apply_activation(
    spec: TargetSpec,
    readings: Sequence[ActivityReading],
    decision: Decision,
    last_active_time: float | None,
    created: float | None,
    now: float,
) -> Decision:
    """``decision`` (the HPA engine's, made with :func:`spec_for_decide`) with the activation step applied;
    see the module docstring. ``spec`` has ``activation``."""
    activation = spec.activation
    assert activation is not None
    floor = active_floor(spec.min_replicas)
    idle = activation.idle_replicas
    current = decision.current_replicas
    active: bool | None = (
        True if any(r.active for r in readings) else (None if any(r.value is None for r in readings) else False)
    )
    conditions = decision.conditions
    if active:
        last_active_time = now
        conditions = set_condition(conditions, ACTIVE, c.TRUE, "ScalerActive", MSG_ACTIVE, now)
        if current < floor:
            triggers = ", ".join(r.name for r in readings if r.active)
            outcome = ActivationOutcome(
                active=True,
                action=Action.WAKE,
                readings=tuple(readings),
                last_active_time=now,
                cooldown_ends=None,
                floor=floor,
                idle_replicas=idle,
            )
            return _scaled(decision, outcome, conditions, floor, f"activated: {triggers} above activation threshold")
        return _kept(
            decision,
            ActivationOutcome(
                active=True,
                action=Action.NONE,
                readings=tuple(readings),
                last_active_time=now,
                cooldown_ends=None,
                floor=floor,
                idle_replicas=idle,
            ),
            conditions,
        )
    ends = cooldown_end(activation, last_active_time, created)
    if active is None:
        failed = ", ".join(r.name for r in readings if r.value is None)
        message = f"activity unknown: {failed} could not be read and no metric is active; no scale to idle on a failure"
        conditions = set_condition(conditions, ACTIVE, UNKNOWN, "TriggerError", message, now)
        action = Action.STAY_IDLE if current <= idle else Action.NONE
    elif current <= idle:
        conditions = set_condition(conditions, ACTIVE, c.FALSE, "ScalerNotActive", MSG_NOT_ACTIVE, now)
        action = Action.STAY_IDLE
    elif ends is None or ends < now:
        conditions = set_condition(conditions, ACTIVE, c.FALSE, "ScalerNotActive", MSG_NOT_ACTIVE, now)
        outcome = ActivationOutcome(
            active=False,
            action=Action.IDLE,
            readings=tuple(readings),
            last_active_time=last_active_time,
            cooldown_ends=ends,
            floor=floor,
            idle_replicas=idle,
        )
        return _scaled(decision, outcome, conditions, idle, "deactivated: no metric above its activation threshold")
    else:
        conditions = set_condition(conditions, ACTIVE, c.FALSE, "ScalerCooldown", MSG_COOLDOWN, now)
        action = Action.COOLING_DOWN
    outcome = ActivationOutcome(
        active=active,
        action=action,
        readings=tuple(readings),
        last_active_time=last_active_time,
        cooldown_ends=ends,
        floor=floor,
        idle_replicas=idle,
    )
    if action is Action.STAY_IDLE:
        return _held(decision, outcome, conditions)
    return _kept(decision, outcome, conditions)


def without_activation(decision: Decision) -> Decision:
    """The decision of a target without ``activation``: an ``Active`` condition left from when it had one
    is removed (it would otherwise stay, stale, in every status)."""
    if find_condition(decision.conditions, ACTIVE) is None:
        return decision
    return replace(decision, conditions=remove_condition(decision.conditions, ACTIVE))


def _kept(decision: Decision, outcome: ActivationOutcome, conditions: tuple[Condition, ...]) -> Decision:
    """The HPA engine's decision stands."""
    return replace(decision, conditions=conditions, activation=outcome)


def _held(decision: Decision, outcome: ActivationOutcome, conditions: tuple[Condition, ...]) -> Decision:
    """The target stays at its count (at or below idle): whatever the HPA engine proposed is not done."""
    if not decision.scale:
        return _kept(decision, outcome, conditions)
    current = decision.current_replicas
    return replace(
        decision,
        replicas=current,
        scale=False,
        branch=ACTIVATION_BRANCH,
        rescale_reason="",
        normalization=None,
        status_desired_replicas=current,
        conditions=conditions,
        activation=outcome,
    )


def _scaled(
    decision: Decision, outcome: ActivationOutcome, conditions: tuple[Condition, ...], replicas: int, reason: str
) -> Decision:
    """The target scaled by activation to ``replicas`` (the floor when waking, idle when deactivating)."""
    scale = replicas != decision.current_replicas
    return replace(
        decision,
        desired_replicas=replicas,
        replicas=replicas,
        scale=scale,
        branch=ACTIVATION_BRANCH,
        rescale_reason=reason if scale else "",
        normalization=None,
        status_desired_replicas=replicas,
        conditions=conditions,
        activation=outcome,
    )


def activation_events(decision: Decision, spec: TargetSpec) -> tuple[Event, ...]:
    """KEDA's Events for activation's own scale, once its write is done (``decision.applied``):
    ``Activated``/``Deactivated``, or ``ActivationFailed``/``DeactivationFailed`` when the write failed."""
    outcome = decision.activation
    if outcome is None or outcome.action not in (Action.WAKE, Action.IDLE) or decision.applied is None:
        return ()
    if not decision.scale:
        return ()
    ref = spec.scale_target_ref
    moved = f"{ref.kind} {ref.name} from {decision.current_replicas} to {decision.replicas}"
    if outcome.action is Action.WAKE:
        if decision.applied:
            return (Event(NORMAL, "Activated", f"Scaled {moved}, triggered by {';'.join(outcome.triggers)}"),)
        return (Event(WARNING, "ActivationFailed", f"Failed to scale {moved}"),)
    if decision.applied:
        return (Event(NORMAL, "Deactivated", f"Deactivated {moved}"),)
    return (Event(WARNING, "DeactivationFailed", f"Failed to deactivate {moved}"),)


def activation_lines(outcome: ActivationOutcome, current: int, now: float) -> list[str]:
    """The activation step in words, for :func:`~autoscaler.core.explain.explain_lines`."""
    values = "; ".join(_reading_text(r) for r in outcome.readings)
    lines = [f"Activation: {values}."]
    if outcome.action is Action.WAKE:
        lines.append(
            f"Active below max(minReplicas, 1) = {outcome.floor}: scaled to {outcome.floor} "
            f"(from {current}, whoever set it), the HPA algorithm decides from there."
        )
    elif outcome.action is Action.IDLE:
        since = _since(outcome, now)
        lines.append(f"Not active{since}, the cooldown is over: scaled to idleReplicas {outcome.idle_replicas}.")
    elif outcome.action is Action.COOLING_DOWN:
        ends = outcome.cooldown_ends
        left = f" for {ends - now:g}s more" if ends is not None else ""
        lines.append(f"Not active{_since(outcome, now)}: cooling down{left}; the HPA algorithm's decision stands.")
    elif outcome.active is None:
        stays = f"stays at {current} (idle)" if outcome.action is Action.STAY_IDLE else "the HPA algorithm decides"
        lines.append(f"Activity unknown ({', '.join(outcome.failed)} failed): {stays}; no scale to idle on a failure.")
    elif outcome.action is Action.STAY_IDLE:
        lines.append(f"Not active: stays idle at {current} (idleReplicas {outcome.idle_replicas}).")
    else:
        lines.append(f"Active: the HPA algorithm decides, from max(minReplicas, 1) = {outcome.floor} up.")
    return lines


def _reading_text(reading: ActivityReading) -> str:
    threshold = format_milli(reading.threshold)
    if reading.value is None:
        return f"{reading.name} FAILED ({reading.error}) against activation threshold {threshold}"
    verdict = "active" if reading.active else "not active"
    relation = ">" if reading.active else "≤"
    return f"{reading.name} {format_milli(reading.value)} {relation} {threshold}: {verdict}"


def _since(outcome: ActivationOutcome, now: float) -> str:
    last = outcome.last_active_time
    return f" since {now - last:g}s" if last is not None else " since the target was created"
