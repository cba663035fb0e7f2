"""The targets' series in the service's own metrics: per target while there are few, in aggregate always.

Per-target series carry only ``namespace`` and ``name`` (plus ``metric``, ``reason``, ``direction``,
``condition`` or ``path``), never a pod; they are kept as plain values (:class:`TargetSeries`) and rendered
only when /metrics is scraped. They cost about 12 series a target: 120,000 at 10,000 targets, 1.5 s of CPU
per scrape and 11 MiB per answer. So they are exported while the service knows at most
``metrics.perTargetSeriesLimit`` targets (1,000 by default; 0: never), and not at all above it — never an
arbitrary subset. ``autoscaler_per_target_series_exported`` says which it is. The aggregates (how many targets
are limited by each reason, in each condition status, backing off their writes, the oldest sync, scale
writes by direction) are exported always, and the alerts in manifests/monitoring fall back on them.

Rendering runs in the HTTP server's worker thread while the loop goes on changing the records, so the
records are never changed in place: every change assigns a new tuple or dict, and the collector reads a
snapshot of the target table taken in one step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

LIMIT_REASONS = ("ScaleUpLimit", "ScaleDownLimit", "TooManyReplicas", "TooFewReplicas")
CONDITIONS = ("AbleToScale", "ScalingActive", "ScalingLimited")
WRITE_PATHS = ("horizontal", "vpa")  # what a target's write backoff holds: scale + status, or the VPA
DEFAULT_PER_TARGET_LIMIT = 1000


class TargetSeries:
    """One target's series, as plain values (prometheus-client's labelled children cost ~1 KiB a series)."""

    __slots__ = (
        "conditions",
        "last_sync",
        "limited",
        "metrics",
        "reasons",
        "replicas",
        "scale_events",
        "write_backoff",
    )

    def __init__(self) -> None:
        self.replicas: tuple[int | None, int | None, int | None] = (None, None, None)  # current, desired, final
        self.reasons: tuple[str, ...] = LIMIT_REASONS  # the state set's members (known reasons, then others seen)
        self.limited = ""
        self.metrics: dict[str, tuple[float | None, float | None]] = {}  # metric -> (value, target)
        self.conditions: dict[str, int] = {}
        self.scale_events: dict[str, int] = {}
        self.last_sync: float | None = None
        self.write_backoff: dict[str, float] = {}  # path -> seconds (only paths that ever failed)


_REPLICA_FAMILIES = (
    ("autoscaler_target_current_replicas", "Replicas of the scale target when it was last synced."),
    ("autoscaler_target_desired_replicas", "Replicas the metrics ask for, before stabilization and limits."),
    ("autoscaler_target_final_replicas", "Replicas decided after stabilization, behavior and min/max."),
)
_LABELS = ["namespace", "name"]


class TargetCollector:
    """Renders the targets' series at scrape time (see the module docstring for what and when)."""

    def __init__(
        self,
        targets: Mapping[tuple[str, str], TargetSeries],
        per_target_limit: int,
        wall_clock: Callable[[], float],
    ) -> None:
        self._targets = targets
        self.per_target_limit = per_target_limit
        self._wall_clock = wall_clock
        self.scale_events_total: dict[str, int] = {"up": 0, "down": 0}  # kept by ServiceMetrics, new dict per change

    def describe(self) -> Iterator[Metric]:
        return iter(())  # the families' samples vary; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        targets = sorted(self._targets.items())  # one step: the loop may add or remove targets meanwhile
        exported = len(targets) <= self.per_target_limit
        yield _gauge(
            "autoscaler_per_target_series_exported",
            "1 while per-target series are exported (at most metrics.perTargetSeriesLimit targets), else 0.",
            [([], 1 if exported else 0)],
        )
        yield from self._aggregates(targets)
        if exported:
            yield from _per_target(targets)

    def _aggregates(self, targets: list[tuple[tuple[str, str], TargetSeries]]) -> Iterator[Metric]:
        limited = dict.fromkeys(LIMIT_REASONS, 0)
        conditions = {(c, s): 0 for c in CONDITIONS for s in ("True", "False")}
        backing_off = dict.fromkeys(WRITE_PATHS, 0)
        oldest: float | None = None
        for _, series in targets:
            if series.limited:
                limited[series.limited] = limited.get(series.limited, 0) + 1
            for condition, status in series.conditions.items():
                key = (condition, "True" if status else "False")
                conditions[key] = conditions.get(key, 0) + 1
            for path, seconds in series.write_backoff.items():
                if seconds > 0:
                    backing_off[path] = backing_off.get(path, 0) + 1
            if series.last_sync is not None and (oldest is None or series.last_sync < oldest):
                oldest = series.last_sync
        yield _gauge(
            "autoscaler_targets_limited",
            "Targets whose decision a reason limits now.",
            [([reason], count) for reason, count in limited.items()],
            ["reason"],
        )
        yield _gauge(
            "autoscaler_targets_condition",
            "Targets by status condition and its status.",
            [([condition, status], count) for (condition, status), count in sorted(conditions.items())],
            ["condition", "status"],
        )
        yield _gauge(
            "autoscaler_targets_write_backoff",
            "Targets whose writes (path horizontal: scale and status; vpa) are backing off after failures.",
            [([path], count) for path, count in backing_off.items()],
            ["path"],
        )
        yield _gauge(
            "autoscaler_targets_oldest_sync_age_seconds",
            "Seconds since the least recently synced target last synced successfully.",
            [([], max(0.0, round(self._wall_clock() - oldest, 3)))] if oldest is not None else [],
        )
        events = CounterMetricFamily(
            "autoscaler_scale_events",
            "Scale writes that went through, all targets, by direction.",
            labels=["direction"],
        )
        for direction, count in self.scale_events_total.items():
            events.add_metric([direction], count)
        yield events


