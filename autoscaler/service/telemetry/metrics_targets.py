"""The targets' series in the service's own metrics: per target while there are few, in aggregate always.

Per-target series carry only ``namespace`` and ``name`` (plus ``metric``, ``reason``, ``direction``,
``condition`` or ``path``), never a pod; they are kept as plain values (:class:`TargetSeries`) and rendered
only when /metrics is scraped, as text written here (:func:`render_per_target`, several times quicker than
prometheus-client's general path: docs/benchmarks-history.md, "Start-up, `/metrics`, shorter pauses"). They
are about 15 series a target: 150,000 in every answer at 10,000 targets. So they are exported while the
service knows at most
``metrics.perTargetSeriesLimit`` targets (1,000 by default; 0: never), and not at all above it — never an
arbitrary subset. ``autoscaler_per_target_series_exported`` says which it is. The aggregates (how many targets
are limited by each reason, in each condition status, backing off their writes, the oldest sync, scale
writes by direction) are exported always, and the alerts in manifests/monitoring fall back on them.

Rendering runs in the HTTP server's worker thread while the loop goes on changing the records, so the
records are never changed in place: every change assigns a new tuple or dict, and the collector reads a
snapshot of the target table taken in one step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.utils import floatToGoString

LIMIT_REASONS = ("ScaleUpLimit", "ScaleDownLimit", "TooManyReplicas", "TooFewReplicas")
CONDITIONS = ("AbleToScale", "ScalingActive", "ScalingLimited")
WRITE_PATHS = ("horizontal", "vpa")  # what a target's write backoff holds: scale + status, or the VPA
DEFAULT_PER_TARGET_LIMIT = 1000
PAUSE_MODES = ("paused", "replicas", "scaleIn", "scaleOut")  # core/pause_state.PauseMode's values


class TargetSeries:
    """One target's series, as plain values (prometheus-client's labelled children cost far more memory)."""

    __slots__ = (
        "conditions",
        "last_sync",
        "limited",
        "metrics",
        "pause",
        "reasons",
        "replicas",
        "scale_events",
        "sync_period",
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
        self.pause: tuple[str, float] | None = None  # (mode, since) while paused (core/pause.py)
        self.sync_period: float | None = None  # how often it syncs (spec.syncPeriodSeconds, else the service's)


_REPLICA_FAMILIES = (
    ("autoscaler_target_current_replicas", "Replicas of the scale target when it was last synced."),
    ("autoscaler_target_desired_replicas", "Replicas the metrics ask for, before stabilization and limits."),
    ("autoscaler_target_final_replicas", "Replicas decided after stabilization, behavior and min/max."),
)


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
        # One step (the loop may add or remove targets meanwhile), and not sorted: aggregates need no order,
        # and sorting 10,000 targets' keys was most of a scrape's CPU above the per-target limit.
        targets = list(self._targets.values())
        exported = len(targets) <= self.per_target_limit
        yield _gauge(
            "autoscaler_per_target_series_exported",
            "1 while per-target series are exported (at most metrics.perTargetSeriesLimit targets), else 0.",
            [([], 1 if exported else 0)],
        )
        yield from self._aggregates(targets)

    def per_target_text(self, *, openmetrics: bool) -> str:
        """The per-target families' text (see :func:`render_per_target`), empty above the limit. Read
        from a snapshot of its own, taken a moment after :meth:`collect`'s: each is consistent in itself."""
        if len(self._targets) > self.per_target_limit:
            return ""
        targets = sorted(self._targets.items())
        return render_per_target(targets, openmetrics=openmetrics) if len(targets) <= self.per_target_limit else ""

    def _aggregates(self, targets: list[TargetSeries]) -> Iterator[Metric]:
        limited = dict.fromkeys(LIMIT_REASONS, 0)
        conditions = {(c, s): 0 for c in CONDITIONS for s in ("True", "False")}
        backing_off = dict.fromkeys(WRITE_PATHS, 0)
        oldest: float | None = None
        due: float | None = None  # the earliest a target's next sync was due: its last sync and one period
        paused = dict.fromkeys(PAUSE_MODES, 0)
        paused_since: float | None = None  # the earliest pause's start
        for series in targets:
            if series.limited:
                limited[series.limited] = limited.get(series.limited, 0) + 1
            for condition, status in series.conditions.items():
                key = (condition, "True" if status else "False")
                conditions[key] = conditions.get(key, 0) + 1
            for path, seconds in series.write_backoff.items():
                if seconds > 0:
                    backing_off[path] = backing_off.get(path, 0) + 1
            if series.pause is not None:
                mode, since = series.pause
                paused[mode] = paused.get(mode, 0) + 1
                paused_since = since if paused_since is None else min(paused_since, since)
            if series.last_sync is not None:
                oldest = series.last_sync if oldest is None else min(oldest, series.last_sync)
                next_due = series.last_sync + (series.sync_period or 0.0)
                due = next_due if due is None else min(due, next_due)
        yield _gauge(
            "autoscaler_targets_limited",
            "Targets whose decision a reason limits now.",
            # The known reasons in their order, then any other by name (whatever order the targets came in).
            [([reason], limited.pop(reason)) for reason in LIMIT_REASONS]
            + [([reason], count) for reason, count in sorted(limited.items())],
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
        yield _gauge(
            "autoscaler_targets_most_overdue_sync_seconds",
            "Seconds past its next sync (its last successful sync and one sync period) of the most overdue target.",
            [([], max(0.0, round(self._wall_clock() - due, 3)))] if due is not None else [],
        )
        yield _gauge("autoscaler_targets_paused", "Targets paused now, by mode.", list(_by_key(paused)), ["mode"])
        yield _gauge(
            "autoscaler_targets_longest_pause_seconds",
            "Seconds since the longest-paused target became paused (absent while none is).",
            [([], max(0.0, round(self._wall_clock() - paused_since, 3)))] if paused_since is not None else [],
        )
        events = CounterMetricFamily(
            "autoscaler_scale_events",
            "Scale writes that went through, all targets, by direction.",
            labels=["direction"],
        )
        for direction, count in self.scale_events_total.items():
            events.add_metric([direction], count)
        yield events


def _by_key(counts: dict[str, int]) -> list[tuple[list[str], float]]:
    return [([key], count) for key, count in counts.items()]


def _gauge(
    name: str, documentation: str, samples: Sequence[tuple[list[str], float]], labels: list[str] | None = None
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=labels or [])
    for values, value in samples:
        family.add_metric(values, value)
    return family


_GAUGE, _COUNTER = "gauge", "counter"
# The per-target families in the order they are rendered: (name, type, help). A counter's samples are
# named with ``_total`` (the text format also names its family so; OpenMetrics does not).
_PER_TARGET_FAMILIES = (
    *((name, _GAUGE, documentation) for name, documentation in _REPLICA_FAMILIES),
    (
        "autoscaler_target_limited",
        _GAUGE,
        "1 for the reason limiting the decision now, 0 for the others (a state set).",
    ),
    ("autoscaler_target_metric_value", _GAUGE, "Current value of each metric of a target (absent while missing)."),
    ("autoscaler_target_metric_target", _GAUGE, "Target value of each metric."),
    ("autoscaler_target_scale_events", _COUNTER, "Scale writes by direction."),
    ("autoscaler_target_condition", _GAUGE, "Status conditions: 1 True, 0 False, absent when Unknown."),
    ("autoscaler_target_last_sync_timestamp_seconds", _GAUGE, "Unix time of the target's last successful sync."),
    (
        "autoscaler_target_write_backoff_seconds",
        _GAUGE,
        "The delay before the next write of a target whose writes keep failing "
        "(path horizontal: scale and status; vpa); 0 once a write succeeds.",
    ),
    (
        "autoscaler_target_fallback_active",
        _GAUGE,
        "1 while a failed metric of a target with spec.fallback stands for its fallback replicas, else 0.",
    ),
)
_PER_TARGET_FAMILIES += (
    ("autoscaler_target_paused", _GAUGE, "1 while a target is paused, with its mode (absent while not paused)."),
    ("autoscaler_target_paused_since_seconds", _GAUGE, "Unix time a paused target became paused."),
    (
        "autoscaler_target_sync_period_seconds",
        _GAUGE,
        "How often the target syncs: its spec.syncPeriodSeconds, else the service's sync.periodSeconds.",
    ),
)
FALLBACK_CONDITION = "Fallback"  # autoscaler_target_fallback_active is this condition's (core/fallback.py)


def render_per_target(targets: list[tuple[tuple[str, str], TargetSeries]], *, openmetrics: bool) -> str:
    """The per-target families as exposition text, in the text format (0.0.4) or OpenMetrics' (without
    its ``# EOF``): the same text prometheus-client writes for them (a test compares the two), written
    here because its general path was most of a scrape's CPU (docs/benchmarks-history.md, "Start-up,
    `/metrics`, shorter pauses"). Each target's label pairs are escaped once, not once per sample."""
    lines: list[list[str]] = [[] for _ in _PER_TARGET_FAMILIES]
    current, desired, final, limited, values, goals, events, conditions, last_sync, backoff, fallback, *rest = lines
    paused, paused_since, sync_period = rest
    go = _go_float
    for (namespace, name), series in targets:
        # Labels in the order prometheus-client writes them: sorted by name.
        pair = f'name="{_escape(name)}",namespace="{_escape(namespace)}"'
        for family, replicas in zip((current, desired, final), series.replicas, strict=True):
            if replicas is not None:
                family.append(f"{{{pair}}} {go(replicas)}")
        for reason in series.reasons:
            limited.append(f'{{{pair},reason="{_escape(reason)}"}} {"1.0" if reason == series.limited else "0.0"}')
        for metric, (value, target) in series.metrics.items():
            metric_pair = f'{{metric="{_escape(metric)}",{pair}}} '
            if value is not None:
                values.append(metric_pair + go(value))
            if target is not None:
                goals.append(metric_pair + go(target))
        for direction, count in series.scale_events.items():
            events.append(f'{{direction="{_escape(direction)}",{pair}}} {go(count)}')
        for condition, status in series.conditions.items():
            conditions.append(f'{{condition="{_escape(condition)}",{pair}}} {go(status)}')
        if series.last_sync is not None:
            last_sync.append(f"{{{pair}}} {go(series.last_sync)}")
        for path, seconds in series.write_backoff.items():
            backoff.append(f'{{{pair},path="{_escape(path)}"}} {go(seconds)}')
        falling_back = series.conditions.get(FALLBACK_CONDITION)  # only targets with spec.fallback carry it
        if falling_back is not None:
            fallback.append(f"{{{pair}}} {go(falling_back)}")
        if series.pause is not None:
            mode, since = series.pause
            paused.append(f'{{mode="{_escape(mode)}",{pair}}} 1.0')
            paused_since.append(f"{{{pair}}} {go(since)}")
        if series.sync_period is not None:
            sync_period.append(f"{{{pair}}} {go(series.sync_period)}")
    out: list[str] = []
    for (family_name, kind, documentation), samples in zip(_PER_TARGET_FAMILIES, lines, strict=True):
        sample_name = family_name + "_total" if kind == _COUNTER else family_name
        header = family_name if openmetrics else sample_name
        documentation = _escape(documentation) if openmetrics else _escape_help(documentation)
        out.append(f"# HELP {header} {documentation}\n# TYPE {header} {kind}\n")
        out.extend(f"{sample_name}{sample}\n" for sample in samples)
    return "".join(out)


def _escape(value: str) -> str:
    """A label value as the exposition formats write it (backslash, newline and double quote escaped)."""
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


def _escape_help(text: str) -> str:
    """A HELP text as the text format (0.0.4) writes it: backslash and newline escaped, quotes not."""
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _go_float(value: float) -> str:
    """A sample value as prometheus-client writes it (Go's float formatting); small integers quickly."""
    if type(value) is int and -1_000_000 < value < 1_000_000:
        return f"{value}.0"
    text: str = floatToGoString(value)  # type: ignore[no-untyped-call]
    return text
