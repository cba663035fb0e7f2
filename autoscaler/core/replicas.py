"""Replica calculation, exactly as upstream's ``replica_calculator.go``.

Pods and samples in, a replica proposal out; no I/O. Each function mirrors one upstream function:
:func:`group_pods` (``groupPods``), :func:`pod_requests` (``calculateRequests``),
:func:`resource_replicas` (``GetResourceReplicas``), :func:`plain_replicas`
(``calcPlainMetricReplicas``), :func:`usage_ratio_replicas` (``getUsageRatioReplicaCount``) and
:func:`per_pod_replicas` (``GetObjectPerPodMetricReplicas`` / ``GetExternalPerPodMetricReplicas``).
Failures raise :class:`ReplicaCalculationError` with upstream's message.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from autoscaler.core.gomath import MAX_INT64, ceil_to_int32, float_div, trunc_div
from autoscaler.core.observation import ConditionStatus, PodInfo, PodPhase, Sample
from autoscaler.core.pod_columns import SampleColumns
from autoscaler.core.results import PodGroups, PodMetricResult, Rebalance, ValueResult
from autoscaler.core.settings import ControllerSettings, Tolerances

NO_PODS = "no pods returned by selector while calculating replica count"
NO_USABLE_METRICS = "did not receive metrics for targeted pods (pods might be unready)"
NO_MATCHING_METRICS = "no metrics returned matched known pods"

# What a missing pod is assumed to use on a scale-down, and how a ratio is recomputed.
_MissingValue = Callable[[str], int]
_Recompute = Callable[[dict[str, int]], float]


class ReplicaCalculationError(Exception):
    """The metric cannot produce a proposal this sync (the message is upstream's)."""


def _is_ready_true(pod: PodInfo) -> bool:
    return pod.ready is ConditionStatus.TRUE


# Module constants: an enum member looked up through its class in the per-pod loop costs more than the test.
_FAILED, _SUCCEEDED, _PENDING = PodPhase.FAILED, PodPhase.SUCCEEDED, PodPhase.PENDING
_TRUE = ConditionStatus.TRUE


def group_pods(
    pods: Sequence[PodInfo], samples: Mapping[str, Sample], resource: str, settings: ControllerSettings, now: float
) -> PodGroups:
    """``groupPods``: ignored, unready, missing or ready — each pod exactly once, in that order."""
    ready = 0
    unready: list[str] = []
    missing: list[str] = []
    ignored: list[str] = []
    cpu = resource == "cpu"
    initialization = settings.cpu_initialization_period
    present = _names(samples)
    for pod in pods:
        phase = pod.phase
        if pod.deleting or phase is _FAILED or phase is _SUCCEEDED:
            ignored.append(pod.name)
            continue
        if phase is _PENDING:
            unready.append(pod.name)
            continue
        if pod.name not in present:
            missing.append(pod.name)
            continue
        if cpu:
            # Ready and past initialization is never unready: _cpu_sample_unready's common answer, inline (the
            # sample itself is made only when the rules need its time).
            started = pod.started_at
            settled = pod.ready is _TRUE and started is not None and started + initialization <= now
            if not settled and _cpu_sample_unready(pod, samples[pod.name], settings, now):
                unready.append(pod.name)
                continue
        ready += 1
    return PodGroups(ready, tuple(unready), tuple(missing), tuple(ignored))


def _names(samples: Mapping[str, Sample]) -> Mapping[str, object]:
    """What answers "has this pod a sample?" fastest: the values' dict of a reading held as columns (a
    ``Sample`` is then made only for a pod whose time is asked), else the mapping itself."""
    return samples.pod_values if isinstance(samples, SampleColumns) else samples


def _cpu_sample_unready(pod: PodInfo, sample: Sample, settings: ControllerSettings, now: float) -> bool:
    """The CPU-only readiness rules; every comparison is strict, as upstream's After/Before."""
    if pod.ready is None or pod.started_at is None:
        return True
    ready_since = pod.ready_since if pod.ready_since is not None else -math.inf
    if pod.started_at + settings.cpu_initialization_period > now:
        # Still initializing: unready if not ready, or if no full metric window has been
        # collected since the last readiness transition.
        return pod.ready is ConditionStatus.FALSE or sample.timestamp < ready_since + sample.window
    # Past initialization: unready only if it is not ready and has never been ready since it started.
    return pod.ready is ConditionStatus.FALSE and pod.started_at + settings.initial_readiness_delay > ready_since


def pod_requests(pods: Sequence[PodInfo], container: str | None, resource: str) -> dict[str, int]:
    """``calculateRequests``: every listed pod's request (milli), ignored and missing pods included."""
    requests: dict[str, int] = {}
    for pod in pods:
        if container is None and pod.pod_requests:
            requests[pod.name] = _pod_level_request(pod, resource)
            continue
        total = 0
        found = False
        for info in pod.containers:
            if container is None or info.name == container:
                if resource not in info.requests:
                    raise ReplicaCalculationError(
                        f"missing request for {resource} in container {info.name} of Pod {pod.name}"
                    )
                total += info.requests[resource]
            if container is not None and info.name == container:
                found = True
                break
        if container is not None and not found:
            raise ReplicaCalculationError(f"container {container} not found in Pod {pod.name}")
        requests[pod.name] = total
    return requests


def _pod_level_request(pod: PodInfo, resource: str) -> int:
    """``calculatePodLevelRequests``: ``PodRequests`` takes the pod-level value of a resource the pod sets
    and aggregates the containers' requests for any other; no value at all is an error."""
    assert pod.pod_requests is not None
    if resource in pod.pod_requests:
        return pod.pod_requests[resource]
    values = [c.requests[resource] for c in pod.containers if resource in c.requests]
    if not values:
        raise ReplicaCalculationError(f"missing pod-level request for {resource} in Pod {pod.name}")
    return sum(values)


def utilization_ratio(
    samples: Mapping[str, int], requests: Mapping[str, int], target_utilization: int
) -> tuple[float, int, int]:
    """``GetResourceUtilizationRatio``: (ratio, integer percent, raw average milli).

    The percent is truncated to an integer *before* it is divided by the target (upstream does so).
    """
    metrics_total = 0
    requests_total = 0
    entries = 0
    for pod_name, value in samples.items():
        request = requests.get(pod_name)
        if request is None:
            continue  # a sample of an unlisted pod: no request, so it cannot count here
        metrics_total += value
        requests_total += request
        entries += 1
    if requests_total == 0:
        raise ReplicaCalculationError(NO_MATCHING_METRICS)
    utilization = trunc_div(metrics_total * 100, requests_total)
    return float(utilization) / float(target_utilization), utilization, trunc_div(metrics_total, entries)


def usage_ratio(samples: Mapping[str, int], target: int) -> tuple[float, int]:
    """``GetMetricUsageRatio``: (ratio, average milli)."""
    average = trunc_div(sum(samples.values()), len(samples))
    return float(average) / float(target), average


def resource_replicas(
    current_replicas: int,
    target_utilization: int,
    resource: str,
    container: str | None,
    pods: Sequence[PodInfo],
    samples: Mapping[str, Sample],
    tolerances: Tolerances,
    settings: ControllerSettings,
    now: float,
) -> PodMetricResult:
    """``GetResourceReplicas``: a Resource/ContainerResource metric with a Utilization target."""
    if not pods:
        raise ReplicaCalculationError(NO_PODS)
    groups = group_pods(pods, samples, resource, settings, now)
    values = _usable_values(samples, groups)
    if not values:
        raise ReplicaCalculationError(NO_USABLE_METRICS)
    requests = pod_requests(pods, container, resource)
    ratio, utilization, raw_average = utilization_ratio(values, requests, target_utilization)

    replicas, rule, rebalance = _proposal(
        current_replicas,
        ratio,
        groups,
        values,
        tolerances,
        missing_value=lambda name: trunc_div(requests[name] * max(100, target_utilization), 100),
        recompute=lambda enlarged: utilization_ratio(enlarged, requests, target_utilization)[0],
    )
    return PodMetricResult(
        replicas=replicas,
        ratio=ratio,
        usage=raw_average,
        utilization=utilization,
        groups=groups,
        samples_used=len(values),
        rule=rule,
        rebalance=rebalance,
        superfluous=_superfluous(samples, pods),
    )


def plain_replicas(
    current_replicas: int,
    target: int,
    resource: str,
    pods: Sequence[PodInfo],
    samples: Mapping[str, Sample],
    tolerances: Tolerances,
    settings: ControllerSettings,
    now: float,
) -> PodMetricResult:
    """``calcPlainMetricReplicas``: Pods metrics and Resource AverageValue targets.

    ``resource`` is the resource name for Resource metrics (so the CPU readiness rules apply) and
    "" for Pods metrics.
    """
    if not pods:
        raise ReplicaCalculationError(NO_PODS)
    groups = group_pods(pods, samples, resource, settings, now)
    values = _usable_values(samples, groups)
    if not values:
        raise ReplicaCalculationError(NO_USABLE_METRICS)
    ratio, usage = usage_ratio(values, target)
    replicas, rule, rebalance = _proposal(
        current_replicas,
        ratio,
        groups,
        values,
        tolerances,
        missing_value=lambda _name: target,
        recompute=lambda enlarged: usage_ratio(enlarged, target)[0],
    )
    return PodMetricResult(
        replicas=replicas,
        ratio=ratio,
        usage=usage,
        utilization=None,
        groups=groups,
        samples_used=len(values),
        rule=rule,
        rebalance=rebalance,
        superfluous=_superfluous(samples, pods),
    )


def _usable_values(samples: Mapping[str, Sample], groups: PodGroups) -> Mapping[str, int]:
    """``removeMetricsForPods`` for ignored and unready pods; other samples (even of unlisted pods) stay.

    Read only: with nothing dropped, a reading held as columns gives its own dict of values."""
    if isinstance(samples, SampleColumns):
        values: Mapping[str, int] = samples.pod_values
    else:
        values = {name: sample.value for name, sample in samples.items()}
    if not groups.ignored and not groups.unready:
        return values
    dropped = set(groups.ignored) | set(groups.unready)
    return {name: value for name, value in values.items() if name not in dropped}


def _superfluous(samples: Mapping[str, Sample], pods: Sequence[PodInfo]) -> tuple[str, ...]:
    listed = {pod.name for pod in pods}
    return tuple(name for name in _names(samples) if name not in listed)


def _proposal(
    current_replicas: int,
    ratio: float,
    groups: PodGroups,
    values: Mapping[str, int],
    tolerances: Tolerances,
    *,
    missing_value: _MissingValue,
    recompute: _Recompute,
) -> tuple[int, str, Rebalance | None]:
    """The shared tail of GetResourceReplicas and calcPlainMetricReplicas."""
    scale_up_with_unready = bool(groups.unready) and ratio > 1.0
    if not scale_up_with_unready and not groups.missing:
        if tolerances.is_within(ratio):
            return current_replicas, "within-tolerance", None
        return ceil_to_int32(ratio * float(groups.ready_count)), "ratio-times-ready", None

    enlarged = dict(values)
    filled = "nothing"
    if groups.missing:
        if ratio < 1.0:
            for name in groups.missing:
                enlarged[name] = missing_value(name)
            filled = "target"
        elif ratio > 1.0:
            for name in groups.missing:
                enlarged[name] = 0
            filled = "zero"
    if scale_up_with_unready:
        for name in groups.unready:
            enlarged[name] = 0
    new_ratio = recompute(enlarged)
    rebalance = Rebalance(new_ratio, len(enlarged), filled, scale_up_with_unready)
    if tolerances.is_within(new_ratio):
        return current_replicas, "rebalanced-within-tolerance", rebalance
    if (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current_replicas, "rebalanced-direction-flip", rebalance
    new_replicas = ceil_to_int32(new_ratio * float(len(enlarged)))
    if (new_ratio < 1.0 and new_replicas > current_replicas) or (new_ratio > 1.0 and new_replicas < current_replicas):
        return current_replicas, "rebalanced-count-flip", rebalance
    return new_replicas, "rebalanced", rebalance


def ready_running_pods(pods: Sequence[PodInfo]) -> int:
    """``getReadyPodsCount``: pods that are Running and Ready (nothing else is considered)."""
    if not pods:
        raise ReplicaCalculationError(f"unable to calculate ready pods: {NO_PODS}")
    return sum(1 for pod in pods if pod.phase is PodPhase.RUNNING and _is_ready_true(pod))


def usage_ratio_replicas(
    current_replicas: int, usage: int, target: int, pods: Sequence[PodInfo], tolerances: Tolerances
) -> ValueResult:
    """``getUsageRatioReplicaCount``: Object and External ``Value`` targets."""
    ratio = float_div(float(usage), float(target))
    if current_replicas == 0:
        # Scaling from zero: no tolerance and no pods to count.
        return ValueResult(ceil_to_int32(ratio), ratio, usage, None, "from-zero")
    if tolerances.is_within(ratio):
        return ValueResult(current_replicas, ratio, usage, None, "within-tolerance")
    ready = ready_running_pods(pods)
    return ValueResult(ceil_to_int32(ratio * float(ready)), ratio, usage, ready, "ratio-times-ready")


def per_pod_replicas(status_replicas: int, usage: int, target_per_pod: int, tolerances: Tolerances) -> ValueResult:
    """Object and External ``AverageValue`` targets: compared with ``status.replicas``.

    The reported usage is the per-pod average, rounded up (0 when there are no replicas).
    """
    ratio = float_div(float(usage), float(target_per_pod) * float(status_replicas))
    replicas = status_replicas
    rule = "within-tolerance"
    if not tolerances.is_within(ratio):
        replicas = ceil_to_int32(float_div(float(usage), float(target_per_pod)))
        rule = "usage-over-target"
    if float(usage) >= float(MAX_INT64):
        average = MAX_INT64
    elif status_replicas:
        average = math.ceil(float(usage) / float(status_replicas))
    else:
        average = 0  # upstream divides by zero here; report no average rather than garbage
    return ValueResult(replicas, ratio, average, None, rule)
