"""What a plot shows, taken from per-step records (:class:`~autoscaler.plot.records.StepRecord`): one
panel per metric (its value and target), the replicas panel (desired, final, real, min/max, and what
limited each step), and for HVPA targets the per-pod requests. Both renderers (PNG, HTML) draw these
same named series."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.core.spec import MetricSourceType, MetricSpec, MetricTargetType, TargetSpec
from autoscaler.plot.records import StepRecord

REPLICAS_PANEL = "replicas"
# Stabilization windows in blues; rate limits orange (up) and green (down); min/max red and pink.
REASON_COLORS = {
    "ScaleUpStabilized": "#9ecae1",
    "ScaleDownStabilized": "#3182bd",
    "ScaleUpLimit": "#ff7f0e",
    "ScaleDownLimit": "#2ca02c",
    "TooManyReplicas": "#d62728",
    "TooFewReplicas": "#e377c2",
}
OTHER_REASON_COLOR = "#969696"


@dataclass(frozen=True, slots=True)
class Series:
    """One named line (or set of markers) in one panel; ``y`` None where there is no value."""

    name: str
    panel: str
    x: list[float]
    y: list[float | None]
    kind: str = "line"  # line | target | limit | failed | bound | real | old | desired | blocked | forecast
    run: int = 0
    reason: str | None = None  # for kind "limit"
    own: bool = False  # a target or bound of one run only (compared runs that differ): its colour


@dataclass
class PlotData:
    title: str
    absolute_times: bool  # x is Unix time (backtest) or seconds since 0 (simulate)
    panels: list[tuple[str, str]]  # (panel title, y-axis label), top to bottom
    series: list[Series] = field(default_factory=list)
    run_labels: list[str] = field(default_factory=list)
    end: float | None = None  # until when the last step holds (one more step)

    def described(self) -> list[dict[str, Any]]:
        """Every series' name, panel and number of values (image metadata)."""
        return [
            {"name": s.name, "panel": s.panel, "kind": s.kind, "points": sum(v is not None for v in s.y)}
            for s in self.series
        ]

    def data(self) -> dict[str, Any]:
        """Everything plotted, as JSON (embedded in HTML output)."""
        return {
            "title": self.title,
            "absoluteTimes": self.absolute_times,
            "runs": self.run_labels,
            "panels": [title for title, _ in self.panels],
            "end": self.end,
            "series": [
                {"name": s.name, "panel": s.panel, "kind": s.kind, "run": s.run, "reason": s.reason, "x": s.x, "y": s.y}
                for s in self.series
            ],
        }


def metric_title(spec: MetricSpec) -> tuple[str, str]:
    """(panel title, unit) for one metric."""
    target = spec.target.type
    if target is MetricTargetType.UTILIZATION:
        return f"{spec.name} utilization", "% of request"
    kind = "average value" if target is MetricTargetType.AVERAGE_VALUE else "value"
    unit = (
        {"cpu": "cores", "memory": "bytes"}.get(spec.name, "")
        if spec.type in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE)
        else ""
    )
    where = f"{spec.type.value}, " if spec.type not in (MetricSourceType.RESOURCE,) else ""
    container = f" of {spec.container}" if spec.container else ""
    return f"{spec.name}{container} ({where}{kind})", unit


def metric_target(spec: MetricSpec) -> float | None:
    target = spec.target
    if target.type is MetricTargetType.UTILIZATION:
        return float(target.average_utilization) if target.average_utilization is not None else None
    quantity = target.average_value if target.type is MetricTargetType.AVERAGE_VALUE else target.value
    return quantity.as_float() if quantity is not None else None


def requests_panel(resource: str) -> str:
    return f"HVPA {resource} requests per pod"


def forecast_panel(metric: str) -> str:
    return f"{metric}: value and forecast"


@dataclass(frozen=True)
class PlotRun:
    """One run to plot: its label, its per-step records and its spec; with ``spec.prediction`` (backtest),
    per forecast metric its value's history and its forecast line (``(time, value)`` each)."""

    label: str
    records: Sequence[StepRecord]
    spec: TargetSpec
    forecast_lines: Mapping[str, tuple[Sequence[tuple[float, float]], Sequence[tuple[float, float]]]] = field(
        default_factory=dict
    )


def _identity(metric: MetricSpec) -> tuple[str, str, str | None]:
    return metric.type.value, metric.name, metric.container


