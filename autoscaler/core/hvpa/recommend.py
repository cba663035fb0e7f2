"""Total-resource recommendations per (container, resource) pair from the two sources (step 3).

* HPA: its proposed replicas × the current request per pod. The proposal is the HPA engine's final
  count for this sync — after its stabilization windows, rate policies and min/max — so ``behavior``
  shapes the HPA source exactly as it shapes a plain HPA. HPA has no per-container view, so its total
  applies to every participating pair (A11).
* VPA: the current replicas × the VPA's per-pod ``uncappedTarget`` (else ``target``), clamped to the
  user's own bounds, when the VPA's conditions allow it (A12). A container the VPA does not list has no
  VPA source.
* Both: the larger total wins, per pair (A10).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from autoscaler.core.decision import Decision
from autoscaler.core.hvpa.current import CurrentResource
from autoscaler.core.hvpa.spec import ContainerPolicy, HvpaSpec, Source
from autoscaler.core.hvpa.vpa import ContainerRecommendation, VpaStatus, distrust_reason

# HPA decision branches whose ``replicas`` is a proposal (the others could not compute one).
_PROPOSING_BRANCHES = ("metrics", "above-max", "below-min")


@dataclass(frozen=True, slots=True, order=True)
class Pair:
    container: str
    resource: str

    @property
    def label(self) -> str:
        return f"{self.container}/{self.resource}"


@dataclass(frozen=True, slots=True)
class Sources:
    """The recommendations available this sync, and why a configured source is not."""

    hpa_replicas: int | None
    vpa: VpaStatus | None
    unavailable: tuple[str, ...] = ()


def available_sources(spec: HvpaSpec, hpa: Decision | None, vpa: VpaStatus | None) -> Sources:
    notes: list[str] = []
    hpa_replicas: int | None = None
    if Source.HPA in spec.sources:
        if hpa is not None and hpa.branch in _PROPOSING_BRANCHES:
            hpa_replicas = hpa.replicas
        else:
            why = (
                hpa.error
                if hpa is not None and hpa.error
                else ("no HPA decision" if hpa is None else f"the HPA decision proposes nothing ({hpa.branch})")
            )
            notes.append(f"HPA source unavailable: {why}")
    usable: VpaStatus | None = None
    if Source.VPA in spec.sources:
        if vpa is None:
            notes.append("VPA source unavailable: no VPA status")
        else:
            reason = distrust_reason(vpa)
            if reason is None:
                usable = vpa
            else:
                notes.append(f"VPA source unavailable: {reason} (A12)")
    return Sources(hpa_replicas, usable, tuple(notes))


def clamp_to_policy(value: Fraction, policy: ContainerPolicy, resource: str) -> Fraction:
    low, high = policy.bound("min", resource), policy.bound("max", resource)
    if high is not None and value > high:
        value = high
    if low is not None and value < low:
        value = low
    return value


@dataclass(frozen=True, slots=True)
class PairTotals:
    pair: Pair
    current: CurrentResource
    hpa_total: Fraction | None
    vpa_per_pod: Fraction | None  # the VPA's per-pod value, clamped to the user's bounds
    vpa_total: Fraction | None

    @property
    def total(self) -> Fraction | None:
        """T: the larger total of the available sources (A10), None when neither has one."""
        totals = [t for t in (self.hpa_total, self.vpa_total) if t is not None]
        return max(totals) if totals else None


def pair_totals(
    pair: Pair,
    policy: ContainerPolicy,
    current: CurrentResource,
    replicas: int,
    sources: Sources,
    recommendation: ContainerRecommendation | None,
) -> PairTotals:
    hpa_total = sources.hpa_replicas * current.request if sources.hpa_replicas is not None else None
    vpa_per_pod: Fraction | None = None
    if recommendation is not None:
        raw = recommendation.per_pod().get(pair.resource)
        if raw is not None:
            vpa_per_pod = clamp_to_policy(raw, policy, pair.resource)
    vpa_total = replicas * vpa_per_pod if vpa_per_pod is not None else None
    return PairTotals(pair, current, hpa_total, vpa_per_pod, vpa_total)
