"""A target's own sync period in the service's metrics: each target's period, and the aggregate the alert on
a late sync reads counting past it (spec.syncPeriodSeconds may be up to an hour)."""

from __future__ import annotations

from autoscaler.service.telemetry.metrics import ServiceMetrics
from tests.service.test_metrics import value


def test_the_most_overdue_sync_counts_each_targets_own_period() -> None:
    """An hourly target (spec.syncPeriodSeconds: 3600) synced 700 s ago is the oldest sync but not late; one on
    15 s synced 100 s ago is 85 s past its next sync: the aggregate the alert reads says 85."""
    clock = [1_800_000_000.0]
    metrics = ServiceMetrics(process_metrics=False, wall_clock=lambda: clock[0], per_target_limit=0)
    for name, period, later in (("hourly", 3600.0, 600), ("web", 15.0, 100)):
        metrics.set_target("shop", name, 2, 2, 2, sync_period=period)
        metrics.observe_reconcile("shop", name, 0.01, "unchanged")
        clock[0] += later
    assert value(metrics, "autoscaler_targets_oldest_sync_age_seconds") == 700.0
    assert value(metrics, "autoscaler_targets_most_overdue_sync_seconds") == 85.0
