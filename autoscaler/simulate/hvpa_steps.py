"""The per-step scenario keys the HVPA engine reads: ``vpa``, ``lastScaleTime`` and ``clock``.

* ``vpa`` — shaped like a VerticalPodAutoscaler's ``status``: ``recommendation.containerRecommendations[]``
  (``containerName``, ``target``, ``uncappedTarget``, ``lowerBound``, ``upperBound``) and ``conditions[]``.
* ``lastScaleTime`` — seconds relative to the step's ``at`` (so ≤ 0): when HVPA last applied a
  scaling, for ``stabilizationDuration``. It overrides what the simulator carried from earlier steps.
* ``clock`` — the step's wall-clock time, RFC 3339 (``2024-05-01T22:30:00Z``), for maintenance windows.
  A step without one runs at the previous clock plus the time elapsed since that step.

The current requests per pod are the pods' container ``requests`` of the step (A21), as the
scenario's author writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from autoscaler.core.hvpa.spec import UpdateMode
from autoscaler.core.hvpa.vpa import VpaStatus, read_vpa_status
from autoscaler.core.spec import TargetSpec
from autoscaler.values.fields import REQUIRED, ErrorList, Obj
from autoscaler.values.timestamps import TimestampError, parse_rfc3339_exact

HVPA_STEP_KEYS: tuple[str, ...] = ("vpa", "lastScaleTime", "clock")


@dataclass(frozen=True, slots=True)
class HvpaStepInput:
    vpa: VpaStatus | None = None
    last_scale_time: float | None = None  # absolute scenario time
    clock: Fraction | None = None  # Unix seconds (UTC)


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
    return HvpaStepInput(vpa, at + relative if relative is not None else None, clock)
