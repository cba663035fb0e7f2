"""The service's own Prometheus metrics: one registry per :class:`ServiceMetrics`, nothing global.

Naming follows Prometheus conventions: an ``autoscaler_`` prefix, base units (seconds), ``_total`` on
counters, ``_seconds`` on durations. Label values come from small closed sets; a value outside its set is
recorded as ``other`` instead of growing the series count. The targets' series (per target while there are
at most ``metrics.perTargetSeriesLimit``, in aggregate always) are :mod:`.metrics_targets`';
:meth:`ServiceMetrics.forget_target` removes a target's when it goes away. Histograms carry no per-target
labels at all: their bucket count times the number of targets would dominate the scrape.

Limiting reasons are exported as a *state set* (the kube-state-metrics idiom): one series per known reason,
1 for the reason limiting the target now and 0 for the others; all 0 when nothing limits it. The series
stay put from sync to sync, so ``autoscaler_target_limited == 1`` and ``changes()`` both work.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.gc_collector import GCCollector
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector

from autoscaler import native
from autoscaler.service.telemetry.loop_histogram import LoopHistogram
from autoscaler.service.telemetry.metrics_caches import CacheCollector, CacheState
from autoscaler.service.telemetry.metrics_targets import (
    DEFAULT_PER_TARGET_LIMIT,
    WRITE_PATHS,
    TargetCollector,
    TargetSeries,
)

RECONCILE_RESULTS = frozenset({"scaled", "unchanged", "error", "dry_run", "held"})  # held: another autoscaler
QUERY_OUTCOMES = frozenset({"ok", "empty", "partial", "error"})
PROMETHEUS_ERROR_KINDS = frozenset(
    {"unreachable", "timeout", "http", "bad_query", "malformed", "too_large", "partial", "redirect"}
)
CLOCK_PEERS = frozenset({"prometheus"})
NOT_LIMITED = frozenset({"", "DesiredWithinRange"})
DIRECTIONS = frozenset({"up", "down"})
WRITE_KINDS = frozenset({"scale", "status", "vpa"})
OTHER = "other"
_EOF = b"# EOF\n"  # OpenMetrics' last line

# Seconds. A sync is a few milliseconds when it only reads caches; Prometheus queries and API calls take
# milliseconds to seconds; anything near the 15 s period is a problem worth its own bucket.
FAST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

TargetMetric = tuple[str, float | None, float | None]  # (metric name, current value, target value)


def _bounded(value: str, allowed: Iterable[str]) -> str:
    return value if value in allowed else OTHER


class _WithoutCreated:
    """Serve another registry's families minus the ``*_created`` samples. In the text format Prometheus
    scrapes, those are not timestamps of anything it uses but one extra gauge series per counter and
    histogram child; prometheus-client can only turn them off process-wide."""

    def __init__(self, inner: CollectorRegistry) -> None:
        self._inner = inner

    def collect(self) -> Iterator[Metric]:
        for family in self._inner.collect():
            family.samples = [s for s in family.samples if not s.name.endswith("_created")]
            yield family


class _LogLinesDropped:
    """``autoscaler_log_lines_dropped_total``, read from the log writer when scraped."""

    def __init__(self, source: Callable[[], int]) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "autoscaler_log_lines_dropped",
            "Log lines dropped because the log stream did not keep up (a warning line says how many, where).",
        )
        family.add_metric([], self._source())
        yield family


class ServiceMetrics:
    """Everything the service reports about itself. Every method is cheap and never raises on odd input
    (unknown label values become ``other``), so calling it can't break a reconcile."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        process_metrics: bool = True,
        wall_clock: Callable[[], float] = time.time,
        per_target_limit: int = DEFAULT_PER_TARGET_LIMIT,
    ) -> None:
        # The families live in a private registry; ``registry`` (what /metrics serves) sees them through
        # _WithoutCreated, and stays a plain CollectorRegistry the service may register more collectors in.
        r = CollectorRegistry(auto_describe=True)
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.registry.register(_WithoutCreated(r))
        self._wall_clock = wall_clock
        self._targets: dict[tuple[str, str], TargetSeries] = {}
        self._caches: Callable[[], Iterable[CacheState]] = lambda: ()

        # Reconciles (syncs of one target).
        # Observed at every sync: without prometheus-client's locks (see loop_histogram.py).
        self.reconcile_duration = LoopHistogram(
            "autoscaler_reconcile_duration_seconds",
            "Time one target's sync took, from start to decision written.",
            FAST_BUCKETS,
        )
        self.reconciles = Counter("autoscaler_reconciles_total", "Target syncs by result.", ["result"], registry=r)
        self._reconciles_by_result: dict[str, Counter] = {}
        self.reconcile_errors = Counter(
            "autoscaler_reconcile_errors_total", "Failed target syncs by reason.", ["reason"], registry=r
        )
        self.schedule_lag = LoopHistogram(
            "autoscaler_schedule_lag_seconds", "How late a sync started compared with its planned tick.", LAG_BUCKETS
        )
        r.register(self.reconcile_duration)
        r.register(self.schedule_lag)

        # Prometheus, the metrics source.
        self.prometheus_query_duration = Histogram(
            "autoscaler_prometheus_query_duration_seconds",
            "Duration of Prometheus queries, errors included.",
            buckets=FAST_BUCKETS,
            registry=r,
        )
        self.prometheus_queries = Counter(
            "autoscaler_prometheus_queries_total", "Prometheus queries by outcome.", ["outcome"], registry=r
        )
        self.prometheus_errors = Counter(
            "autoscaler_prometheus_errors_total", "Failed Prometheus queries by kind.", ["kind"], registry=r
        )
        self.prometheus_warnings = Counter(
            "autoscaler_prometheus_warnings_total",
            "Warnings in Prometheus answers: partial (a store did not answer: the "
            "answer is read as a failure) or other (logged once per text).",
            ["kind"],
            registry=r,
        )
        for kind in ("partial", "other"):
            self.prometheus_warnings.labels(kind)

        # The Kubernetes API.
        self.kubernetes_requests = Counter(
            "autoscaler_kubernetes_requests_total",
            "Kubernetes API requests by verb, resource and HTTP status code.",
            ["verb", "resource", "code"],
            registry=r,
        )
        self.write_failures = Counter(
            "autoscaler_write_failures_total",
            "Failed writes of targets by kind (scale, status, vpa); each backs off.",
            ["kind"],
            registry=r,
        )
        self.kubernetes_request_duration = Histogram(
            "autoscaler_kubernetes_request_duration_seconds",
            "Duration of Kubernetes API requests (watches excluded).",
            ["verb"],
            buckets=FAST_BUCKETS,
            registry=r,
        )

        # The targets': rendered at scrape time from plain records (metrics_targets.py).
        self._target_collector = TargetCollector(self._targets, per_target_limit, wall_clock)
        r.register(self._target_collector)

        # The process.
        self.leader = Gauge("autoscaler_leader", "1 while this instance is the leader.", registry=r)
        self.leader_renew_late = Histogram(
            "autoscaler_leader_renew_late_seconds",
            "How much later than planned each Lease renewal attempt started "
            "(a stalled or overloaded process renews late before it loses the lease).",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.targets = Gauge("autoscaler_targets", "Targets known, by state.", ["state"], registry=r)
        r.register(CacheCollector(self._cache_source))
        self._log_lines_dropped: Callable[[], int] = lambda: 0
        r.register(_LogLinesDropped(lambda: self._log_lines_dropped()))
        self.gc_pause = Histogram(
            "autoscaler_gc_pause_seconds",
            "How long each cyclic garbage collection stopped the process, by generation "
            "(a full one over a large heap stops the event loop).",
            ["generation"],
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.gc_pauses = [self.gc_pause.labels(str(generation)) for generation in range(3)]  # loop/collector.py
        self.event_loop_lag = Histogram(
            "autoscaler_event_loop_lag_seconds",
            "How late the event loop ran a timer (blocked or overloaded loop).",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.clock_skew = Gauge(
            "autoscaler_clock_skew_seconds",
            "How far this service's clock is ahead of a peer's (negative: behind), "
            "estimated from the peer's Date headers.",
            ["peer"],
            registry=r,
        )
        self.large_answers = Counter(
            "autoscaler_prometheus_large_answers_total",
            "Prometheus answers larger than largeResponseBytes, decoded in steps with the loop's turns between.",
            registry=r,
        )
        self.events_dropped = Counter(
            "autoscaler_events_dropped_total",
            "Events not written: a target past 25 Events in a burst gets one per 5 minutes (client-go's spam filter).",
            registry=r,
        )
        self.build_info = Gauge(
            "autoscaler_build_info",
            "Always 1; the labels say what is running.",
            ["version", "python", "compiled"],
            registry=r,
        )
        self.build_info.labels(*native.build_labels()).set(1)
        self.shard_info = Gauge(
            "autoscaler_shard_info",
            "Always 1; `shard` names the targets this instance serves (empty: those without the `label_key` label).",
            ["shard", "label_key"],
            registry=r,
        )
        for state in ("active", "invalid"):
            self.targets.labels(state).set(0)
        self.leader.set(0)
        if process_metrics:  # process_cpu_seconds_total, process_resident_memory_bytes, python_gc_*
            ProcessCollector(registry=r)
            GCCollector(registry=r)

    # ---- exposition -----------------------------------------------------------------------------

    def exposition(self, accept: str = "") -> tuple[bytes, str]:
        """/metrics' body and its content type for an Accept header (text format 0.0.4, or OpenMetrics when
        asked for): the registry as prometheus-client writes it, then the per-target families."""
        encoder, content_type = choose_encoder(accept)
        body = encoder(self.registry)
        openmetrics = content_type.startswith("application/openmetrics-text")
        per_target = self._target_collector.per_target_text(openmetrics=openmetrics).encode()
        if openmetrics and body.endswith(_EOF):
            return body[: -len(_EOF)] + per_target + _EOF, content_type
        return body + per_target, content_type

    def render(self) -> bytes:
        """Everything in the Prometheus text format (version 0.0.4)."""
        return self.exposition()[0]

    # ---- reconciles ----------------------------------------------------------------------------

    def observe_reconcile(
        self, namespace: str, name: str, seconds: float, result: str, error_reason: str | None = None
    ) -> None:
        """One finished sync. ``result``: scaled | unchanged | error | dry_run | held. ``error_reason`` (for
        ``error``) must come from a small set, e.g. the Prometheus error kind or ``FailedGetScale``."""
        result = _bounded(result, RECONCILE_RESULTS)
        self.reconcile_duration.observe(max(0.0, seconds))
        counter = self._reconciles_by_result.get(result)
        if counter is None:  # labels() is a lookup under a lock: done once per result, not per sync
            counter = self._reconciles_by_result[result] = self.reconciles.labels(result)
        counter.inc()
        if result == "error":
            self.reconcile_errors.labels(error_reason or "unknown").inc()
        elif result != OTHER:
            self._series(namespace, name).last_sync = self._wall_clock()

    def observe_schedule_lag(self, seconds: float) -> None:
        self.schedule_lag.observe(max(0.0, seconds))

    def observe_prometheus_query(self, seconds: float, outcome: str, error_kind: str | None = None) -> None:
        """``outcome``: ok | empty (no series came back) | partial (a store did not answer) | error, with
        ``error_kind`` one of unreachable | timeout | http | bad_query | malformed | too_large | partial | redirect
        (``PrometheusError.kind``)."""
        outcome = _bounded(outcome, QUERY_OUTCOMES)
        self.prometheus_query_duration.observe(max(0.0, seconds))
        self.prometheus_queries.labels(outcome).inc()
        if outcome == "error":
            self.prometheus_errors.labels(_bounded(error_kind or "", PROMETHEUS_ERROR_KINDS)).inc()

    def count_prometheus_warnings(self, partial: int, other: int) -> None:
        """An answer's warnings: ``partial`` ones (``isPartial`` counts as one), ``other`` ones."""
        if partial:
            self.prometheus_warnings.labels("partial").inc(partial)
        if other:
            self.prometheus_warnings.labels("other").inc(other)

    def observe_kubernetes_request(self, verb: str, resource: str, code: int | str, seconds: float) -> None:
        """One API request. ``code`` is the HTTP status, or a word when there was none (``timeout``,
        ``error``). Watches should be counted when they start, with ``seconds`` 0, or not at all."""
        self.kubernetes_requests.labels(verb, resource, str(code)).inc()
        if verb != "watch":
            self.kubernetes_request_duration.labels(verb).observe(max(0.0, seconds))

    # ---- targets --------------------------------------------------------------------------------

    def set_target(
        self,
        namespace: str,
        name: str,
        current: int | None,
        proposal: int | None,
        final: int | None,
        limited_reason: str | None = None,
        metrics: Sequence[TargetMetric] = (),
        pause: tuple[str, float] | None = None,
        sync_period: float | None = None,
    ) -> None:
        """The outcome of a decision. ``None`` removes a series (a value that is not known is absent, not
        0); metrics missing from ``metrics`` are removed, so a spec edit leaves no stale series. ``pause``:
        (mode, since) while the target is paused (core/pause.py); ``sync_period``: how often it syncs."""
        series = self._series(namespace, name)
        series.replicas, series.pause, series.sync_period = (current, proposal, final), pause, sync_period
        reason = limited_reason or ""
        if reason in NOT_LIMITED:
            reason = ""
        elif reason not in series.reasons:
            series.reasons = (*series.reasons, reason)
        series.limited = reason
        series.metrics = {metric: (value, target) for metric, value, target in metrics}

    def set_target_conditions(self, namespace: str, name: str, conditions: Mapping[str, bool | None]) -> None:
        """HPA-style conditions (AbleToScale, ScalingActive, ScalingLimited…): True 1, False 0, None removed."""
        series = self._series(namespace, name)
        changed = dict(series.conditions)  # a new dict: a scrape may be reading the old one in its thread
        for condition, status in conditions.items():
            if status is None:
                changed.pop(condition, None)
            else:
                changed[condition] = 1 if status else 0
        series.conditions = changed

    def count_scale_event(self, namespace: str, name: str, direction: str) -> None:
        """A scale write that went through; ``direction`` up | down."""
        direction = _bounded(direction, DIRECTIONS)
        series = self._series(namespace, name)
        series.scale_events = {**series.scale_events, direction: series.scale_events.get(direction, 0) + 1}
        totals = self._target_collector.scale_events_total
        self._target_collector.scale_events_total = {**totals, direction: totals.get(direction, 0) + 1}

    def set_write_backoff(self, namespace: str, name: str, path: str, seconds: float) -> None:
        """A target's writes on ``path`` (horizontal | vpa) back off ``seconds``; 0 when they work again."""
        if path in WRITE_PATHS:
            series = self._series(namespace, name)
            series.write_backoff = {**series.write_backoff, path: max(0.0, seconds)}

    def count_write_failure(self, kind: str) -> None:
        """A failed write of a target: ``kind`` scale | status | vpa."""
        self.write_failures.labels(_bounded(kind, WRITE_KINDS)).inc()

    def count_event_dropped(self) -> None:
        self.events_dropped.inc()

    def forget_target(self, namespace: str, name: str) -> None:
        """Remove every series of a target (deleted, or no longer ours)."""
        self._targets.pop((namespace, name), None)

    def _series(self, namespace: str, name: str) -> TargetSeries:
        series = self._targets.get((namespace, name))
        if series is None:
            series = self._targets[namespace, name] = TargetSeries()
        return series

    # ---- the process ----------------------------------------------------------------------------

    def set_shard(self, shard: str | None, label_key: str) -> None:
        self.shard_info.clear()
        self.shard_info.labels(shard or "", label_key).set(1)

    def set_leader(self, leading: bool) -> None:
        self.leader.set(1 if leading else 0)

    def observe_leader_renew_late(self, seconds: float) -> None:
        self.leader_renew_late.observe(max(0.0, seconds))

    def observe_gc_pause(self, generation: int, seconds: float) -> None:
        """One cyclic collection of ``generation`` (0-2) stopped the process ``seconds`` (loop/collector.py)."""
        if 0 <= generation < len(self.gc_pauses):
            self.gc_pauses[generation].observe(seconds)

    def set_targets(self, active: int, invalid: int) -> None:
        self.targets.labels("active").set(active)
        self.targets.labels("invalid").set(invalid)

    def watch_caches(self, source: Callable[[], Iterable[CacheState]]) -> None:
        """Where the cache series come from: called at scrape time, one state per watch cache."""
        self._caches = source

    def watch_log_lines_dropped(self, source: Callable[[], int]) -> None:
        """Where ``autoscaler_log_lines_dropped_total`` comes from: called at scrape time."""
        self._log_lines_dropped = source

    def _cache_source(self) -> Iterable[CacheState]:
        return self._caches()

    def set_clock_skew(self, peer: str, seconds: float) -> None:
        self.clock_skew.labels(_bounded(peer, CLOCK_PEERS)).set(seconds)
