"""A decision in words: what each metric said, what was set aside, and what limited the result.

``explain_lines`` turns a :class:`~autoscaler.core.decision.Decision` into short sentences a person
can read in ``autoscaler simulate``, in logs, in the target's status and in ``autoscaler explain``.
Times are given relative to the decision ("45s ago"), so the text reads the same everywhere.
"""

from __future__ import annotations

import math

from autoscaler.core.activation import activation_lines
from autoscaler.core.behavior import Normalization, RateLimit
from autoscaler.core.branches import BRANCHES
from autoscaler.core.decision import Decision
from autoscaler.core.other_autoscalers import held_because
from autoscaler.core.pause import held_text
from autoscaler.core.prediction.condition import forecast_lines
from autoscaler.core.results import MetricOutcome, PodMetricResult, ValueResult
from autoscaler.core.spec import MetricTargetType, PolicyType
from autoscaler.values.quantity import format_milli

_RULES = {
    "within-tolerance": "within tolerance, keep the current count",
    "ratio-times-ready": "ceil(ratio × ready pods)",
    "rebalanced": "ceil(new ratio × pods)",
    "rebalanced-within-tolerance": "within tolerance, keep the current count",
    "rebalanced-direction-flip": "the direction reverses, keep the current count",
    "rebalanced-count-flip": "the count would move against the ratio, keep the current count",
    "from-zero": "scaling from zero: ceil(ratio), no tolerance",
    "usage-over-target": "ceil(total ÷ per-pod target)",
    "fallback": "the fallback's replicas (spec.fallback)",
}


def milli_text(milli: int) -> str:
    return format_milli(milli)


def readable(text: str) -> str:
    """Upstream's text for people: a metric named with no selector is printed ``name(<nil>)`` by the HPA
    controller (kept so in conditions and events); explanations drop the ``(<nil>)``."""
    return text.replace("(<nil>)", "")


def ago(now: float, at: float) -> str:
    delta = now - at
    if math.isinf(delta) or abs(delta) >= 10**9:
        return "long ago"
    return f"{delta:g}s ago"


def target_text(outcome: MetricOutcome) -> str:
    target = outcome.spec.target
    if target.type is MetricTargetType.UTILIZATION:
        return f"{target.average_utilization}% of request"
    if target.type is MetricTargetType.VALUE and target.value is not None:
        return f"value {target.value}"
    return f"average {target.average_value}"


def metric_line(outcome: MetricOutcome) -> str:
    spec = outcome.spec
    label = readable(outcome.description) or f"{spec.type.value} {spec.name}"
    if outcome.skipped:
        return f"{label}: not evaluated"
    if outcome.error is not None:
        return f"{label}: FAILED ({outcome.reason}): {outcome.error} — no scale-down on partial data"
    parts: list[str] = []
    current = outcome.current
    if current is not None:
        if current.average_utilization is not None:
            parts.append(f"utilization {current.average_utilization}%")
        if current.average_value is not None:
            parts.append(f"average {milli_text(current.average_value)}")
        if current.value is not None:
            parts.append(f"value {milli_text(current.value)}")
    else:  # a metric standing for spec.fallback's replicas (autoscaler.core.fallback)
        parts.append("not read")
    text = f"{label}: {', '.join(parts)} against {target_text(outcome)}"
    if outcome.pod_result is not None:
        text += _pod_detail(outcome.pod_result)
    if outcome.value_result is not None:
        text += _value_detail(outcome.value_result)
    return f"{text} → proposes {outcome.proposal}"


def _pod_detail(result: PodMetricResult) -> str:
    groups = result.groups
    text = f" (ratio {result.ratio:.3f}; {groups.ready_count} ready"
    aside = []
    if groups.unready:
        aside.append(f"unready {', '.join(groups.unready)}")
    if groups.missing:
        aside.append(f"missing {', '.join(groups.missing)}")
    if groups.ignored:
        aside.append(f"ignored {', '.join(groups.ignored)}")
    if aside:
        text += "; set aside: " + "; ".join(aside)
    if result.rebalance is not None:
        r = result.rebalance
        fills = []
        if r.missing_filled_with == "target":
            fills.append("missing pods at the target")
        elif r.missing_filled_with == "zero":
            fills.append("missing pods at 0")
        if r.unready_as_zero:
            fills.append("unready pods at 0")
        how = f" counting {' and '.join(fills)}" if fills else ""
        text += f"; recomputed{how}: new ratio {r.new_ratio:.3f} over {r.considered} pods"
    text += f"; {_RULES.get(result.rule, result.rule)}"
    return text + ")"


