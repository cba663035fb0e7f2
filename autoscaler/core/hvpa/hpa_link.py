"""How the HPA engine and the HVPA decision meet in one sync.

1. The HPA engine (:func:`autoscaler.core.decision.decide`) runs first, unchanged. Its final count —
   after its stabilization windows, rate policies and [minReplicas, maxReplicas] — is the HPA source's
   proposal: HVPA's HPA total is that count × the current request per pod. The HPA's own history
   records its own proposals, so its stabilization windows work exactly as for a plain HPA.
2. :func:`~autoscaler.core.hvpa.decision.decide_hvpa` decides the replicas and the per-pod resources.
3. :func:`adopt_hvpa` makes the HPA decision carry HVPA's count: it is what the scale is set to.
   When the caller then records a successful write with
   :func:`~autoscaler.core.rescale.apply_scale_result`, the change is stored as a scale event, so
   the HPA's rate policies count every change of the replica count — also those HVPA made on the
   strength of the VPA — exactly as upstream counts every change the HPA made.

When ``hvpa.sources`` leaves the HPA out, no metric is read: :func:`hpa_off_decision` stands in for
the HPA engine's decision (branch ``hvpa-only``), carrying the state through unchanged.
"""

from __future__ import annotations

from dataclasses import replace

from autoscaler.core.decision import Decision, TargetState, kept_desired_replicas
from autoscaler.core.history import with_initial_recommendation
from autoscaler.core.hvpa.decision import HvpaDecision
from autoscaler.core.results import MetricOutcome
from autoscaler.core.spec import TargetSpec

HVPA_ONLY = "hvpa-only"


def hpa_off_decision(spec: TargetSpec, current: int, state: TargetState, now: float) -> Decision:
    """The HPA side of a sync in which the HPA is not an HVPA source."""
    history = with_initial_recommendation(state.history, current, now)
    skipped = tuple(MetricOutcome(spec=m, skipped=True) for m in spec.metrics)
    return Decision(
        current_replicas=current,
        desired_replicas=None,
        replicas=current,
        scale=False,
        branch=HVPA_ONLY,
        rescale_reason="",
        metrics=skipped,
        combined=None,
        normalization=None,
        conditions=state.conditions,
        history=history,
        status_desired_replicas=kept_desired_replicas(state.desired_replicas, current),
        last_scale_time=state.last_scale_time,
        previous_desired_replicas=state.desired_replicas,
    )


def rescale_reason(hvpa: HvpaDecision) -> str:
    """Which pairs asked for the new count (for Events and the explanation)."""
    askers = [label for label, count in hvpa.desired_by_pair.items() if count == hvpa.desired_replicas]
    count = f"{hvpa.desired_replicas} replica{'s' if hvpa.desired_replicas != 1 else ''}"
    return f"HVPA: the total of {', '.join(askers)} needs {count}" if askers else f"HVPA: {count}"


def adopt_hvpa(hpa: Decision, hvpa: HvpaDecision) -> Decision:
    """The HPA decision with HVPA's count as the one to set (record the write with apply_scale_result)."""
    if hvpa.scale:
        return replace(
            hpa,
            replicas=hvpa.replicas,
            scale=True,
            rescale_reason=rescale_reason(hvpa),
            status_desired_replicas=hvpa.replicas,
        )
    return replace(hpa, replicas=hvpa.current_replicas, scale=False, status_desired_replicas=hvpa.current_replicas)
