"""What ``autoscaler simulate`` prints: one JSON object per step, or a table a person can scan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autoscaler.core.branches import BRANCHES
from autoscaler.core.decision import Decision
from autoscaler.core.explain import readable
from autoscaler.core.hvpa.decision import HvpaDecision
from autoscaler.core.hvpa.explain import hvpa_json, requests_text
from autoscaler.core.pause import pause_summary
from autoscaler.core.results import MetricOutcome
from autoscaler.core.status import condition_json, history_json, metric_status, quantity_from_milli
from autoscaler.core.sync_step import StepResult


def seconds(value: float) -> int | float:
    """Scenario times print as integers when they are whole seconds."""
    return int(value) if float(value).is_integer() else value


def metric_json(outcome: MetricOutcome) -> dict[str, Any]:
    entry = metric_status(outcome)
    groups = outcome.pod_result.groups if outcome.pod_result is not None else None
    ready: int | None = None
    if groups is not None:
        ready = groups.ready_count
    elif outcome.value_result is not None:
        ready = outcome.value_result.ready_pods
    entry.update(
        {
            "proposedReplicas": outcome.proposal,
            "readyPodCount": ready,
            "unreadyPods": list(groups.unready) if groups else [],
            "missingPods": list(groups.missing) if groups else [],
            "ignoredPods": list(groups.ignored) if groups else [],
            "error": outcome.error,
        }
    )
    if outcome.error is not None:
        entry["reason"] = outcome.reason
    if outcome.skipped:
        entry["skipped"] = True
    return entry


def step_json(result: StepResult) -> dict[str, Any]:
    """The documented per-step object of ``--output json`` (plus ``hvpa`` when the spec has it)."""
    decision = result.decision
    now = result.at
    entry = {
        "at": seconds(now),
        "currentReplicas": decision.current_replicas,
        "statusReplicas": result.observation.scale.status_replicas,
        "metrics": [metric_json(o) for o in decision.metrics],
        "desiredReplicas": decision.desired_replicas,
        "replicas": decision.replicas,
        "scaled": decision.scale,
        "rescaleReason": decision.rescale_reason or None,
        "limitedBy": decision.limited_by,
        "conditions": [condition_json(c, seconds) for c in decision.conditions],
        "events": [{"type": e.type, "reason": e.reason, "message": e.message} for e in decision.events],
        "explanation": "\n".join(result.outcome.explanation()),
        "history": history_json(decision.history, seconds),
    }
    if result.hvpa is not None:
        entry["hvpa"] = hvpa_json(result.hvpa)
    return entry


def _why(decision: Decision) -> str:
    paused = pause_summary(decision)
    if paused is not None:
        return paused
    if decision.scale and decision.rescale_reason.startswith("HVPA"):
        return decision.rescale_reason
    if decision.branch == "activation":
        unknown = decision.activation is not None and decision.activation.active is None
        return decision.rescale_reason or ("activity unknown: stays idle" if unknown else "not active: stays idle")
    if decision.branch != "metrics":
        return BRANCHES[decision.branch]
    limited = decision.limited_by
    if limited is not None:
        return limited
    return decision.rescale_reason if decision.scale else ""


def _metric_cell(outcome: MetricOutcome) -> str:
    if outcome.skipped:
        return "-"
    if outcome.error is not None:
        return f"{outcome.spec.name}: FAILED"
    current = outcome.current
    value = ""
    if current is not None:
        if current.average_utilization is not None:
            value = f"{current.average_utilization}%"
        elif current.average_value is not None:
            value = quantity_from_milli(current.average_value)
        elif current.value is not None:
            value = quantity_from_milli(current.value)
    return f"{outcome.spec.name} {value}→{outcome.proposal}"


def render_table(results: Sequence[StepResult], *, explain: bool = False) -> str:
    """A fixed-width table, one row per step; ``explain`` adds each decision's explanation."""
    with_hvpa = any(r.hvpa is not None for r in results)
    headers = ["at", "current", "metrics (value→proposal)", "desired", "final", "why"]
    if with_hvpa:
        headers = [
            "at",
            "current",
            "metrics (value→proposal)",
            "hpa",
            "hvpa",
            "final",
            "requests per pod",
            "blocked / why",
        ]
    rows: list[list[str]] = []
    for result in results:
        d = result.decision
        row = [
            f"{seconds(result.at)}",
            str(d.current_replicas),
            ", ".join(_metric_cell(o) for o in d.metrics),
            "-" if d.desired_replicas is None else str(d.desired_replicas),
            str(d.replicas) + (" *" if d.scale else ""),
            readable(_why(d)),
        ]
        if with_hvpa:
            hvpa = result.hvpa
            hpa = "-" if d.branch == "hvpa-only" else str(d.normalization.final if d.normalization else "-")
            read = ", ".join(_metric_cell(o) for o in d.metrics if not o.skipped) or "-"
            row = [
                *row[:2],
                read,
                hpa,
                "-" if hvpa is None else str(hvpa.desired_replicas),
                row[4],
                "" if hvpa is None else requests_text(hvpa),
                "" if hvpa is None else readable(_hvpa_why(hvpa, d)),
            ]
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for result, row in zip(results, rows, strict=True):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if explain:
            lines.extend(f"      {line}" for line in result.outcome.explanation())
    lines.append("")
    lines.append("* = scaled this step")
    if with_hvpa:
        lines.append(
            "hpa = the HPA source's proposal; hvpa = HVPA's count; requests per pod as decided (applied unless blocked)"
        )
    return "\n".join(lines)


def _hvpa_why(hvpa: HvpaDecision, decision: Decision) -> str:
    if hvpa.inactive is not None:
        return f"no decision: {hvpa.inactive}"
    if hvpa.blocked is not None:
        return hvpa.blocked.value
    if hvpa.direction is None:
        return ""
    return decision.rescale_reason if decision.scale else f"resize ({hvpa.direction.value})"
