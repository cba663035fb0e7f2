"""``status.metricHealth``: each metric's health of a target with ``spec.fallback``, written and read back.

KEDA's ``status.health`` shape, keyed as :func:`~autoscaler.core.metric_health.metric_keys` keys the metrics::

    metricHealth:
      external/queue_depth: {numberOfFailures: 4, status: Failing, since: "2026-12-02T03:00:15.25Z"}
      resource/cpu: {numberOfFailures: 0, status: Happy}

Restored after a restart (or by a newly elected leader), so a fallback goes on counting where the last sync
left off. The count stops at the failure the fallback began at (core/metric_health.py says why), so an
outage writes the status a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from autoscaler.core.decision import Decision
from autoscaler.core.gomath import MAX_INT32
from autoscaler.core.metric_health import MetricHealth
from autoscaler.values.timestamps import parse_rfc3339, rfc3339

METRIC_HEALTH = "metricHealth"  # the status key


def metric_health_document(health: Sequence[MetricHealth]) -> dict[str, Any]:
    """``status.metricHealth``'s value (``since`` as exact as the history's times)."""
    document: dict[str, Any] = {}
    for item in health:
        entry: dict[str, Any] = {"numberOfFailures": item.failures, "status": item.status}
        if item.since is not None and item.failures > 0:
            entry["since"] = rfc3339(item.since, fraction=True)
        document[item.key] = entry
    return document


def fallback_status(decision: Decision) -> dict[str, Any]:
    """The status section of a target with ``spec.fallback`` (empty for any other target: the status write
    drops a ``metricHealth`` the target no longer has)."""
    if not decision.metric_health:
        return {}
    return {METRIC_HEALTH: metric_health_document(decision.metric_health)}


def restore_metric_health(document: object) -> tuple[MetricHealth, ...]:
    """The health a status kept; entries that cannot be read are left out (their metric starts at 0)."""
    if not isinstance(document, Mapping):
        return ()
    restored = []
    for key, entry in document.items():
        if not isinstance(key, str) or not isinstance(entry, Mapping):
            continue
        failures = entry.get("numberOfFailures")
        if isinstance(failures, bool) or not isinstance(failures, int) or not 0 <= failures <= MAX_INT32:
            continue
        since = parse_rfc3339(entry.get("since")) if failures > 0 else None
        restored.append(MetricHealth(key, failures, since))
    return tuple(restored)
