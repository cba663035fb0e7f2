"""Under-provisioning: how many replicas the metrics called for at a sync, and how many were serving.

The *ideal* count is what the metrics and their targets ask for at that instant, with none of the
engine's caution (no tolerance, no rebalancing of missing or unready pods, no windows or rate limits):
for each metric, the replicas its value and target call for, the largest across metrics, clamped by
``minReplicas``/``maxReplicas``:

* a per-pod metric (Resource, ContainerResource, Pods): the usage ratio (utilization or average over
  the ready pods' samples, divided by the target) × the pods that gave those samples: the demand in
  pods of the target's size;
* an Object or External ``AverageValue`` target: the value ÷ the per-pod target;
* an Object or External ``Value`` target: the ratio value ÷ target × the Running and Ready pods (as
  upstream's formula, without its tolerance).

The under-provisioning of a sync is ``max(0, ideal − ready)``, where ready counts the replay's pods that
are Running and Ready (a pod the replay added serves only once ``--pod-startup`` has passed).
"""

from __future__ import annotations

import math

from autoscaler.core.decision import Decision
from autoscaler.core.observation import ConditionStatus, Observation, PodPhase
from autoscaler.core.results import MetricOutcome
from autoscaler.core.spec import MetricTargetType, TargetSpec

# A ratio computed in floating point can land a hair above a whole number of pods (3.0000000004 pods is 3).
_SLACK = 1e-9


def ready_replicas(observation: Observation) -> int:
    """The pods that serve: Running and Ready, not being deleted."""
    return sum(
        1
        for pod in observation.pods
        if pod.phase is PodPhase.RUNNING and pod.ready is ConditionStatus.TRUE and not pod.deleting
    )


def metric_ideal(outcome: MetricOutcome, observation: Observation) -> int | None:
    """The replicas one metric's value and target call for (None: the metric gave no value)."""
    if outcome.error is not None or outcome.skipped:
        return None
    pods = outcome.pod_result
    if pods is not None:
        return _ceil(pods.ratio * pods.samples_used)
    value = outcome.value_result
    if value is None:
        return None
    if outcome.spec.target.type is MetricTargetType.AVERAGE_VALUE:
        # ratio = value ÷ (target × status.replicas): the value in pods of the target's size.
        return _ceil(value.ratio * observation.scale.status_replicas)
    return _ceil(value.ratio * ready_replicas(observation))


def ideal_replicas(spec: TargetSpec, observation: Observation, decision: Decision) -> int | None:
    """The largest count any metric calls for, within ``minReplicas``/``maxReplicas``; None when no metric
    gave a value this sync."""
    wanted = [n for n in (metric_ideal(o, observation) for o in decision.metrics) if n is not None]
    if not wanted:
        return None
    return max(spec.min_replicas, min(spec.max_replicas, max(wanted)))


def _ceil(pods: float) -> int:
    return max(0, math.ceil(pods - _SLACK))
