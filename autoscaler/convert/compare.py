"""``autoscaler convert --compare``: each converted target backtested over Prometheus history
(:mod:`autoscaler.backtest`, unchanged) beside what the old autoscaler did, as kube-state-metrics
recorded it for its HPA (``kube_horizontalpodautoscaler_status_desired_replicas`` and
``…_current_replicas``; for a ScaledObject, the HPA KEDA made).

Each target is compared on its own: one that cannot be (no recorded history of its workload at ``--from``,
a query Prometheus rejects) is a :class:`NotCompared` naming it and why, and the others still compare. A
metric the replay never read is said so, and its differences are not blamed on values or tolerance
(:mod:`autoscaler.convert.compare_reads`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from autoscaler.backtest.hints import OptionHints
from autoscaler.backtest.history import Grid, RangeQuerier, fetch_matrix
from autoscaler.backtest.replay import BacktestOptions, BacktestResult, run_backtest
from autoscaler.backtest.target import BacktestTarget
from autoscaler.convert.agreement import CAUSES, Agreement, Sync, agreement
from autoscaler.convert.compare_reads import ReplayRecorder, unread_metrics, unread_series
from autoscaler.convert.model import Conversion
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.prometheus.promql import string_literal
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.values.durations import format_seconds
from autoscaler.values.timestamps import rfc3339_millis

DESIRED_SERIES = "kube_horizontalpodautoscaler_status_desired_replicas"
CURRENT_SERIES = "kube_horizontalpodautoscaler_status_current_replicas"


def hpa_series_query(series: str, namespace: str, hpa: str) -> str:
    # max: two kube-state-metrics replicas report the same HPA twice.
    return f"max({series}{{namespace={string_literal(namespace)}, horizontalpodautoscaler={string_literal(hpa)}}})"


def convert_hints(conversion: Conversion) -> OptionHints:
    """What a replay's messages suggest, in ``convert --compare``'s words (it has no --initial-replicas or
    --replicas-query, and its --selector picks the objects to convert)."""
    return OptionHints(
        initial_replicas=f"start --from where HPA {conversion.origin.namespace}/{conversion.old_hpa}'s history "
        "is recorded, or replay the converted target alone with `autoscaler backtest TARGET.yaml "
        "--initial-replicas N`",
        selector="convert --compare does not know it: replay the converted target with `autoscaler backtest "
        "TARGET.yaml --selector app=…`",
        replicas_query="the old HPA's current replicas stand in for them",
    )


@dataclass
class Comparison:
    conversion: Conversion
    agreement: Agreement
    result: BacktestResult
    unread: dict[str, str] = field(default_factory=dict)  # a metric the replay never read → why

    def flagged(self, threshold: float) -> bool:
        """Below the agreement threshold, nothing to compare, or a metric never read (its agreement says
        nothing about that metric)."""
        return self.agreement.flagged(threshold) or bool(self.unread)


@dataclass
class NotCompared:
    """A converted target the replay could not run for, and why; ``exit_code`` 2 for bad input."""

    conversion: Conversion
    message: str
    exit_code: int

    def flagged(self, threshold: float) -> bool:
        return True


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
    recorder = ReplayRecorder()
    # The "real" replicas of the report and plots are the old autoscaler's current replicas.
    result = await run_backtest(
        client,
        prometheus,
        controller,
        [target],
        replace(options, replicas_query=current, hints=convert_hints(conversion)),
        labels=[f"{origin.namespace}/{origin.name} converted"],
        observer=recorder,
    )
    grid = Grid.between(options.start, options.end, options.step)
    asked = TargetQuery(
        namespace=origin.namespace,
        name=origin.name,
        scale_target=spec.scale_target_ref,
        selector="backtest=selector",
        pod_names=(),
        metrics=spec.metrics,
    )
    unread = await unread_metrics(client, prometheus, asked, spec, recorder, grid, options.max_points)
    desired = await fetch_matrix(
        client,
        hpa_series_query(DESIRED_SERIES, origin.namespace, conversion.old_hpa),
        grid,
        max_points=options.max_points,
    )
    syncs = []
    for (at, replicas, limit, _), failed in zip(recorder.syncs, unread_series(recorder.syncs, unread), strict=True):
        vector = desired.at(round(at * 1000))
        old = round(float(vector[0].value)) if vector else None
        syncs.append(Sync(at, replicas, old, limit, failed))
    records = result.runs[0].records
    if records is not None:
        records[:] = [
            replace(record, old_desired_replicas=sync.old) for record, sync in zip(records, syncs, strict=True)
        ]
    return Comparison(conversion, agreement(syncs, options.step), result, unread)


def _heading(conversion: Conversion) -> str:
    origin = conversion.origin
    return f"{origin.label} → ScalingTarget {origin.namespace}/{origin.name}"


def render(comparison: Comparison | NotCompared, threshold: float) -> str:
    if isinstance(comparison, NotCompared):
        return f"{_heading(comparison.conversion)}\n  NOT COMPARED: {comparison.message}"
    origin = comparison.conversion.origin
    found = comparison.agreement
    report = comparison.result.runs[0].report
    lines = [
        _heading(comparison.conversion),
        f"  against HPA {origin.namespace}/{comparison.conversion.old_hpa}'s recorded desired replicas, "
        f"{rfc3339_millis(report.start)} → {rfc3339_millis(report.end)}, a sync every "
        f"{format_seconds(report.step)}",
    ]
    for metric, why in comparison.unread.items():
        lines.append(
            f"  FLAGGED: metric {metric} was never read in the replay: {why}. Where the replay differs from the "
            "old autoscaler says nothing about this metric's values or the tolerance"
        )
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


def comparison_json(comparison: Comparison | NotCompared, threshold: float) -> dict[str, Any]:
    origin = comparison.conversion.origin
    source = {"kind": origin.kind, "namespace": origin.namespace, "name": origin.name, "file": origin.source}
    if isinstance(comparison, NotCompared):
        return {
            "source": source,
            "oldHpa": comparison.conversion.old_hpa,
            "comparedSyncs": 0,
            "notCompared": comparison.message,
            "flagged": True,
        }
    found = comparison.agreement
    return {
        "source": source,
        "oldHpa": comparison.conversion.old_hpa,
        "comparedSyncs": found.compared,
        "equalShare": found.share,
        "largestGap": found.largest_gap,
        "overSeconds": found.over_seconds,
        "underSeconds": found.under_seconds,
        "firstDifference": rfc3339_millis(found.first_difference) if found.first_difference is not None else None,
        "causes": dict(found.causes),
        "unreadMetrics": dict(comparison.unread),
        "flagged": comparison.flagged(threshold),
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
