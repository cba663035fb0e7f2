"""The service's own metrics, read back the way Prometheus reads them: through the text exposition."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from autoscaler.loop.collector import track_pauses
from autoscaler.loop.health import monitor_event_loop_lag
from autoscaler.service.telemetry.metrics import ServiceMetrics
from autoscaler.service.telemetry.metrics_caches import CacheState
from autoscaler.service.telemetry.metrics_targets import LIMIT_REASONS

Labels = dict[str, str]


def scrape(metrics: ServiceMetrics) -> dict[str, tuple[str, list[Sample]]]:
    """Family name → (type, samples), from the rendered text."""
    return {
        family.name: (family.type, family.samples)
        for family in text_string_to_metric_families(metrics.render().decode())
    }


def value(metrics: ServiceMetrics, sample_name: str, **labels: str) -> float | None:
    for _, samples in scrape(metrics).values():
        for sample in samples:
            if sample.name == sample_name and sample.labels == labels:
                return sample.value
    return None


def series(metrics: ServiceMetrics, sample_name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(s.labels.items())): s.value
        for _, samples in scrape(metrics).values()
        for s in samples
        if s.name == sample_name
    }


def test_families_follow_the_naming_conventions() -> None:
    families = scrape(ServiceMetrics())
    expected = {
        "autoscaler_reconcile_duration_seconds": "histogram",
        "autoscaler_reconciles": "counter",
        "autoscaler_reconcile_errors": "counter",
        "autoscaler_schedule_lag_seconds": "histogram",
        "autoscaler_prometheus_query_duration_seconds": "histogram",
        "autoscaler_prometheus_queries": "counter",
        "autoscaler_prometheus_errors": "counter",
        "autoscaler_kubernetes_requests": "counter",
        "autoscaler_kubernetes_request_duration_seconds": "histogram",
        "autoscaler_target_current_replicas": "gauge",
        "autoscaler_target_desired_replicas": "gauge",
        "autoscaler_target_final_replicas": "gauge",
        "autoscaler_target_limited": "gauge",
        "autoscaler_target_metric_value": "gauge",
        "autoscaler_target_metric_target": "gauge",
        "autoscaler_target_scale_events": "counter",
        "autoscaler_target_condition": "gauge",
        "autoscaler_target_last_sync_timestamp_seconds": "gauge",
        "autoscaler_leader": "gauge",
        "autoscaler_leader_renew_late_seconds": "histogram",
        "autoscaler_write_failures": "counter",
        "autoscaler_target_write_backoff_seconds": "gauge",
        "autoscaler_target_fallback_active": "gauge",
        "autoscaler_target_paused": "gauge",
        "autoscaler_target_paused_since_seconds": "gauge",
        "autoscaler_target_sync_period_seconds": "gauge",
        "autoscaler_targets_paused": "gauge",
        "autoscaler_targets_longest_pause_seconds": "gauge",
        "autoscaler_targets": "gauge",
        "autoscaler_cache_synced": "gauge",
        "autoscaler_cache_stale_seconds": "gauge",
        "autoscaler_cache_watch_failures": "counter",
        "autoscaler_cache_relists": "counter",
        "autoscaler_cache_relisting": "gauge",
        "autoscaler_event_loop_lag_seconds": "histogram",
        "autoscaler_clock_skew_seconds": "gauge",
        "autoscaler_prometheus_large_answers": "counter",
        "autoscaler_events_dropped": "counter",
        "autoscaler_log_lines_dropped": "counter",
        "autoscaler_prometheus_warnings": "counter",
        "autoscaler_build_info": "gauge",
        "autoscaler_per_target_series_exported": "gauge",
        "autoscaler_targets_limited": "gauge",
        "autoscaler_targets_condition": "gauge",
        "autoscaler_targets_write_backoff": "gauge",
        "autoscaler_targets_oldest_sync_age_seconds": "gauge",
        "autoscaler_targets_most_overdue_sync_seconds": "gauge",
        "autoscaler_scale_events": "counter",
        "autoscaler_gc_pause_seconds": "histogram",
        "autoscaler_shard_info": "gauge",
    }
    assert {name: kind for name, (kind, _) in families.items() if name.startswith("autoscaler_")} == expected
    assert "process_cpu_seconds" in families and "process_resident_memory_bytes" in families
    assert value(ServiceMetrics(), "autoscaler_leader") == 0.0
    assert value(ServiceMetrics(), "autoscaler_targets", state="invalid") == 0.0


def test_instances_do_not_share_series() -> None:
    one, two = ServiceMetrics(process_metrics=False), ServiceMetrics(process_metrics=False)
    one.set_leader(True)
    assert value(one, "autoscaler_leader") == 1.0 and value(two, "autoscaler_leader") == 0.0


def test_reconciles_count_results_errors_and_duration() -> None:
    metrics = ServiceMetrics(process_metrics=False, wall_clock=lambda: 1_700_000_000.0)
    metrics.observe_reconcile("shop", "web", 0.004, "scaled")
    metrics.observe_reconcile("shop", "web", 0.02, "unchanged")
    metrics.observe_reconcile("shop", "api", 0.5, "error", error_reason="unreachable")
    metrics.observe_reconcile("shop", "api", 0.5, "exploded")
    assert series(metrics, "autoscaler_reconciles_total") == {
        (("result", "scaled"),): 1.0,
        (("result", "unchanged"),): 1.0,
        (("result", "error"),): 1.0,
        (("result", "other"),): 1.0,
    }
    assert value(metrics, "autoscaler_reconcile_errors_total", reason="unreachable") == 1.0
    assert value(metrics, "autoscaler_reconcile_duration_seconds_count") == 4.0
    assert value(metrics, "autoscaler_reconcile_duration_seconds_bucket", le="0.005") == 1.0
    assert value(metrics, "autoscaler_reconcile_duration_seconds_sum") == 1.024
    # Only successful syncs move the target's "last sync" time.
    assert series(metrics, "autoscaler_target_last_sync_timestamp_seconds") == {
        (("name", "web"), ("namespace", "shop")): 1_700_000_000.0
    }


def test_prometheus_and_kubernetes_calls() -> None:
    metrics = ServiceMetrics(process_metrics=False)
    metrics.observe_prometheus_query(0.003, "ok")
    metrics.observe_prometheus_query(0.002, "empty")
    metrics.observe_prometheus_query(5.0, "error", "timeout")
    metrics.observe_prometheus_query(0.01, "error", "bad_query")
    metrics.observe_prometheus_query(0.01, "error", "teapot")
    assert series(metrics, "autoscaler_prometheus_queries_total") == {
        (("outcome", "ok"),): 1.0,
        (("outcome", "empty"),): 1.0,
        (("outcome", "error"),): 3.0,
    }
    assert series(metrics, "autoscaler_prometheus_errors_total") == {
        (("kind", "timeout"),): 1.0,
        (("kind", "bad_query"),): 1.0,
        (("kind", "other"),): 1.0,
    }
    assert value(metrics, "autoscaler_prometheus_query_duration_seconds_bucket", le="2.5") == 4.0
    assert series(metrics, "autoscaler_prometheus_warnings_total") == {
        (("kind", "partial"),): 0.0,
        (("kind", "other"),): 0.0,
    }
    metrics.count_prometheus_warnings(1, 0)
    metrics.count_prometheus_warnings(0, 2)
    metrics.observe_prometheus_query(0.01, "partial")
    assert series(metrics, "autoscaler_prometheus_warnings_total") == {
        (("kind", "partial"),): 1.0,
        (("kind", "other"),): 2.0,
    }
    assert value(metrics, "autoscaler_prometheus_queries_total", outcome="partial") == 1.0

    metrics.observe_kubernetes_request("patch", "deployments/scale", 200, 0.004)
    metrics.observe_kubernetes_request("patch", "deployments/scale", 409, 0.003)
    metrics.observe_kubernetes_request("update", "leases", "timeout", 5.0)
    metrics.observe_kubernetes_request("watch", "pods", 200, 300.0)
    assert (
        value(metrics, "autoscaler_kubernetes_requests_total", verb="patch", resource="deployments/scale", code="409")
        == 1.0
    )
    assert (
        value(metrics, "autoscaler_kubernetes_requests_total", verb="update", resource="leases", code="timeout") == 1.0
    )
    assert value(metrics, "autoscaler_kubernetes_request_duration_seconds_count", verb="patch") == 2.0
    assert value(metrics, "autoscaler_kubernetes_request_duration_seconds_count", verb="watch") is None


def test_a_target_decision_and_its_limiting_reason_as_a_state_set() -> None:
    metrics = ServiceMetrics(process_metrics=False)
    metrics.set_target(
        "shop",
        "web",
        current=2,
        proposal=9,
        final=4,
        limited_reason="ScaleUpLimit",
        metrics=[("cpu", 0.92, 0.5), ("http_requests", 130.0, 100.0)],
    )
    target = {"namespace": "shop", "name": "web"}
    assert value(metrics, "autoscaler_target_current_replicas", **target) == 2.0
    assert value(metrics, "autoscaler_target_desired_replicas", **target) == 9.0
    assert value(metrics, "autoscaler_target_final_replicas", **target) == 4.0
    assert value(metrics, "autoscaler_target_metric_value", **target, metric="cpu") == 0.92
    assert value(metrics, "autoscaler_target_metric_target", **target, metric="http_requests") == 100.0
    limited = {reason: value(metrics, "autoscaler_target_limited", **target, reason=reason) for reason in LIMIT_REASONS}
    assert limited == {"ScaleUpLimit": 1.0, "ScaleDownLimit": 0.0, "TooManyReplicas": 0.0, "TooFewReplicas": 0.0}

    # Nothing limits it now: every state 0. A metric went missing: absent, not 0. A metric was removed
    # from the spec: its series go.
    metrics.set_target(
        "shop", "web", current=4, proposal=4, final=4, limited_reason="DesiredWithinRange", metrics=[("cpu", None, 0.5)]
    )
    assert set(series(metrics, "autoscaler_target_limited").values()) == {0.0}
    assert len(series(metrics, "autoscaler_target_limited")) == len(LIMIT_REASONS)
    assert series(metrics, "autoscaler_target_metric_value") == {}
    assert list(series(metrics, "autoscaler_target_metric_target")) == [
        (("metric", "cpu"), ("name", "web"), ("namespace", "shop"))
    ]

    # A reason of its own (e.g. from the vertical side) joins the set for this target.
    metrics.set_target("shop", "web", current=4, proposal=None, final=4, limited_reason="MaxAllowed")
    assert value(metrics, "autoscaler_target_limited", **target, reason="MaxAllowed") == 1.0
    assert value(metrics, "autoscaler_target_limited", **target, reason="ScaleUpLimit") == 0.0
    assert value(metrics, "autoscaler_target_desired_replicas", **target) is None


def test_forget_target_removes_every_series_of_that_target_only() -> None:
    metrics = ServiceMetrics(process_metrics=False)
    for name in ("web", "api"):
        metrics.set_target(
            "shop", name, current=2, proposal=3, final=3, limited_reason="TooFewReplicas", metrics=[("cpu", 0.7, 0.5)]
        )
        metrics.set_target_conditions(
            "shop", name, {"AbleToScale": True, "ScalingActive": False, "ScalingLimited": None}
        )
        metrics.count_scale_event("shop", name, "up")
        metrics.observe_reconcile("shop", name, 0.01, "scaled")
    metrics.count_scale_event("shop", "web", "down")
    metrics.count_scale_event("shop", "web", "down")
    assert value(metrics, "autoscaler_target_scale_events_total", namespace="shop", name="web", direction="down") == 2.0
    assert value(metrics, "autoscaler_target_condition", namespace="shop", name="web", condition="ScalingActive") == 0.0
    assert (
        value(metrics, "autoscaler_target_condition", namespace="shop", name="web", condition="ScalingLimited") is None
    )

    metrics.forget_target("shop", "web")
    metrics.forget_target("shop", "never-seen")
    remaining = [
        s for _, samples in scrape(metrics).values() for s in samples if s.name.startswith("autoscaler_target_")
    ]
    assert remaining and all(s.labels["name"] == "api" for s in remaining)


def test_process_gauges() -> None:
    metrics = ServiceMetrics(process_metrics=False)
    metrics.set_leader(True)
    metrics.set_targets(active=12, invalid=1)
    # two pod caches (two watched namespaces), one deployment cache not listed yet
    metrics.watch_caches(
        lambda: [
            CacheState("pods", True, 0.0, 1, {"expired": 2}),
            CacheState("pods", True, 12.5, 2, {"error": 1}, relisting=True),
            CacheState("deployments", False, 0.0, 0, {}),
        ]
    )
    assert value(metrics, "autoscaler_leader") == 1.0
    assert value(metrics, "autoscaler_targets", state="active") == 12.0
    assert value(metrics, "autoscaler_targets", state="invalid") == 1.0
    assert series(metrics, "autoscaler_cache_synced") == {  # one pod cache is stale: pods do not follow
        (("resource", "pods"),): 0.0,
        (("resource", "deployments"),): 0.0,
    }
    assert series(metrics, "autoscaler_cache_stale_seconds") == {
        (("resource", "pods"),): 12.5,
        (("resource", "deployments"),): 0.0,
    }
    assert series(metrics, "autoscaler_cache_watch_failures_total")[(("resource", "pods"),)] == 3
    relists = series(metrics, "autoscaler_cache_relists_total")
    assert relists[(("reason", "expired"), ("resource", "pods"))] == 2
    assert relists[(("reason", "error"), ("resource", "pods"))] == 1
    assert relists[(("reason", "discovered"), ("resource", "deployments"))] == 0  # every reason has a series
    assert series(metrics, "autoscaler_cache_relisting") == {  # one pod cache relists too often
        (("resource", "pods"),): 1.0,
        (("resource", "deployments"),): 0.0,
    }
    metrics.set_leader(False)
    assert value(metrics, "autoscaler_leader") == 0.0


async def test_the_loop_lag_monitor_sees_a_blocked_loop() -> None:
    metrics = ServiceMetrics(process_metrics=False)
    monitor = asyncio.create_task(monitor_event_loop_lag(metrics.event_loop_lag, interval=0.02))
    await asyncio.sleep(0.05)
    # Blocked far longer than a busy machine delays a timer (tens of milliseconds when it shares its cores),
    # so that exactly one sample shows the block whatever else runs.
    time.sleep(0.6)  # noqa: ASYNC251 -- deliberately block the loop, as a long synchronous parse would
    await asyncio.sleep(0.05)
    monitor.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await monitor
    assert (value(metrics, "autoscaler_event_loop_lag_seconds_count") or 0) >= 3
    assert (
        value(metrics, "autoscaler_event_loop_lag_seconds_bucket", le="0.5")
        == (value(metrics, "autoscaler_event_loop_lag_seconds_count") or 0) - 1
    )
    assert (value(metrics, "autoscaler_event_loop_lag_seconds_sum") or 0) >= 0.55


@settings(max_examples=50, deadline=None)
@given(metric=st.text(min_size=1, max_size=40))
def test_any_metric_name_survives_the_exposition(metric: str) -> None:
    """Metric names come from users' specs: quotes, backslashes and newlines must be escaped."""
    metrics = ServiceMetrics(process_metrics=False)
    metrics.set_target("shop", "web", current=1, proposal=1, final=1, metrics=[(metric, 1.5, 2.0)])
    assert value(metrics, "autoscaler_target_metric_value", namespace="shop", name="web", metric=metric) == 1.5


