"""The sync context owns the sync period: the service's, a target's own (``spec.syncPeriodSeconds``), and when a
new reconciler's first sync comes. The running service's targets on their periods: test_sync_period.py."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import TargetSpec
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.service.sync.reconciler import SyncContext, SyncReports
from autoscaler.service.sync.schedule import Schedule, TickTimers
from autoscaler.service.telemetry.metrics_sink import NullMetrics


def context(period: float) -> SyncContext:
    return SyncContext(
        ControllerSettings(),
        False,
        Schedule(period, 0.1),
        asyncio.Semaphore(1),
        lambda: 0.0,
        TickTimers(),
        SyncReports(NullMetrics()),
    )


def spec(**extra: Any) -> TargetSpec:
    data: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": 5,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
            }
        ],
        **extra,
    }
    return parse_target_spec(data, require_queries=False)


def test_a_target_syncs_on_its_own_period_else_the_services() -> None:
    sync = context(15.0)
    assert sync.period_of(spec()) == 15.0
    assert sync.period_of(spec(syncPeriodSeconds=5)) == 5.0


def test_the_schedules_grid_is_the_sync_period_stated_once() -> None:
    sync = context(30.0)
    assert sync.period == sync.schedule.period == 30.0
    # No second spelling of it that could disagree with the grid.
    assert "period" not in {field.name for field in dataclasses.fields(sync)}


def test_a_new_reconcilers_first_sync() -> None:
    sync = context(15.0)
    # At start-up: the namespace's first tick (namespaces spread over one period).
    assert sync.first_delay(at_startup=True, served_before=False) is None
    assert sync.first_delay(at_startup=True, served_before=True) is None
    # A target served before (another shard's, arriving with a status): a period, for that shard to let go.
    assert sync.first_delay(at_startup=False, served_before=True) == 15.0
    # A new target: within a second.
    delay = sync.first_delay(at_startup=False, served_before=False)
    assert delay is not None and 0.0 <= delay <= 1.0
