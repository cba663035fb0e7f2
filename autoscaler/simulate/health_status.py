"""A scenario's ``status.metricHealth``: each metric's failures before the first step, for a target with
``spec.fallback`` (docs/simulate.md). A recording of ``autoscaler run`` carries it, so a replay that starts in
the middle of an outage falls back at the sync the service did.

The status' shape (``numberOfFailures``, ``status``, ``since``), with ``since`` in the scenario's seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autoscaler.core.gomath import MAX_INT32
from autoscaler.core.metric_health import FAILING, HAPPY, MetricHealth
from autoscaler.values.fields import Obj

METRIC_HEALTH_KEY = "metricHealth"


def read_metric_health(status: Obj | None, max_time: float) -> tuple[MetricHealth, ...]:
    """``status.metricHealth`` of a scenario (``status`` is the view of its ``status``), each problem added to
    its errors with its path; () when it has none."""
    obj = status.obj(METRIC_HEALTH_KEY) if status is not None else None
    if obj is None:
        return ()
    health: list[MetricHealth] = []
    for key in list(obj.value):
        entry = obj.obj(str(key))
        if entry is None:
            continue
        failures = entry.integer("numberOfFailures", required=True, minimum=0, maximum=MAX_INT32)
        entry.string("status", choices=(HAPPY, FAILING))  # as the service writes it: numberOfFailures says it
        since = entry.number("since", minimum=-max_time, maximum=max_time)
        entry.finish()
        if failures is not None:
            health.append(MetricHealth(key=str(key), failures=failures, since=since if failures > 0 else None))
    return tuple(health)


def metric_health_json(health: Sequence[MetricHealth]) -> dict[str, Any]:
    """The scenario's ``status.metricHealth`` for ``health`` (times as they are)."""
    document: dict[str, Any] = {}
    for item in health:
        entry: dict[str, Any] = {"numberOfFailures": item.failures, "status": item.status}
        if item.since is not None and item.failures > 0:
            entry["since"] = item.since
        document[item.key] = entry
    return document