def _target_text(metric: MetricSpec, value: float) -> str:
    if metric.target.type is MetricTargetType.UTILIZATION:
        return f"{value:g}%"
    quantity = metric.target.average_value or metric.target.value
    return str(quantity) if quantity is not None else f"{value:g}"


def plot_data(runs: Sequence[PlotRun], title: str, *, absolute_times: bool) -> PlotData:
    """Series for one or more runs (compared runs share the panels: one per metric any of them has)."""
    data = PlotData(title, absolute_times, [], run_labels=[run.label for run in runs])
    many = len(runs) > 1
    metrics: dict[tuple[str, str, str | None], str] = {}
    for run in runs:
        for metric in run.spec.metrics:
            if _identity(metric) not in metrics:
                metrics[_identity(metric)] = metric_title(metric)[0]
                data.panels.append(metric_title(metric))
    for name in sorted({name for run in runs for name in run.forecast_lines}):
        data.panels.append((forecast_panel(name), "value"))
    data.panels.append((REPLICAS_PANEL, "replicas"))
    resources = sorted(
        {resource for run in runs for r in run.records if r.hvpa is not None for _, resource in r.hvpa.requests}
    )
    for resource in resources:
        data.panels.append((requests_panel(resource), {"cpu": "cores", "memory": "bytes"}.get(resource, "")))
    for index, run in enumerate(runs):
        prefix = f"{run.label}: " if many else ""
        records = run.records
        x = [float(r.at) for r in records]
        if x and data.end is None:
            data.end = x[-1] + (x[-1] - x[-2] if len(x) > 1 else 1.0)
        for metric in run.spec.metrics:
            panel = metrics[_identity(metric)]
            values: list[float | None] = []
            failed: list[float | None] = []
            for record in records:
                point = next((m for m in record.metrics if _identity(m.spec) == _identity(metric)), None)
                values.append(point.value if point is not None else None)
                failed.append(1.0 if point is not None and point.failed else None)
            data.series.append(Series(f"{prefix}{panel}", panel, x, values, run=index))
            if any(v is not None for v in failed):
                data.series.append(Series(f"{prefix}{metric.name} failed", panel, x, failed, "failed", index))
            target = metric_target(metric)
            shared = all(
                metric_target(m) == target for r in runs for m in r.spec.metrics if _identity(m) == _identity(metric)
            ) and all(any(_identity(m) == _identity(metric) for m in r.spec.metrics) for r in runs)
            if target is not None and x and (index == 0 or not shared):
                name = f"{'' if shared else prefix}{metric.name} target {_target_text(metric, target)}"
                data.series.append(
                    Series(name, panel, [x[0], x[-1]], [target, target], "target", index, own=not shared)
                )
        _forecasts(data, index, prefix, run)
        _replicas(data, index, prefix, x, records, run.spec, [r.spec for r in runs])
        if resources:
            _requests(data, index, prefix, x, records)
    return _without_empty_panels(data)


def _forecasts(data: PlotData, index: int, prefix: str, run: PlotRun) -> None:
    """A predicting run's forecast lines: each forecast metric's value and forecast (each point made the
    horizon before it) in its own panel, and the replicas the forecasts asked for in the replicas panel."""
    for name, (values, line) in sorted(run.forecast_lines.items()):
        panel = forecast_panel(name)
        data.series.append(Series(f"{prefix}{name}", panel, [t for t, _ in values], [v for _, v in values], run=index))
        data.series.append(
            Series(f"{prefix}{name} forecast", panel, [t for t, _ in line], [v for _, v in line], "forecast", index)
        )
    asked = [
        max((p.replicas for p in r.forecasts if p.usable and p.replicas is not None), default=None) for r in run.records
    ]
    if any(v is not None for v in asked):
        data.series.append(
            Series(
                f"{prefix}forecast replicas",
                REPLICAS_PANEL,
                [float(r.at) for r in run.records],
                [float(v) if v is not None else None for v in asked],
                "forecast",
                index,
            )
        )