def _gauge(
    name: str, documentation: str, samples: list[tuple[list[str], float]], labels: list[str] | None = None
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=labels or [])
    for values, value in samples:
        family.add_metric(values, value)
    return family


def _per_target(targets: list[tuple[tuple[str, str], TargetSeries]]) -> Iterator[Metric]:
    for index, (family_name, documentation) in enumerate(_REPLICA_FAMILIES):
        family = GaugeMetricFamily(family_name, documentation, labels=_LABELS)
        for (namespace, name), series in targets:
            replicas = series.replicas[index]
            if replicas is not None:
                family.add_metric([namespace, name], replicas)
        yield family
    families: dict[str, Any] = {
        "limited": GaugeMetricFamily(
            "autoscaler_target_limited",
            "1 for the reason limiting the decision now, 0 for the others (a state set).",
            labels=[*_LABELS, "reason"],
        ),
        "values": GaugeMetricFamily(
            "autoscaler_target_metric_value",
            "Current value of each metric of a target (absent while missing).",
            labels=[*_LABELS, "metric"],
        ),
        "goals": GaugeMetricFamily(
            "autoscaler_target_metric_target", "Target value of each metric.", labels=[*_LABELS, "metric"]
        ),
        "events": CounterMetricFamily(
            "autoscaler_target_scale_events", "Scale writes by direction.", labels=[*_LABELS, "direction"]
        ),
        "conditions": GaugeMetricFamily(
            "autoscaler_target_condition",
            "Status conditions: 1 True, 0 False, absent when Unknown.",
            labels=[*_LABELS, "condition"],
        ),
        "last_sync": GaugeMetricFamily(
            "autoscaler_target_last_sync_timestamp_seconds",
            "Unix time of the target's last successful sync.",
            labels=_LABELS,
        ),
        "backoff": GaugeMetricFamily(
            "autoscaler_target_write_backoff_seconds",
            "The delay before the next write of a target whose writes keep failing "
            "(path horizontal: scale and status; vpa); 0 once a write succeeds.",
            labels=[*_LABELS, "path"],
        ),
    }
    for (namespace, name), series in targets:
        for reason in series.reasons:
            families["limited"].add_metric([namespace, name, reason], 1 if reason == series.limited else 0)
        for metric, (value, target) in series.metrics.items():
            if value is not None:
                families["values"].add_metric([namespace, name, metric], value)
            if target is not None:
                families["goals"].add_metric([namespace, name, metric], target)
        for direction, count in series.scale_events.items():
            families["events"].add_metric([namespace, name, direction], count)
        for condition, status in series.conditions.items():
            families["conditions"].add_metric([namespace, name, condition], status)
        if series.last_sync is not None:
            families["last_sync"].add_metric([namespace, name], series.last_sync)
        for path, seconds in series.write_backoff.items():
            families["backoff"].add_metric([namespace, name, path], seconds)
    yield from families.values()
