"""``stabilizationMode: WindowMax``: per-pod requests bounded by the recommendations of a window, as the HPA's.

EP-0001's ``stabilizationDuration`` counts from the last applied scaling (``SinceLastScaling``), so a
recommendation that swings back and forth by more than minChange moves the requests on every window. With
``hvpa.scaleDown.stabilizationMode: WindowMax`` a vertical scale-down goes only to the *largest* per-pod
recommendation seen within ``scaleDown.stabilizationDuration``; with ``hvpa.scaleUp.stabilizationMode:
WindowMax`` a scale-up goes only to the *smallest* one within ``scaleUp.stabilizationDuration`` — the HPA's
scale-down and scale-up windows, per (container, resource) pair. A direction in WindowMax mode has no
since-last-scaling gate: the window takes its place.

A recommendation is the per-pod request this sync proposes for the pair (rounded, before the window), and
it is compared only with those made for the same replica count: a request sized for 5 pods says nothing
about one sized for 4. Each is kept for the longest WindowMax duration (a sample exactly that old has left
the window, as the HPA's cutoff), so the history stays bounded; the service keeps it in ``status.hvpa``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from autoscaler.core.hvpa.spec import HvpaSpec, ScaleType, StabilizationMode, amount_text


@dataclass(frozen=True, slots=True)
class Recommendation:
    """One pair's per-pod proposal at one sync, for ``replicas`` pods."""

    at: float
    container: str
    resource: str
    replicas: int
    request: Fraction


@dataclass(frozen=True, slots=True)
class Stabilized:
    """The request after the window, and why it differs from the proposal (None: it does not)."""

    request: Fraction
    reason: str | None = None


def window_max(scale_type: ScaleType) -> bool:
    return scale_type.stabilization_mode is StabilizationMode.WINDOW_MAX


def history_horizon(hvpa: HvpaSpec) -> Fraction | None:
    """How long recommendations are kept: the longest WindowMax duration; None when no direction uses one."""
    durations = [t.stabilization_seconds for t in (hvpa.scale_up, hvpa.scale_down) if window_max(t)]
    return max(durations) if durations else None


def within(sample: Recommendation, now: float, seconds: Fraction) -> bool:
    """Whether ``sample`` is inside the window that ends now: younger than ``seconds``."""
    return now - sample.at < seconds


def stabilize(
    hvpa: HvpaSpec,
    history: Sequence[Recommendation],
    proposal: Recommendation,
    current_request: Fraction,
    now: float,
) -> Stabilized:
    """The per-pod request for ``proposal``'s pair once the WindowMax windows have had their say.

    Like the HPA's: ``up`` = the smallest recommendation within the scale-up window (the proposal itself
    when that direction is not WindowMax), ``down`` = the largest within the scale-down window; the request
    rises only to ``up`` and falls only to ``down``, else it stays where it is."""
    same = [
        s
        for s in history
        if (s.container, s.resource, s.replicas) == (proposal.container, proposal.resource, proposal.replicas)
    ]
    resource = proposal.resource
    if proposal.request < current_request and window_max(hvpa.scale_down):
        seconds = hvpa.scale_down.stabilization_seconds
        down = max([s.request for s in same if within(s, now, seconds)] + [proposal.request])
        value = min(current_request, down)
        if value != proposal.request:
            return Stabilized(value, _held(resource, value, "largest", hvpa.scale_down, value == current_request))
    if proposal.request > current_request and window_max(hvpa.scale_up):
        seconds = hvpa.scale_up.stabilization_seconds
        up = min([s.request for s in same if within(s, now, seconds)] + [proposal.request])
        value = max(current_request, up)
        if value != proposal.request:
            return Stabilized(value, _held(resource, value, "smallest", hvpa.scale_up, value == current_request))
    return Stabilized(proposal.request)


def _held(resource: str, value: Fraction, which: str, scale_type: ScaleType, unchanged: bool) -> str:
    verb = "held at" if unchanged else "limited to"
    last = scale_type.stabilization_text
    return f"requests {verb} {amount_text(resource, value)}: the {which} recommendation in the last {last}"


def recorded(
    hvpa: HvpaSpec, history: Sequence[Recommendation], new: Sequence[Recommendation], now: float
) -> tuple[Recommendation, ...]:
    """The history to carry: the samples still inside the longest WindowMax window, then this sync's."""
    horizon = history_horizon(hvpa)
    if horizon is None:
        return ()
    return tuple(s for s in (*history, *new) if within(s, now, horizon))