def _value_detail(result: ValueResult) -> str:
    text = f" (ratio {result.ratio:.3f}"
    if result.ready_pods is not None:
        text += f"; {result.ready_pods} running and ready pods"
    return text + f"; {_RULES.get(result.rule, result.rule)})"


def _rate_text(rate: RateLimit) -> str:
    direction = "scale-up" if rate.direction == "up" else "scale-down"
    if rate.select_policy is None:
        return f"{direction} limited to {rate.bound} replicas (no behavior: at most max(2 × current, 4))"
    if not rate.policies:
        return f"{direction} disabled (selectPolicy Disabled)"
    policies = ", ".join(
        f"{p.policy.type.value} {p.policy.value}{'%' if p.policy.type is PolicyType.PERCENT else ''}"
        f"/{p.policy.period_seconds}s from {p.period_start_replicas} → {p.allowed}"
        for p in rate.policies
    )
    return f"{direction} policies [{policies}] (selectPolicy {rate.select_policy.value}) allow {rate.bound}"


def normalization_lines(norm: Normalization, now: float) -> list[str]:
    lines: list[str] = []
    if norm.stabilized != norm.proposal:
        rec = norm.binding_recommendation
        window = norm.down_window if norm.able_reason == "ScaleDownStabilized" else norm.up_window
        held = (
            f", but the {window:g}s window holds a recommendation of {rec.replicas} from {ago(now, rec.at)}"
            if rec is not None
            else ""
        )
        lines.append(f"Stabilization ({norm.able_reason}): proposal {norm.proposal}{held} → {norm.stabilized}.")
    if norm.limited:
        lines.append(f"Limited ({norm.limit_reason}): {norm.stabilized} → {norm.final}; {norm.limit_message}.")
        if norm.rate_limit is not None and norm.limit_reason in ("ScaleUpLimit", "ScaleDownLimit"):
            lines.append(f"  {_rate_text(norm.rate_limit)}.")
    return lines


def explain_lines(decision: Decision, now: float) -> list[str]:
    """The decision, sentence by sentence."""
    lines = [f"Current replicas: {decision.current_replicas}."]
    if decision.branch in ("disabled", "above-max", "below-min", "selector", "hvpa-only"):
        lines.append(
            f"{BRANCHES[decision.branch][0].upper()}{BRANCHES[decision.branch][1:]}"
            + (f": {decision.rescale_reason}." if decision.rescale_reason and decision.branch != "hvpa-only" else ".")
        )
        if decision.branch == "selector" and decision.error:
            lines.append(f"Error: {decision.error}.")
    lines.extend(decision.notes)
    for outcome in decision.metrics:
        if not outcome.skipped:
            lines.append(metric_line(outcome))
    combined = decision.combined
    if combined is not None:
        if combined.proposal is None:
            # Each failure's cause is on its metric's line above; upstream's aggregated error would
            # wrap the first one three more times.
            evaluated = sum(1 for outcome in decision.metrics if not outcome.skipped)
            if combined.invalid >= evaluated:
                lines.append("No scaling: every metric failed, so there is no proposal.")
            else:
                lines.append(
                    f"No scaling: {combined.invalid} of {evaluated} metrics failed and the others propose "
                    f"fewer than {decision.current_replicas} replicas; a failed metric never causes a "
                    "scale-down."
                )
        else:
            lines.append(f"Largest proposal: {combined.proposal} from {readable(combined.description)}.")
            if combined.invalid:
                lines.append(f"{combined.invalid} metric(s) failed; scaling up is still allowed, scaling down is not.")
    if decision.forecast is not None:  # spec.prediction: each forecast, and whether it raised the proposal
        lines.extend(forecast_lines(decision.forecast))
    if decision.normalization is not None:
        lines.extend(normalization_lines(decision.normalization, now))
    if decision.activation is not None:
        lines.extend(activation_lines(decision.activation, decision.current_replicas, now))
    if decision.scale:
        verb = "Scale up" if decision.replicas > decision.current_replicas else "Scale down"
        applied = "" if decision.applied is None else (" (applied)" if decision.applied else " (write FAILED)")
        lines.append(
            f"{verb} {decision.current_replicas} → {decision.replicas}{applied}: {readable(decision.rescale_reason)}."
        )
    else:
        lines.append(f"Keep {decision.current_replicas} replicas.")
    paused = held_text(decision)
    if paused is not None:  # what a pause kept the decision from doing, and which pause
        lines.append(paused)
    held = held_because(decision)
    if held is not None:  # a shadow: what it would do, above, and why it is not done
        lines.append(f"Not written: {held}.")
    return lines
