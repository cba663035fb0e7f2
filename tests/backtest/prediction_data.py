"""A known history for the backtest's provisioning figures and forecasts: ``step/steady``, a Deployment that
really ran two pods all along, scaled on an External metric (``queue_rate``, AverageValue 10 per pod) whose
value repeats every ten minutes: 20 for five minutes, then 60 for five (so the ideal count steps 2 → 6 → 2).
The window replayed is the tests' usual one (:data:`~tests.backtest.history_data.T0`, 40 syncs of 15 s): the
value steps up at its 21st sync (T0 + 300 s). Half an hour before T0 is there for the forecast to learn from
(a season of 600 s: two seasons of history are the least it uses). Samples every 5 s, so that the
forecast's range query at its own step (60 s, on the minute) and the replay's at 15 s both land on samples.
"""

from __future__ import annotations

from typing import Any

from autoscaler_sandbox.history import OpenMetricsHistory as Backfill
from tests.backtest.history_data import T0

NAMESPACE = "step"
SEASON = 600
LOW, HIGH = 20, 60
STEP_UP_AT = T0 + 300  # the 21st sync of the window
HISTORY_FROM = T0 - 1800
QUERY = 'sum(queue_rate{queue="step"})'

STEADY_SPEC: dict[str, Any] = {
    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "steady"},
    "minReplicas": 2,
    "maxReplicas": 10,
    "metrics": [
        {
            "type": "External",
            "external": {
                "metric": {"name": "queue_rate"},
                "target": {"type": "AverageValue", "averageValue": "10"},
                "query": QUERY,
            },
        }
    ],
    # Up in one step (without behavior the first step is limited to max(2 × current, 4)).
    "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 10, "periodSeconds": 15}]}},
}
PREDICTION = {"model": "seasonalNaive", "seasonSeconds": SEASON, "stepSeconds": 60, "podStartupSeconds": 45}


def value_at(t: float) -> int:
    return HIGH if (t - T0) % SEASON >= SEASON / 2 else LOW


def add_step(backfill: Backfill) -> None:
    t = HISTORY_FROM
    while t <= T0 + SEASON:
        backfill.add("queue_rate", {"namespace": NAMESPACE, "queue": "step"}, t, str(value_at(t)))
        backfill.replica_set(NAMESPACE, "steady-7c", "steady", t)
        for pod in ("steady-1", "steady-2"):
            backfill.pod(NAMESPACE, pod, "steady-7c", t, started=HISTORY_FROM - 3600)
        backfill.deployment(NAMESPACE, "steady", t, 2)
        t += 5