def decide(metrics: ServiceMetrics, name: str, *, limited: str | None = None, active: bool = True) -> None:
    metrics.set_target("shop", name, 2, 3, 3, limited, [("rps", 10.0, 5.0)])
    metrics.set_target_conditions("shop", name, {"AbleToScale": True, "ScalingActive": active})
    metrics.observe_reconcile("shop", name, 0.01, "scaled")


def test_per_target_series_stop_above_the_limit_and_aggregates_stay() -> None:
    clock = [1_800_000_000.0]
    metrics = ServiceMetrics(process_metrics=False, wall_clock=lambda: clock[0], per_target_limit=2)
    decide(metrics, "a", limited="ScaleUpLimit")
    clock[0] += 30
    decide(metrics, "b", active=False)
    metrics.count_scale_event("shop", "a", "up")
    metrics.set_write_backoff("shop", "b", "horizontal", 8.0)
    assert value(metrics, "autoscaler_per_target_series_exported") == 1.0
    assert value(metrics, "autoscaler_target_final_replicas", namespace="shop", name="a") == 3.0

    clock[0] += 15
    decide(metrics, "c", limited="ScaleUpLimit")  # three targets: past the limit
    families = scrape(metrics)
    assert value(metrics, "autoscaler_per_target_series_exported") == 0.0
    assert not [name for name in families if name.startswith("autoscaler_target_")]  # none, not a subset
    assert series(metrics, "autoscaler_targets_limited") == {
        (("reason", "ScaleUpLimit"),): 2.0,
        (("reason", "ScaleDownLimit"),): 0.0,
        (("reason", "TooManyReplicas"),): 0.0,
        (("reason", "TooFewReplicas"),): 0.0,
    }
    assert value(metrics, "autoscaler_targets_condition", condition="ScalingActive", status="False") == 1.0
    assert value(metrics, "autoscaler_targets_condition", condition="ScalingActive", status="True") == 2.0
    assert value(metrics, "autoscaler_targets_write_backoff", path="horizontal") == 1.0
    assert value(metrics, "autoscaler_targets_oldest_sync_age_seconds") == 45.0  # "a", synced first
    assert value(metrics, "autoscaler_scale_events_total", direction="up") == 1.0

    metrics.forget_target("shop", "c")  # back under the limit: per target again
    assert value(metrics, "autoscaler_per_target_series_exported") == 1.0
    assert value(metrics, "autoscaler_target_scale_events_total", namespace="shop", name="a", direction="up") == 1.0


