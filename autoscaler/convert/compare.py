"""``autoscaler convert --compare``: each converted target backtested over Prometheus history
(:mod:`autoscaler.backtest`, unchanged) beside what the old autoscaler did, as kube-state-metrics
recorded it for its HPA (``kube_horizontalpodautoscaler_status_desired_replicas`` and
``…_current_replicas``; for a ScaledObject, the HPA KEDA made)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from autoscaler.backtest.history import Grid, RangeQuerier, fetch_matrix
from autoscaler.backtest.replay import BacktestOptions, BacktestResult, run_backtest
from autoscaler.backtest.target import BacktestTarget
from autoscaler.backtest.workload import RealWorkload
from autoscaler.convert.agreement import CAUSES, Agreement, Sync, agreement
from autoscaler.convert.model import Conversion
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.prometheus.promql import string_literal
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.simulate.runner import StepResult
from autoscaler.values.durations import format_seconds
from autoscaler.values.timestamps import rfc3339_millis

DESIRED_SERIES = "kube_horizontalpodautoscaler_status_desired_replicas"
CURRENT_SERIES = "kube_horizontalpodautoscaler_status_current_replicas"


def hpa_series_query(series: str, namespace: str, hpa: str) -> str:
    # max: two kube-state-metrics replicas report the same HPA twice.
    return f"max({series}{{namespace={string_literal(namespace)}, horizontalpodautoscaler={string_literal(hpa)}}})"


@dataclass
class Comparison:
    conversion: Conversion
    agreement: Agreement
    result: BacktestResult


class _Recorder:
    """Each sync of the replay: its replicas, what limited it, whether a metric failed."""

    def __init__(self) -> None:
        self.syncs: list[tuple[float, int, str | None, bool]] = []

    def __call__(self, label: str, step: StepResult, real: RealWorkload) -> None:
        decision = step.decision
        failed = any(m.error is not None for m in decision.metrics)
        self.syncs.append((step.at, decision.replicas, decision.limited_by, failed))


async def compare(
    client: RangeQuerier,
    prometheus: PrometheusSettings,
    controller: ControllerSettings,
    conversion: Conversion,
    options: BacktestOptions,
) -> Comparison:
    """Backtest ``conversion``'s target over ``options``' range and set it beside the old HPA's
    recorded decisions. Raises :class:`~autoscaler.backtest.replay.BacktestError` as a backtest does."""
    assert conversion.target is not None
    origin = conversion.origin
    spec = parse_target_spec(conversion.target["spec"], "spec")
    target = BacktestTarget(origin.namespace, origin.name, spec, f"{origin.label} (converted)")
    current = hpa_series_query(CURRENT_SERIES, origin.namespace, conversion.old_hpa)
    recorder = _Recorder()
    # The "real" replicas of the report and plots are the old autoscaler's current replicas.
    result = await run_backtest(
        client,
        prometheus,
        controller,
        [target],
        replace(options, replicas_query=current),
        labels=[f"{origin.namespace}/{origin.name} converted"],
        observer=recorder,
    )
    grid = Grid.between(options.start, options.end, options.step)
    desired = await fetch_matrix(
        client,
        hpa_series_query(DESIRED_SERIES, origin.namespace, conversion.old_hpa),
        grid,
        max_points=options.max_points,
    )
    syncs = []
    for at, replicas, limit, failed in recorder.syncs:
        vector = desired.at(round(at * 1000))
        old = round(float(vector[0].value)) if vector else None
        syncs.append(Sync(at, replicas, old, limit, failed))
    records = result.runs[0].records
    if records is not None:
        records[:] = [
            replace(record, old_desired_replicas=sync.old) for record, sync in zip(records, syncs, strict=True)
        ]
    return Comparison(conversion, agreement(syncs, options.step), result)


def render(comparison: Comparison, threshold: float) -> str:
    origin = comparison.conversion.origin
    found = comparison.agreement
    report = comparison.result.runs[0].report
    name = f"{origin.label} → ScalingTarget {origin.namespace}/{origin.name}"
    lines = [
        name,
        f"  against HPA {origin.namespace}/{comparison.conversion.old_hpa}'s recorded desired replicas, "
        f"{rfc3339_millis(report.start)} → {rfc3339_millis(report.end)}, a sync every "
        f"{format_seconds(report.step)}",
    ]
    if found.share is None:
        lines.append(
            f"  FLAGGED: no recorded decision of HPA {comparison.conversion.old_hpa} in that range "
            f"({DESIRED_SERIES} has no samples): nothing to compare"
        )
        return "\n".join(lines)
    lines.append(
        f"  agreement: {100 * found.share:.1f} % of {found.compared:,} syncs equal; largest gap "
        f"{found.largest_gap}; replay above the old autoscaler {format_seconds(found.over_seconds)}, "
        f"below {format_seconds(found.under_seconds)}"
    )
    if found.first_difference is not None:
        lines.append(f"  first difference at {rfc3339_millis(found.first_difference)}")
    if found.flagged(threshold):
        lines.append(f"  FLAGGED: below the {100 * threshold:g} % agreement threshold. Where they differ, why:")
    elif found.causes:
        lines.append("  where they differ, why:")
    total = sum(found.causes.values())
    for cause, count in found.causes.most_common():
        lines.append(f"    {100 * count / total:5.1f} %  {cause}: {CAUSES[cause]}")
    for metric, tally in list(report.failures.items())[:3]:
        lines.append(f"    {metric} failed at {tally.syncs:,} syncs, first: {tally.message}")
    return "\n".join(lines)


def comparison_json(comparison: Comparison, threshold: float) -> dict[str, Any]:
    found = comparison.agreement
    origin = comparison.conversion.origin
    return {
        "source": {"kind": origin.kind, "namespace": origin.namespace, "name": origin.name, "file": origin.source},
        "oldHpa": comparison.conversion.old_hpa,
        "comparedSyncs": found.compared,
        "equalShare": found.share,
        "largestGap": found.largest_gap,
        "overSeconds": found.over_seconds,
        "underSeconds": found.under_seconds,
        "firstDifference": rfc3339_millis(found.first_difference) if found.first_difference is not None else None,
        "causes": dict(found.causes),
        "flagged": found.flagged(threshold),
    }


def write_plot(comparison: Comparison, paths: Sequence[str]) -> None:
    from autoscaler.plot.output import write_plots
    from autoscaler.plot.series import PlotRun, plot_data

    run = comparison.result.runs[0]
    origin = comparison.conversion.origin
    data = plot_data(
        [PlotRun(run.label, run.records or [], run.target.spec)],
        f"{origin.label} converted, beside HPA {comparison.conversion.old_hpa}",
        absolute_times=True,
    )
    write_plots(list(paths), data)
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)
