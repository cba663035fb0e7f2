"""``--compare``: two specs replayed over the same history, side by side."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.backtest.report import Report, report_json
from autoscaler.values.durations import format_seconds
from autoscaler.values.timestamps import rfc3339_millis


@dataclass
class Divergence:
    """Where the runs' replica counts differ (tracked sync by sync during the replay)."""

    syncs: int = 0
    largest_gap: int = 0
    first_at: float | None = None

    def add(self, at: float, counts: Sequence[int]) -> None:
        gap = max(counts) - min(counts)
        if gap:
            self.syncs += 1
            self.largest_gap = max(self.largest_gap, gap)
            if self.first_at is None:
                self.first_at = at


def comparison_json(reports: Sequence[Report], divergence: Divergence) -> dict[str, Any]:
    runs = [report_json(r) for r in reports]
    first, other = reports[0], reports[-1]
    return {
        "runs": runs,
        "difference": {
            "syncsWithDifferentReplicas": divergence.syncs,
            "largestReplicaGap": divergence.largest_gap,
            "firstDifference": rfc3339_millis(divergence.first_at) if divergence.first_at is not None else None,
            "podSeconds": other.cost.replay - first.cost.replay,
            "scaleEvents": len(other.events) - len(first.events),
            "underProvisionedPodSeconds": other.provisioning.under_pod_seconds - first.provisioning.under_pod_seconds,
            "underProvisionedChange": _relative(
                other.provisioning.under_pod_seconds, first.provisioning.under_pod_seconds
            ),
            "replicaHoursChange": _relative(other.replica_hours, first.replica_hours),
        },
    }


def _relative(value: float, base: float) -> float | None:
    """(value − base) ÷ base, rounded to the millionth; None when base is 0."""
    return round((value - base) / base, 6) if base else None


def _under(report: Report) -> str:
    supply = report.provisioning
    return f"{supply.under_pod_seconds:,.0f}" if supply.known_syncs else "unknown"


def _forecast_error(report: Report) -> str:
    tally = report.forecast
    if tally is None:
        return "-"
    mape = tally.mape
    return f"{mape:.1f} % ({tally.model})" if mape is not None else f"unknown ({tally.model})"


def _cost_change(report: Report) -> str:
    change = report.cost.change
    return f"{100 * change:+.1f} %" if change is not None else "unknown"


def _events(report: Report) -> str:
    ups = sum(1 for e in report.events if e.after > e.before)
    return f"{len(report.events)} ({ups} up, {len(report.events) - ups} down)"


def _time(report: Report, syncs: int) -> str:
    if not syncs:
        return "-"
    return f"{format_seconds(report.seconds(syncs))} ({100 * syncs / report.syncs:.1f} %)"


def _fit(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, keeping its end (file names end paths)."""
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def render_comparison(reports: Sequence[Report], divergence: Divergence) -> str:
    first = reports[0]
    width = min(max(24, *(len(r.label) + 2 for r in reports)), 34)
    rows: list[tuple[str, list[str]]] = [
        ("scale events", [_events(r) for r in reports]),
        ("replicas min / mean / max", [f"{r.low} / {r.mean:.2f} / {r.high}" for r in reports]),
        ("replicas at the end", [str(r.final) for r in reports]),
        ("pod-hours", [f"{r.cost.replay / 3600:,.1f}" for r in reports]),
        ("against the real workload", [_cost_change(r) for r in reports]),
        ("under-provisioned pod-seconds", [_under(r) for r in reports]),
    ]
    if any(r.forecast is not None for r in reports):
        rows.append(("forecast error (MAPE)", [_forecast_error(r) for r in reports]))
        rows.append(("forecast decided", [_time(r, r.forecast.decided_syncs) if r.forecast else "-" for r in reports]))
        rows.append(
            (
                "scale-downs the forecast caused",
                [str(r.forecast.caused_scale_downs) if r.forecast else "-" for r in reports],
            )
        )
    keys = sorted(
        {k for r in reports for k in r.limits}, key=lambda k: -sum(r.limits[k].syncs for r in reports if k in r.limits)
    )
    for reason, detail in keys:
        rows.append(
            (
                f"{reason} ({detail})" if detail else reason,
                [_time(r, r.limits[(reason, detail)].syncs if (reason, detail) in r.limits else 0) for r in reports],
            )
        )
    for name in sorted({n for r in reports for n in r.failures}):
        rows.append(
            (f"{name} failed", [_time(r, r.failures[name].syncs if name in r.failures else 0) for r in reports])
        )
    label_width = max(len(label) for label, _ in rows) + 2
    lines = [
        f"Backtest of {first.namespace}/{first.name} ({first.workload})",
        f"  {rfc3339_millis(first.start)} → {rfc3339_millis(first.end)}, "
        f"a sync every {format_seconds(first.step)}: {first.syncs:,} syncs",
        "",
    ]
    lines.append(" " * label_width + "".join(_fit(r.label, width - 2).ljust(width) for r in reports).rstrip())
    for label, cells in rows:
        lines.append(label.ljust(label_width) + "".join(c.ljust(width) for c in cells).rstrip())
    lines.append("")
    other = reports[-1]
    under = _relative(other.provisioning.under_pod_seconds, first.provisioning.under_pod_seconds)
    hours = _relative(other.replica_hours, first.replica_hours)
    if len(reports) > 1 and first.provisioning.known_syncs and other.provisioning.known_syncs:
        lines.append(
            f"{other.label} against {first.label}: under-provisioned pod-seconds "
            f"{'n/a (none in the first)' if under is None else f'{100 * under:+.1f} %'}, "
            f"replica-hours {'n/a' if hours is None else f'{100 * hours:+.1f} %'}."
        )
    if divergence.syncs:
        share = 100 * divergence.syncs / first.syncs if first.syncs else 0
        lines.append(
            f"The replica counts differ at {divergence.syncs:,} of {first.syncs:,} syncs ({share:.1f} %), "
            f"by up to {divergence.largest_gap}; first at "
            f"{rfc3339_millis(divergence.first_at or first.start)}."
        )
    else:
        lines.append("The replica counts are the same at every sync.")
    lines.append("")
    lines.append("Replicas over time (mean per bucket):")
    lines.append("  " + "from".ljust(22) + "".join(_fit(r.label, 20).rjust(22) for r in reports) + "real".rjust(10))
    for index, bucket in enumerate(first.buckets):
        cells = []
        for r in reports:
            b = r.buckets[index] if index < len(r.buckets) else None
            cells.append(f"{b.total / b.count:22.2f}" if b and b.count else f"{'-':>22}")
        real = f"{bucket.real_total / bucket.real_count:10.2f}" if bucket.real_count else f"{'-':>10}"
        lines.append("  " + rfc3339_millis(bucket.start).ljust(22) + "".join(cells) + real)
    for r in reports:
        if r.events:
            lines.append("")
            lines.append(f"Scale events of {r.label}:")
            for event in r.events[:20]:
                limited = f"  [limited: {event.limited_by}]" if event.limited_by else ""
                lines.append(
                    f"  {rfc3339_millis(event.at)}  {event.before:>4} → {event.after:<4} {event.reason}{limited}"
                )
            if len(r.events) > 20:
                lines.append(f"  … {len(r.events) - 20} more (--output json lists them all)")
    notes = first.notes
    if notes:
        lines.append("")
        lines.append("Notes on the history:")
        lines.extend(f"  - {note}" for note in notes)
    return "\n".join(lines)
