"""Which metrics of a converted target the ``--compare`` replay never read, and why.

A replay whose metric never answered decided without it: where it differs from the old autoscaler says
nothing about the metric's values, tolerance or windows, so the comparison says the metric was never read
instead of blaming them. Two ways a metric is never read:

* it failed at every sync (a query that returns nothing, a series Prometheus does not hold there, a
  backend the replay cannot reach): the first failure says why;
* with ``ignoreNullValues`` (KEDA's default, which ``convert`` keeps), an empty answer reads as 0 and
  never fails: a metric whose query returned no series at any time of the range was read as 0 throughout.
  One range query over the compared range finds out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from autoscaler.backtest.history import Grid, HistoryClient, RangeQuerier, fetch_matrix
from autoscaler.backtest.workload import RealWorkload
from autoscaler.core.spec import VALUE_METRIC_TYPES, MetricSpec, TargetSpec
from autoscaler.core.sync_step import StepResult
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.reader import MetricsReader
from autoscaler.prometheus.settings import PrometheusSettings

__all__ = ["ReplayRecorder", "unread_metrics"]


class ReplayRecorder:
    """Each sync of the replay (its replicas, what limited it, whether a metric failed), and each metric's
    reads: how many answered, and its first failure."""

    def __init__(self) -> None:
        self.syncs: list[tuple[float, int, str | None, bool]] = []
        self.reads: dict[str, int] = {}
        self.first_failure: dict[str, str] = {}

    def __call__(self, label: str, step: StepResult, real: RealWorkload) -> None:
        decision = step.decision
        failed = False
        for outcome in decision.metrics:
            name = outcome.spec.name
            if outcome.error is not None:
                failed = True
                self.first_failure.setdefault(name, outcome.error)
            elif not outcome.skipped:
                self.reads[name] = self.reads.get(name, 0) + 1
        self.syncs.append((step.at, decision.replicas, decision.limited_by, failed))


async def unread_metrics(
    client: RangeQuerier,
    prometheus: PrometheusSettings,
    query: TargetQuery,
    spec: TargetSpec,
    recorder: ReplayRecorder,
    grid: Grid,
    max_points: int,
) -> dict[str, str]:
    """The metrics of ``spec`` the replay never read, each with why (``query``: the target as the replay
    asked for it, whose value metrics' PromQL is asked again over ``grid`` when they read nulls as 0)."""
    unread: dict[str, str] = {}
    planned = MetricsReader(HistoryClient(client, max_points=max_points), prometheus).planned_queries(query)
    for metric, plan in zip(spec.metrics, planned, strict=True):
        name = metric.name
        if recorder.reads.get(name, 0) == 0 and name in recorder.first_failure:
            unread[name] = f"it failed at every sync of the replay, first with: {recorder.first_failure[name]}"
        elif (
            metric.ignore_null_values
            and metric.type in VALUE_METRIC_TYPES
            and plan.text is not None
            and not await _answered(client, plan.text, grid, max_points)
        ):
            unread[name] = (
                "its query returned no series at any sync of the range, and ignoreNullValues read each empty "
                "answer as 0: the replay scaled as if it were 0 throughout"
            )
        if name in unread and metric.backend is not None:
            unread[name] += _elsewhere(metric, prometheus)
    return unread


def _elsewhere(metric: MetricSpec, prometheus: PrometheusSettings) -> str:
    return (
        f" (it names backend {metric.backend!r}; the replay read every metric from {prometheus.display_url}: "
        "compare with --prometheus, or --config, pointing at that backend's Prometheus)"
    )


async def _answered(client: RangeQuerier, promql: str, grid: Grid, max_points: int) -> bool:
    """Whether ``promql`` gave a number at any time of ``grid``."""
    matrix = await fetch_matrix(client, promql, grid, max_points=max_points)
    return any(_a_number(series.value) for vector in matrix.by_time.values() for series in vector)


def _a_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def unread_series(syncs: Sequence[tuple[float, int, str | None, bool]], unread: dict[str, str]) -> list[bool]:
    """Each sync's "a metric failed" flag, every sync's when a metric was never read (its differences are the
    unread metric's, not the values' or the tolerance's)."""
    return [failed or bool(unread) for _, _, _, failed in syncs]
