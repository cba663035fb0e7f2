"""Recordings of ``autoscaler run --record FILE``, and the scenario that replays one target's syncs.

The service appends one JSON line per sync (:func:`sync_line`): the target, the spec and controller
settings it decided with, the state the sync started from and the one it left, what it observed — as a
scenario step (the scale, the pods, and with the keys of :mod:`autoscaler.simulate.observed` exactly
what it read) — what it decided, and how its writes went. :func:`scenario_from_recording` turns one
target's lines into a scenario; ``autoscaler simulate`` on it decides exactly what the service decided,
step for step (docs/simulate.md, "Replaying a recording")::

    autoscaler scenario --from-recording RECORDING.jsonl --target NAMESPACE/NAME > scenario.yaml

Times are written as the service had them: Unix seconds, steps at their absolute times, a step's pod and
sample times relative to its ``at`` (exact: both are close Unix times, so their difference is exact).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from autoscaler.core.conditions import Condition
from autoscaler.core.decision import Decision, TargetState
from autoscaler.core.observation import (
    ConditionStatus,
    ContainerInfo,
    ExternalReading,
    MetricFailure,
    MetricReading,
    ObjectReading,
    Observation,
    PodInfo,
    PodsReading,
    ResourceReading,
)
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.status import condition_json, history_json
from autoscaler.core.sync import SyncOutcome, SyncPlan, WriteResults
from autoscaler.simulate.annotation_steps import ANNOTATIONS_STEP_KEY, PAUSE_STATUS_KEY, pause_json
from autoscaler.simulate.health_status import METRIC_HEALTH_KEY, metric_health_json

LAST_ACTIVE_TIME = "lastActiveTime"  # a state's last active time (spec.activation), the scenario's status key


class RecordingError(ValueError):
    """The recording cannot be replayed as a scenario; the message says why."""


def sync_line(
    target: str,
    spec: Mapping[str, Any],
    settings: ControllerSettings,
    plan: SyncPlan,
    observation: Observation,
    results: WriteResults,
    outcome: SyncOutcome,
    annotations: tuple[tuple[str, str], ...] = (),
) -> dict[str, Any]:
    """One sync of ``target`` ("namespace/name"), as a recording line; ``annotations``, the target's pause
    annotations the sync read (its step's ``annotations``, when it has any)."""
    at = plan.now
    step = step_document(observation, at)
    if annotations:
        step[ANNOTATIONS_STEP_KEY] = dict(annotations)
    return {
        "target": target,
        "at": at,
        "spec": spec,
        "settings": settings_document(settings),
        "state": state_document(plan.state.target),
        "step": step,
        "decision": decision_document(outcome.decision),
        "writes": {"scale": results.scale, "scaleError": results.scale_error, "vpa": results.vpa},
        "next": state_document(outcome.state.target),
    }


def settings_document(settings: ControllerSettings) -> dict[str, Any]:
    """The scenario's ``settings``."""
    return {
        "tolerance": {"scaleUp": settings.tolerances.scale_up, "scaleDown": settings.tolerances.scale_down},
        "cpuInitializationPeriod": settings.cpu_initialization_period,
        "initialReadinessDelay": settings.initial_readiness_delay,
        "downscaleStabilizationWindow": settings.downscale_stabilization_window,
    }


def state_document(state: TargetState) -> dict[str, Any]:
    """The scenario's ``history`` and ``status`` for a target in ``state``."""
    document = {
        "history": history_json(state.history, _same) if state.history is not None else None,
        "conditions": [condition_json(c, _same) for c in state.conditions],
        "desiredReplicas": state.desired_replicas,
        "lastScaleTime": state.last_scale_time,
    }
    if state.metric_health:  # spec.fallback's (a key only then: the recordings of other targets are as they were)
        document[METRIC_HEALTH_KEY] = metric_health_json(state.metric_health)
    if state.last_active_time is not None:  # spec.activation's (a key only then, as metricHealth)
        document[LAST_ACTIVE_TIME] = state.last_active_time
    if state.pause is not None:  # a paused target's (a key only then)
        document[PAUSE_STATUS_KEY] = pause_json(state.pause)
    return document


def decision_document(decision: Decision) -> dict[str, Any]:
    """What the sync decided, in the keys ``simulate --output json`` uses for them."""
    return {
        "currentReplicas": decision.current_replicas,
        "desiredReplicas": decision.desired_replicas,
        "replicas": decision.replicas,
        "scaled": decision.scale,
        "limitedBy": decision.limited_by,
        "rescaleReason": decision.rescale_reason or None,
        "conditions": [_condition(c) for c in decision.conditions],
        "events": [{"type": e.type, "reason": e.reason, "message": e.message} for e in decision.events],
    }


def step_document(observation: Observation, at: float) -> dict[str, Any]:
    """What a sync at ``at`` observed, as a scenario step."""
    scale = observation.scale
    step: dict[str, Any] = {
        "at": at,
        "replicas": scale.spec_replicas,
        "statusReplicas": scale.status_replicas,
        "selector": scale.selector,
    }
    if observation.selector_problem is not None:
        step["selectorProblem"] = {
            "reason": observation.selector_problem.reason,
            "message": observation.selector_problem.message,
        }
    step["pods"] = [_pod(pod, at) for pod in observation.pods]
    step["readings"] = [_reading(reading, at) for reading in observation.readings]
    return step


_READY: dict[ConditionStatus | None, object] = {
    ConditionStatus.TRUE: True,
    ConditionStatus.FALSE: False,
    ConditionStatus.UNKNOWN: "Unknown",
    None: None,
}


def _pod(pod: PodInfo, at: float) -> dict[str, Any]:
    document: dict[str, Any] = {
        "name": pod.name,
        "phase": pod.phase.value,
        "ready": _READY[pod.ready],
        "readySince": _relative(pod.ready_since, at),
        "startedAt": _relative(pod.started_at, at),
        "deleting": pod.deleting,
        "containers": [_container(c) for c in pod.containers],
    }
    if pod.pod_requests is not None:
        document["requests"] = _amounts(pod.pod_requests)
    return document


def _container(container: ContainerInfo) -> dict[str, Any]:
    document: dict[str, Any] = {"name": container.name, "requests": _amounts(container.requests)}
    if container.limits:
        document["limits"] = _amounts(container.limits)
    if container.sidecar:
        document["sidecar"] = True
    return document


def _reading(reading: MetricReading, at: float) -> dict[str, Any]:
    if isinstance(reading, MetricFailure):
        return {"failed": reading.message}
    if isinstance(reading, ResourceReading):
        return {
            "usage": {
                pod: {
                    "containers": {c: None if v is None else _milli(v) for c, v in u.containers.items()},
                    "at": _relative(u.timestamp, at),
                    "window": u.window,
                }
                for pod, u in reading.pods.items()
            }
        }
    if isinstance(reading, PodsReading):
        return {
            "pods": {
                pod: {"value": _milli(s.value), "at": _relative(s.timestamp, at), "window": s.window}
                for pod, s in reading.pods.items()
            }
        }
    if isinstance(reading, ObjectReading):
        return {"value": _milli(reading.value), "at": _relative(reading.timestamp, at)}
    assert isinstance(reading, ExternalReading)
    return {"values": [_milli(v) for v in reading.values], "at": _relative(reading.timestamp, at)}


def _condition(condition: Condition) -> dict[str, Any]:
    return condition_json(condition, _same)


def _same(value: float) -> float:
    return value


def _milli(value: int) -> str:
    return f"{value}m"


def _amounts(amounts: Mapping[str, int]) -> dict[str, str]:
    return {resource: _milli(milli) for resource, milli in amounts.items()}


def _relative(moment: float | None, at: float) -> float | None:
    """``moment`` relative to ``at``, such that ``at + relative`` gives ``moment`` back exactly."""
    if moment is None:
        return None
    relative = moment - at
    if at + relative != moment:
        raise RecordingError(f"{moment!r} cannot be written relative to {at!r} exactly")
    return relative


# -- the scenario --------------------------------------------------------------------------------------


def read_lines(text: str, source: str) -> list[dict[str, Any]]:
    """The recording's lines (a partly written last line, from a process killed mid-write, is left out)."""
    lines: list[dict[str, Any]] = []
    raw = text.splitlines()
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            if number == len(raw):
                break
            raise RecordingError(f"{source}:{number}: not a JSON line") from None
        if not isinstance(value, dict) or not isinstance(value.get("target"), str):
            raise RecordingError(f"{source}:{number}: not a sync of a recording")
        lines.append(value)
    return lines


def targets_in(lines: Iterable[Mapping[str, Any]]) -> list[str]:
    return sorted({str(line["target"]) for line in lines})


def scenario_from_recording(lines: Sequence[Mapping[str, Any]], target: str) -> dict[str, Any]:
    """The scenario that replays ``target``'s recorded syncs; :class:`RecordingError` when it cannot."""
    syncs = [line for line in lines if line.get("target") == target]
    if not syncs:
        known = ", ".join(targets_in(lines)) or "none"
        raise RecordingError(f"the recording has no sync of {target} (it has: {known})")
    first = syncs[0]
    if isinstance(first.get("spec"), Mapping) and first["spec"].get("hvpa") is not None:
        raise RecordingError(
            f"{target} has an hvpa section: a scenario cannot express everything HVPA reads in "
            "the service (the VPA's container policies, the pod template), so it is not replayed"
        )
    previous: Mapping[str, Any] | None = None
    for sync in syncs:
        at = sync.get("at")
        if sync.get("spec") != first.get("spec") or sync.get("settings") != first.get("settings"):
            raise RecordingError(
                f"{target}: the spec or the settings changed at {at}: a scenario has one of each "
                "(replay the syncs before and after the change from separate recordings)"
            )
        writes = sync.get("writes") or {}
        if sync.get("decision", {}).get("scaled") and writes.get("scale") is not True:
            why = (
                "the service ran with --dry-run"
                if writes.get("scale") is None
                else f"the write failed: {writes.get('scaleError')}"
            )
            raise RecordingError(
                f"{target}: the scale decided at {at} was not written ({why}); a scenario replays every write as made"
            )
        if previous is not None and sync.get("state") != previous.get("next"):
            raise RecordingError(
                f"{target}: the sync at {at} did not start from the state the sync before it "
                "left (a sync in between could not read the scale, or the reconciler restarted): "
                "the recording cannot be replayed as one scenario"
            )
        previous = sync
    state = first["state"]
    scenario: dict[str, Any] = {"spec": first["spec"], "settings": first["settings"]}
    if state.get("history") is not None:
        scenario["history"] = state["history"]
    keys = ("conditions", "desiredReplicas", "lastScaleTime", METRIC_HEALTH_KEY, LAST_ACTIVE_TIME, PAUSE_STATUS_KEY)
    status = {key: state[key] for key in keys if state.get(key) is not None and state.get(key) != []}
    if status:
        scenario["status"] = status
    steps = [sync["step"] for sync in syncs]
    if any(ANNOTATIONS_STEP_KEY in step for step in steps):  # a step's annotations stay until another's: say none
        steps = [step if ANNOTATIONS_STEP_KEY in step else {**step, ANNOTATIONS_STEP_KEY: {}} for step in steps]
    scenario["steps"] = steps
    return scenario
