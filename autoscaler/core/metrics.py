"""Per-metric proposals and their combination (``computeReplicasForMetric(s)`` upstream).

Each spec metric, with its reading, becomes a :class:`MetricOutcome`: the proposal, the value the
status reports (``status.currentMetrics``), the pods set aside, or the error and the condition
reason it raises. :func:`combine_metrics` then takes the largest proposal, and refuses to scale
down when any metric failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, ValuesView
from typing import cast

from autoscaler.core.conditions import steady_message
from autoscaler.core.gomath import saturating_sum_int64
from autoscaler.core.observation import (
    ExternalReading,
    FallbackReading,
    MetricFailure,
    MetricReading,
    ObjectReading,
    PodInfo,
    PodsReading,
    ResourceReading,
    Sample,
    ScaleInfo,
)
from autoscaler.core.pod_columns import SampleColumns, UsageColumns
from autoscaler.core.replicas import (
    ReplicaCalculationError,
    per_pod_replicas,
    plain_replicas,
    resource_replicas,
    usage_ratio_replicas,
)
from autoscaler.core.results import MetricOutcome, MetricsOutcome, MetricValue, ValueResult
from autoscaler.core.settings import ControllerSettings, Tolerances
from autoscaler.core.spec import RESOURCE_METRIC_TYPES, MetricSourceType, MetricSpec, MetricTargetType

FAILURE_REASONS = {
    MetricSourceType.RESOURCE: "FailedGetResourceMetric",
    MetricSourceType.CONTAINER_RESOURCE: "FailedGetContainerResourceMetric",
    MetricSourceType.PODS: "FailedGetPodsMetric",
    MetricSourceType.OBJECT: "FailedGetObjectMetric",
    MetricSourceType.EXTERNAL: "FailedGetExternalMetric",
}

# The members every sync tests for, looked up once (see spec.RESOURCE_METRIC_TYPES).
_CONTAINER_RESOURCE, _PODS, _OBJECT = (
    MetricSourceType.CONTAINER_RESOURCE,
    MetricSourceType.PODS,
    MetricSourceType.OBJECT,
)
_VALUE = MetricTargetType.VALUE


def go_selector_string(selector: Mapping[str, object] | None) -> str:
    """``%+v`` of a ``*metav1.LabelSelector`` as upstream prints it inside metric names."""
    if selector is None:
        return "<nil>"
    labels = selector.get("matchLabels") or {}
    label_text = "".join(f"{k}: {v}," for k, v in sorted(dict(labels).items()))  # type: ignore[call-overload]
    exprs = selector.get("matchExpressions") or []
    expr_text = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key')},Operator:{e.get('operator')},"
        f"Values:[{' '.join(e.get('values') or [])}],}},"
        for e in exprs  # type: ignore[attr-defined]
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{label_text}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{expr_text}}},}}"
    )


def metric_description(spec: MetricSpec) -> str:
    """The name upstream gives a metric in ValidMetricFound and in the rescale reason."""
    kind = spec.type
    if kind in RESOURCE_METRIC_TYPES:  # (tests on the module's members: see spec.RESOURCE_METRIC_TYPES)
        named = "container resource" if kind is _CONTAINER_RESOURCE else "resource"
        if spec.target.average_value is not None:
            return f"{spec.name} {named}"
        return f"{spec.name} {named} utilization (percentage of request)"
    if kind is _PODS:
        return f"pods metric {spec.name}"
    if kind is _OBJECT and spec.target.type is _VALUE:
        described = spec.described_object.kind if spec.described_object else ""
        return f"{described} metric {spec.name}"
    # Object AverageValue really is called "external metric" upstream.
    return f"external metric {spec.name}({go_selector_string(spec.selector)})"


def pod_samples(spec: MetricSpec, reading: ResourceReading) -> Mapping[str, Sample]:
    """Per-pod samples of a Resource/ContainerResource metric from per-container usage: one container's
    value, or the sum over all of them. A pod is missing (left out) when that container is not
    reported, when any container is reported without the resource (``None``), or when none is.

    A reading held as columns (the service's) gives columns: a dict of values and the time they share,
    no ``Sample`` made per pod (``core/pod_columns.py``)."""
    pods = reading.pods
    container = spec.container
    if isinstance(pods, UsageColumns):
        values: dict[str, int] = {}
        for pod_name, containers in pods.containers.items():
            value = _pod_value(container, containers)
            if value is not None:
                values[pod_name] = value
        return SampleColumns(values, pods.timestamp, pods.window, pods.times)
    samples: dict[str, Sample] = {}
    for pod_name, usage in pods.items():
        value = _pod_value(container, usage.containers)
        if value is not None:
            samples[pod_name] = Sample(value, usage.timestamp, usage.window)
    return samples


def _pod_value(container: str | None, containers: Mapping[str, int | None]) -> int | None:
    """One pod's value for :func:`pod_samples`: that container's, or every container's sum; None if missing."""
    if container is not None:
        return containers.get(container)
    values = containers.values()
    if not values or None in values:
        return None
    return sum(cast("ValuesView[int]", values))


def compute_metric(
    spec: MetricSpec,
    reading: MetricReading,
    scale: ScaleInfo,
    pods: Sequence[PodInfo],
    tolerances: Tolerances,
    settings: ControllerSettings,
    now: float,
) -> MetricOutcome:
    """``computeReplicasForMetric``: one metric's proposal, or its failure."""
    description = metric_description(spec)
    reason = FAILURE_REASONS[spec.type]
    if isinstance(reading, FallbackReading):
        return _fallback(spec, reading, scale, tolerances, description)
    try:
        kind = spec.type
        if kind in RESOURCE_METRIC_TYPES:
            return _resource(spec, reading, scale, pods, tolerances, settings, now, description)
        if kind is _PODS:
            return _pods(spec, reading, scale, pods, tolerances, settings, now, description)
        if kind is _OBJECT:
            return _object(spec, reading, scale, pods, tolerances, description)
        return _external(spec, reading, scale, pods, tolerances, description)
    except ReplicaCalculationError as exc:
        backend = isinstance(reading, MetricFailure) and reading.backend
        return MetricOutcome(spec=spec, description=description, error=str(exc), reason=reason, backend_failure=backend)


def _fallback(
    spec: MetricSpec, reading: FallbackReading, scale: ScaleInfo, tolerances: Tolerances, description: str
) -> MetricOutcome:
    """A pod metric standing for ``reading.replicas`` (``spec.fallback``): proposed as an External AverageValue
    metric whose value is KEDA's fallback value (replicas × its target), so the tolerance applies against
    ``status.replicas`` as it does there. No current value: the metric was not read."""
    result = per_pod_replicas(scale.status_replicas, reading.replicas * 1000, 1000, tolerances)
    if result.rule != "within-tolerance":
        result = ValueResult(result.replicas, result.ratio, result.usage, None, "fallback")
    return MetricOutcome(
        spec=spec,
        proposal=result.replicas,
        current=None,
        description=description,
        value_result=result,
        backend_failure=reading.backend,
    )


def _fetch_failed(prefix: str, reading: MetricReading) -> None:
    if isinstance(reading, MetricFailure):
        # The condition and the Event show it: in words that stay the same while the failure lasts.
        raise ReplicaCalculationError(f"{prefix}: {steady_message(reading.message)}")


def _resource(
    spec: MetricSpec,
    reading: MetricReading,
    scale: ScaleInfo,
    pods: Sequence[PodInfo],
    tolerances: Tolerances,
    settings: ControllerSettings,
    now: float,
    description: str,
) -> MetricOutcome:
    average_target = spec.target.average_value
    what = "usage" if average_target is not None else "utilization"
    try:
        fetch_prefix = f"unable to get metrics for resource {spec.name}"
        _fetch_failed(fetch_prefix, reading)
        if not isinstance(reading, ResourceReading):
            raise ReplicaCalculationError(f"{fetch_prefix}: unexpected reading {type(reading).__name__}")
        if not reading.pods:
            raise ReplicaCalculationError(f"{fetch_prefix}: no metrics returned")
        samples = pod_samples(spec, reading)
        if average_target is not None:
            result = plain_replicas(
                scale.spec_replicas, average_target.milli_value(), spec.name, pods, samples, tolerances, settings, now
            )
            current = MetricValue(average_value=result.usage)
        else:
            assert spec.target.average_utilization is not None
            result = resource_replicas(
                scale.spec_replicas,
                spec.target.average_utilization,
                spec.name,
                spec.container,
                pods,
                samples,
                tolerances,
                settings,
                now,
            )
            current = MetricValue(average_utilization=result.utilization, average_value=result.usage)
    except ReplicaCalculationError as exc:
        # computeStatusForResourceMetricGeneric wraps every error this way.
        raise ReplicaCalculationError(f"failed to get {spec.name} {what}: {exc}") from exc
    return MetricOutcome(
        spec=spec, proposal=result.replicas, current=current, description=description, pod_result=result
    )


def _pods(
    spec: MetricSpec,
    reading: MetricReading,
    scale: ScaleInfo,
    pods: Sequence[PodInfo],
    tolerances: Tolerances,
    settings: ControllerSettings,
    now: float,
    description: str,
) -> MetricOutcome:
    fetch_prefix = f"unable to get metric {spec.name}"
    _fetch_failed(fetch_prefix, reading)
    if not isinstance(reading, PodsReading):
        raise ReplicaCalculationError(f"{fetch_prefix}: unexpected reading {type(reading).__name__}")
    if not reading.pods:
        raise ReplicaCalculationError(f"{fetch_prefix}: no metrics returned")
    assert spec.target.average_value is not None
    result = plain_replicas(
        scale.spec_replicas,
        spec.target.average_value.milli_value(),
        "",
        pods,
        reading.pods if isinstance(reading.pods, SampleColumns) else dict(reading.pods),
        tolerances,
        settings,
        now,
    )
    return MetricOutcome(
        spec=spec,
        proposal=result.replicas,
        current=MetricValue(average_value=result.usage),
        description=description,
        pod_result=result,
    )


def _object(
    spec: MetricSpec,
    reading: MetricReading,
    scale: ScaleInfo,
    pods: Sequence[PodInfo],
    tolerances: Tolerances,
    description: str,
) -> MetricOutcome:
    kind = spec.described_object.kind if spec.described_object else ""
    name = spec.described_object.name if spec.described_object else ""
    fetch_prefix = f"unable to get metric {spec.name} on {kind} {name}"
    _fetch_failed(fetch_prefix, reading)
    if not isinstance(reading, ObjectReading):
        raise ReplicaCalculationError(f"{fetch_prefix}: unexpected reading {type(reading).__name__}")
    target = spec.target
    if target.type is MetricTargetType.VALUE and target.value is not None:
        result = usage_ratio_replicas(scale.spec_replicas, reading.value, target.value.milli_value(), pods, tolerances)
        return MetricOutcome(
            spec=spec,
            proposal=result.replicas,
            current=MetricValue(value=reading.value),
            description=description,
            value_result=result,
        )
    if target.type is MetricTargetType.AVERAGE_VALUE and target.average_value is not None:
        result = per_pod_replicas(scale.status_replicas, reading.value, target.average_value.milli_value(), tolerances)
        return MetricOutcome(
            spec=spec,
            proposal=result.replicas,
            current=MetricValue(average_value=result.usage),
            description=description,
            value_result=result,
        )
    raise ReplicaCalculationError(
        "invalid object metric source: neither a value target nor an average value target was set"
    )


def _external(
    spec: MetricSpec,
    reading: MetricReading,
    scale: ScaleInfo,
    pods: Sequence[PodInfo],
    tolerances: Tolerances,
    description: str,
) -> MetricOutcome:
    fetch_prefix = f"unable to get external metric {spec.name}"
    _fetch_failed(fetch_prefix, reading)
    if not isinstance(reading, ExternalReading):
        raise ReplicaCalculationError(f"{fetch_prefix}: unexpected reading {type(reading).__name__}")
    if not reading.values:
        raise ReplicaCalculationError(f"{fetch_prefix}: no metrics returned")
    usage = saturating_sum_int64(reading.values)
    target = spec.target
    # Upstream checks averageValue first, whatever the target type says.
    if target.average_value is not None:
        result = per_pod_replicas(scale.status_replicas, usage, target.average_value.milli_value(), tolerances)
        return MetricOutcome(
            spec=spec,
            proposal=result.replicas,
            current=MetricValue(average_value=result.usage),
            description=description,
            value_result=result,
        )
    if target.value is not None:
        result = usage_ratio_replicas(scale.spec_replicas, usage, target.value.milli_value(), pods, tolerances)
        return MetricOutcome(
            spec=spec,
            proposal=result.replicas,
            current=MetricValue(value=usage),
            description=description,
            value_result=result,
        )
    raise ReplicaCalculationError(
        "invalid external metric source: neither a value target nor an average value target was set"
    )


def sync_error_text(outcome: MetricOutcome) -> str:
    """How upstream wraps a metric's error in the sync's aggregated error (the condition shows it bare)."""
    spec = outcome.spec
    error = outcome.error
    match spec.type:
        case MetricSourceType.PODS:
            return f"failed to get pods metric value: {error}"
        case MetricSourceType.OBJECT:
            if spec.target.type is MetricTargetType.AVERAGE_VALUE:
                error = f"failed to get {spec.name} object metric: {error}"
            return f"failed to get object metric value: {error}"
        case MetricSourceType.RESOURCE:
            return f"failed to get {spec.name} resource metric value: {error}"
        case MetricSourceType.CONTAINER_RESOURCE:
            return f"failed to get {spec.container} container metric value: {error}"
        case _:
            if spec.target.average_value is not None:
                error = f"failed to get {spec.name} external metric: {error}"
            else:
                error = f"failed to get external metric {spec.name}: {error}"
            return f"failed to get {spec.name} external metric value: {error}"


def combine_metrics(outcomes: Sequence[MetricOutcome], spec_replicas: int) -> MetricsOutcome:
    """``computeReplicasForMetrics``: the largest proposal wins (ties keep the earlier metric).

    If every metric failed, or some failed and the best valid proposal is below the current
    count, there is no proposal: a failed metric never causes a scale-down.
    """
    replicas = 0
    description = ""
    invalid = 0
    first_invalid: MetricOutcome | None = None
    for outcome in outcomes:
        if outcome.error is not None:
            if first_invalid is None:
                first_invalid = outcome
            invalid += 1
            continue
        assert outcome.proposal is not None
        if replicas == 0 or outcome.proposal > replicas:
            replicas = outcome.proposal
            description = outcome.description
    error = None
    if first_invalid is not None:
        error = (
            f"invalid metrics ({invalid} invalid out of {len(outcomes)}), first error is: "
            f"{sync_error_text(first_invalid)}"
        )
    if invalid >= len(outcomes) or (invalid > 0 and replicas < spec_replicas):
        return MetricsOutcome(
            outcomes=tuple(outcomes),
            proposal=None,
            description="",
            invalid=invalid,
            first_invalid=first_invalid,
            error=error,
        )
    return MetricsOutcome(
        outcomes=tuple(outcomes),
        proposal=replicas,
        description=description,
        invalid=invalid,
        first_invalid=first_invalid,
        error=error,
    )