def test_a_limit_of_zero_exports_no_per_target_series() -> None:
    metrics = ServiceMetrics(process_metrics=False, per_target_limit=0)
    decide(metrics, "a")
    assert value(metrics, "autoscaler_per_target_series_exported") == 0.0
    assert not [name for name in scrape(metrics) if name.startswith("autoscaler_target_")]


async def test_a_scrape_in_its_thread_while_the_loop_changes_every_target() -> None:
    """/metrics renders in a worker thread while syncs go on: it must never see a record half-changed
    (a dict that changes size while it is read raises RuntimeError)."""
    metrics = ServiceMetrics(process_metrics=False, per_target_limit=10_000)
    names = [f"t{i}" for i in range(300)]
    for name in names:
        decide(metrics, name)
    stop = False

    def scrape_many() -> int:
        count = 0
        while not stop:
            metrics.render()
            count += 1
        return count

    scraping = asyncio.create_task(asyncio.to_thread(scrape_many))
    for round_ in range(150):
        for index, name in enumerate(names):
            metrics.set_target_conditions("shop", name, {"ScalingLimited": None if round_ % 2 else index % 2 == 0})
            metrics.count_scale_event("shop", name, "up" if round_ % 2 else "down")
            metrics.set_write_backoff("shop", name, "vpa" if round_ % 3 else "horizontal", float(round_))
            if index % 50 == 0:
                metrics.forget_target("shop", f"gone-{round_ - 1}")
                decide(metrics, f"gone-{round_}")
        await asyncio.sleep(0)
    stop = True
    assert await scraping > 0


def test_gc_pauses_are_timed_until_untracked() -> None:
    metrics = ServiceMetrics(process_metrics=False)
    untrack = track_pauses(metrics.observe_gc_pause)
    try:
        gc.collect()
        gc.collect(0)
    finally:
        untrack()
    full = value(metrics, "autoscaler_gc_pause_seconds_count", generation="2")
    young = value(metrics, "autoscaler_gc_pause_seconds_count", generation="0")
    assert full is not None and full >= 1 and young is not None and young >= 1
    gc.collect()
    assert value(metrics, "autoscaler_gc_pause_seconds_count", generation="2") == full
