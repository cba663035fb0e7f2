"""An HVPA decision in words, and in the JSON shape ``autoscaler simulate`` and the service both show."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from autoscaler.core.hvpa.decision import HvpaDecision, PairOutcome
from autoscaler.core.hvpa.gates import BlockReason
from autoscaler.core.hvpa.intervals import EffectiveInterval, interval_at
from autoscaler.core.hvpa.spec import MEMORY, amount_text
from autoscaler.core.hvpa.vpa_patch import quantity_text


def hvpa_json(decision: HvpaDecision) -> dict[str, Any]:
    """The per-step ``hvpa`` object: exactly these keys."""
    return {
        "desiredReplicas": decision.desired_replicas,
        "desiredByPair": dict(decision.desired_by_pair),
        "scaleInPostponed": decision.scale_in_postponed,
        "blocked": decision.blocked.value if decision.blocked is not None else None,
        "requests": _amounts_json(decision.requests),
        "limits": _amounts_json(decision.limits),
        "vpaPatch": decision.vpa_patch,
    }


def _amounts_json(amounts: Any) -> dict[str, dict[str, str]]:
    return {
        container: {resource: quantity_text(resource, value) for resource, value in values.items()}
        for container, values in amounts.items()
    }


def readable_amount(resource: str, value: Fraction) -> str:
    """An amount for a table: exact when it has a unit (``500m``, ``6Gi``, ``1229Mi``), else memory rounded
    to the nearest MiB and marked so (``≈2591Mi``) rather than a raw byte count (the VPA patch keeps the
    exact value)."""
    exact = quantity_text(resource, value)
    if resource != MEMORY or not exact.isdigit() or value < 2**20:
        return exact
    return f"≈{round(value / 2**20)}Mi"


def requests_text(decision: HvpaDecision) -> str:
    """``main 1500m/6Gi`` per container (requests per pod), for the simulator's table."""
    parts = []
    for container, values in decision.requests.items():
        parts.append(f"{container} " + "/".join(readable_amount(r, v) for r, v in values.items()))
    return ", ".join(parts)


def _mapping_text(
    intervals: Sequence[EffectiveInterval], current: int, total: Fraction, resource: str, desired: int
) -> str:
    def show(value: Fraction) -> str:
        return amount_text(resource, value)

    here = interval_at(intervals, current)
    if here is None:
        return f"{current} replicas is outside the intervals: the smallest count whose MAX holds it, {desired} (A8)"
    if total > here.max_total:
        target = interval_at(intervals, desired)
        above = (
            f"; MAX({desired}) = {show(target.max_total)}"
            if target is not None and total <= target.max_total
            else " (beyond the last interval, A9)"
        )
        return f"above MAX({current}) = {show(here.max_total)} → {desired}{above}"
    if total >= here.min_total:
        return f"within [MIN({current}) = {show(here.min_total)}, MAX({current}) = {show(here.max_total)}] → stay"
    target = interval_at(intervals, desired)
    floor = f"; MIN({desired}) = {show(target.min_total)}" if target is not None else ""
    return f"below MIN({current}) = {show(here.min_total)} → {desired}{floor} (A7)"


def _pair_line(outcome: PairOutcome, current: int, hpa_replicas: int | None) -> str:
    resource = outcome.pair.resource
    totals = outcome.totals
    request = totals.current.request
    head = f"{outcome.pair.label}: request {amount_text(resource, request)} per pod ({totals.current.request_from})"
    if totals.total is None or outcome.desired is None:
        return f"{head}; no recommendation, left as it is"
    parts = []
    if totals.hpa_total is not None:
        parts.append(
            f"hpa {hpa_replicas} × {amount_text(resource, request)} = {amount_text(resource, totals.hpa_total)}"
        )
    if totals.vpa_total is not None and totals.vpa_per_pod is not None:
        parts.append(
            f"vpa {current} × {amount_text(resource, totals.vpa_per_pod)} = {amount_text(resource, totals.vpa_total)}"
        )
    mapping = _mapping_text(outcome.intervals, current, totals.total, resource, outcome.desired)
    return f"{head}; total {amount_text(resource, totals.total)} ({', '.join(parts)}): {mapping}"


def explain_hvpa(decision: HvpaDecision) -> list[str]:
    """The decision, sentence by sentence."""
    current = decision.current_replicas
    lines = []
    sources = decision.sources
    if sources is not None:
        if sources.hpa_replicas is not None:
            lines.append(f"HVPA: the HPA source proposes {sources.hpa_replicas} replicas.")
        lines.extend(f"HVPA: {note}." for note in sources.unavailable)
    hpa_replicas = sources.hpa_replicas if sources is not None else None
    lines.extend(f"HVPA {_pair_line(outcome, current, hpa_replicas)}." for outcome in decision.pairs)
    if decision.inactive is not None:
        lines.append(f"HVPA: no decision: {decision.inactive}.")
        return lines
    largest = max(decision.desired_by_pair.values())
    lines.append(
        f"HVPA: desired replicas {largest} (the largest over pairs)"
        + (
            f", clamped to {decision.desired_replicas}."
            if not decision.scale_in_postponed and largest != decision.desired_replicas
            else "."
        )
    )
    if decision.scale_in_postponed:
        lines.append(f"HVPA: scale-in to {largest} postponed, {current} replicas kept (A14).")
    sized = [o for o in decision.pairs if o.sizing is not None]
    if sized:
        lines.append(
            "HVPA per pod: "
            + "; ".join(
                f"{o.pair.label} {amount_text(o.pair.resource, o.totals.current.request)} → "
                f"{amount_text(o.pair.resource, o.request)} ({o.sizing.rule}"
                + (f"; {o.stabilized}" if o.stabilized else "")
                + ")"
                for o in sized
                if o.sizing
            )
            + "."
        )
    if decision.blocked is not None:
        verb = "Held" if decision.blocked is BlockReason.PARADOXICAL_SCALING else "Blocked"
        lines.append(f"HVPA {verb} ({decision.blocked.value}): {decision.block_detail}.")
    elif decision.direction is None:
        lines.append("HVPA: nothing to change.")
    else:
        action = [f"scale {current} → {decision.replicas}"] if decision.scale else []
        if decision.vpa_patch is not None:
            action.append("pin the VPA containerPolicies")
        lines.append(f"HVPA applies ({decision.direction.value}): {', '.join(action) or 'no write needed'}.")
    if decision.vpa_patch is not None and not decision.applied:
        lines.append("HVPA: the VPA pins are re-set to the current requests (they had drifted).")
    return lines
