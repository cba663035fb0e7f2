"""The per-step scenario keys the HVPA engine reads: ``vpa``, ``lastScaleTime`` and ``clock``.

* ``vpa`` — shaped like a VerticalPodAutoscaler's ``status``: ``recommendation.containerRecommendations[]``
  (``containerName``, ``target``, ``uncappedTarget``, ``lowerBound``, ``upperBound``) and ``conditions[]``.
* ``lastScaleTime`` — seconds relative to the step's ``at`` (so ≤ 0): when HVPA last applied a
  scaling, for ``stabilizationDuration``. It overrides what the simulator carried from earlier steps.
* ``demand`` — a closed loop (instead of ``vpa``): the total each container needs, per resource
  (``{main: {cpu: 5.7}}``). The VPA recommends demand / the step's replicas; a step without ``pods`` gets
  that many pods carrying the requests the engine last applied (the first step's pods, before any).
* ``clock`` — the step's wall-clock time, RFC 3339 (``2024-05-01T22:30:00Z``), for maintenance windows.
  A step without one runs at the previous clock plus the time elapsed since that step.

The current requests per pod are the pods' container ``requests`` of the step (A21), as the
scenario's author writes them (or, in a closed loop, as the engine left them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from autoscaler.core.hvpa.containers_parse import read_resource_list
from autoscaler.core.hvpa.decision import HvpaDecision
from autoscaler.core.hvpa.spec import UpdateMode
from autoscaler.core.hvpa.vpa import ContainerRecommendation, VpaCondition, VpaStatus, read_vpa_status
from autoscaler.core.observation import ContainerInfo, PodInfo
from autoscaler.core.spec import TargetSpec
from autoscaler.values.fields import REQUIRED, ErrorList, Obj
from autoscaler.values.timestamps import TimestampError, parse_rfc3339_exact

HVPA_STEP_KEYS: tuple[str, ...] = ("vpa", "demand", "lastScaleTime", "clock")
Demand = Mapping[str, Mapping[str, Fraction]]  # container → resource → the total it needs


@dataclass(frozen=True, slots=True)
class HvpaStepInput:
    vpa: VpaStatus | None = None
    last_scale_time: float | None = None  # absolute scenario time
    clock: Fraction | None = None  # Unix seconds (UTC)
    demand: Demand | None = None  # a closed loop: the VPA follows demand / replicas


@dataclass
class ClockCarry:
    """The last step's clock, so that later steps without ``clock`` keep running from it."""

    at: float | None = None
    clock: Fraction | None = None


def read_hvpa_step(
    extra: Mapping[str, Any],
    path: str,
    at: float,
    spec: TargetSpec | None,
    first: bool,
    carry: ClockCarry,
    errors: ErrorList,
) -> HvpaStepInput | None:
    """The HVPA keys of the step at ``path`` (``extra`` holds them raw). ``spec`` None: the spec is invalid
    (its own errors are reported), so only the keys' shapes are checked."""
    obj = Obj(extra, path, errors)
    errors_before = len(errors.items)
    if spec is not None and spec.hvpa is None:
        for key in HVPA_STEP_KEYS:
            if key in extra:
                obj.error(key, "Forbidden: only read when the spec has an hvpa section")
        return None
    vpa = read_vpa_status(obj.raw("vpa"), obj.at("vpa"), errors) if obj.has("vpa") else None
    demand = _demand(obj) if obj.has("demand") else None
    if vpa is not None and obj.has("demand"):
        obj.error("demand", "Forbidden: a step gives either vpa or demand (the VPA recommends demand / replicas)")
    relative = obj.number("lastScaleTime", maximum=0)
    clock: Fraction | None = None
    text = obj.string("clock", non_empty=True)
    if text is not None:
        try:
            clock = parse_rfc3339_exact(text)
        except TimestampError as exc:
            obj.error("clock", str(exc))
    elif carry.clock is not None and carry.at is not None:
        clock = carry.clock + Fraction(at - carry.at)
    if (
        first
        and clock is None
        and spec is not None
        and spec.hvpa is not None
        and any(t.update_mode is UpdateMode.MAINTENANCE_WINDOW for t in (spec.hvpa.scale_up, spec.hvpa.scale_down))
    ):
        obj.error(
            "clock",
            f"{REQUIRED}: updateMode MaintenanceWindow needs the time of day; give the first step "
            f"a clock (later steps follow it)",
        )
    carry.at, carry.clock = at, clock
    if len(errors.items) > errors_before:
        return None
    return HvpaStepInput(vpa, at + relative if relative is not None else None, clock, demand)


def _demand(obj: Obj) -> Demand | None:
    section = obj.obj("demand")
    raw = obj.raw("demand")
    if section is None or not isinstance(raw, Mapping):
        return None
    result: dict[str, Mapping[str, Fraction]] = {}
    for container in raw:
        amounts = read_resource_list(section.obj(str(container), required=True))
        if amounts is None:
            return None
        result[str(container)] = {resource: quantity.value for resource, quantity in amounts.items()}
    section.finish()
    return result


PROVIDED = (VpaCondition("RecommendationProvided", "True"),)


def demand_vpa(demand: Demand, replicas: int) -> VpaStatus:
    """What a VPA recommends for a load that needs ``demand`` in total, spread over ``replicas`` pods."""
    per_pod = [
        ContainerRecommendation(name, {r: total / max(replicas, 1) for r, total in amounts.items()})
        for name, amounts in demand.items()
    ]
    return VpaStatus(tuple(per_pod), PROVIDED)


def carried_requests(pods: Sequence[PodInfo], decision: HvpaDecision | None) -> dict[str, dict[str, int]]:
    """The per-pod requests (milli) the next step's pods carry: what the decision applied, else the pods'."""
    result = {c.name: dict(c.requests) for c in (pods[0].containers if pods else ())}
    if decision is not None and decision.applied:
        for container, amounts in decision.requests.items():
            for resource, value in amounts.items():
                result.setdefault(container, {})[resource] = math.ceil(value * 1000)
    return result


def closed_loop_pods(requests: Mapping[str, Mapping[str, int]], replicas: int) -> tuple[PodInfo, ...]:
    containers = tuple(ContainerInfo(name, dict(amounts)) for name, amounts in requests.items())
    return tuple(PodInfo(name=f"pod-{index}", containers=containers) for index in range(replicas))