def _without_empty_panels(data: PlotData) -> PlotData:
    """Drop a metric's panel when no run has a value or a failure for it (e.g. an HVPA target whose
    horizontal decisions come from HVPA alone never reads its metrics)."""
    metric_panels = {title for title, _ in data.panels[:-1]} - {REPLICAS_PANEL}
    used = {s.panel for s in data.series if s.kind in ("line", "failed") and any(v is not None for v in s.y)}
    empty = {panel for panel in metric_panels if panel not in used and not panel.startswith("HVPA ")}
    data.panels = [p for p in data.panels if p[0] not in empty]
    data.series = [s for s in data.series if s.panel not in empty]
    return data


def _number(value: int | None) -> float | None:
    return float(value) if value is not None else None


def _replicas(
    data: PlotData,
    index: int,
    prefix: str,
    x: list[float],
    records: Sequence[StepRecord],
    spec: TargetSpec,
    specs: Sequence[TargetSpec],
) -> None:
    panel = REPLICAS_PANEL
    replicas = [_number(r.replicas) for r in records]
    data.series.append(Series(f"{prefix}replicas", panel, x, replicas, run=index))
    data.series.append(
        Series(f"{prefix}desired replicas", panel, x, [_number(r.desired_replicas) for r in records], "desired", index)
    )
    if any(r.hvpa is not None for r in records):
        data.series.append(
            Series(
                f"{prefix}HVPA desired replicas",
                panel,
                x,
                [_number(r.hvpa.desired_replicas) if r.hvpa is not None else None for r in records],
                "desired",
                index,
            )
        )
    if index == 0:
        real = [_number(r.real_replicas) for r in records]
        if any(v is not None for v in real):
            data.series.append(Series("real replicas", panel, x, real, "real"))
        # autoscaler convert --compare: what the old autoscaler (an HPA) wanted at each sync.
        old = [_number(r.old_desired_replicas) for r in records]
        if any(v is not None for v in old):
            data.series.append(Series("old autoscaler's desired replicas", panel, x, old, "old"))
    for field_name, value in (("minReplicas", spec.min_replicas), ("maxReplicas", spec.max_replicas)):
        shared = all((s.min_replicas if field_name == "minReplicas" else s.max_replicas) == value for s in specs)
        if x and (index == 0 or not shared):
            data.series.append(
                Series(
                    f"{'' if shared else prefix}{field_name} {value}",
                    panel,
                    [x[0], x[-1]],
                    [float(value)] * 2,
                    "bound",
                    index,
                    own=not shared,
                )
            )
    reasons = sorted({r.limited_by for r in records if r.limited_by})
    for reason in reasons:
        y = [replicas[i] if r.limited_by == reason else None for i, r in enumerate(records)]
        data.series.append(Series(f"{prefix}limited: {reason}", panel, x, y, "limit", index, reason))
    blocked = [r.hvpa.blocked if r.hvpa is not None else None for r in records]
    for reason in sorted({b for b in blocked if b}):
        data.series.append(
            Series(
                f"{prefix}HVPA blocked: {reason}",
                panel,
                x,
                [replicas[i] if b == reason else None for i, b in enumerate(blocked)],
                "blocked",
                index,
                reason,
            )
        )


def _requests(data: PlotData, index: int, prefix: str, x: list[float], records: Sequence[StepRecord]) -> None:
    per_step = [r.hvpa.requests if r.hvpa is not None else {} for r in records]
    for container, resource in sorted({k for step in per_step for k in step}):
        values = [step.get((container, resource)) for step in per_step]
        data.series.append(
            Series(f"{prefix}{container} {resource} request", requests_panel(resource), x, values, run=index)
        )


def finite(values: Sequence[float | None]) -> list[float]:
    """``None`` as NaN, for libraries that break lines at NaN."""
    return [math.nan if v is None else v for v in values]


def held(x: Sequence[float], y: Sequence[float | None], end: float | None) -> tuple[list[float], list[float | None]]:
    """A step series with its last value held until ``end`` (each step lasts until the next one)."""
    if not x or end is None:
        return list(x), list(y)
    return [*x, end], [*y, y[-1]]


def runs_of(x: Sequence[float], y: Sequence[float | None], end: float | None) -> list[tuple[float, float]]:
    """The time spans where ``y`` has a value: from its step to the next step (or ``end``)."""
    spans: list[tuple[float, float]] = []
    start: float | None = None
    for index, value in enumerate(y):
        if value is not None and start is None:
            start = x[index]
        elif value is None and start is not None:
            spans.append((start, x[index]))
            start = None
    if start is not None:
        spans.append((start, end if end is not None else x[-1]))
    return spans
