"""Reading and validating the ``hvpa`` section (step 1, A19, A23–A28), every problem with its path.

Called from :func:`autoscaler.core.spec_parse.read_target_spec` with the section's view and the
target's already parsed minReplicas, maxReplicas and metrics, for the rules that span both. This module
reads the section as a whole, how it scales (intervals, change parameters, update policies, the
maintenance window, sources) and checks those rules; the per-container policies are
:mod:`autoscaler.core.hvpa.containers_parse`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction

from autoscaler.core.gomath import MAX_INT32
from autoscaler.core.hvpa.containers_parse import read_containers, read_resource_list
from autoscaler.core.hvpa.intervals import IntervalProblem, effective_intervals
from autoscaler.core.hvpa.spec import (
    DEFAULT_POLICY,
    RESOURCES,
    ChangeParams,
    ContainerMode,
    ContainerPolicy,
    Extrapolation,
    HvpaSpec,
    MaintenanceWindow,
    ResourceChangeParams,
    ScaleType,
    ScalingInterval,
    Source,
    StabilizationMode,
    UpdateMode,
)
from autoscaler.core.hvpa.windows import WindowTimeError, parse_time_of_day
from autoscaler.core.spec import MetricSourceType, MetricSpec
from autoscaler.values.durations import DurationError, parse_go_duration
from autoscaler.values.fields import REQUIRED, Obj, did_you_mean

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Names from the hvpa-v2 branch that EP-0001 spells differently (A23).
_LEGACY_INTERVAL_FIELDS = {"maxCpu": "maxResources.cpu", "maxMemory": "maxResources.memory"}


def read_hvpa_spec(
    obj: Obj,
    *,
    spec_path: str,
    min_replicas: int | None,
    max_replicas: int | None,
    metrics: Sequence[MetricSpec] | None,
) -> HvpaSpec | None:
    """The ``hvpa`` section, or None when anything in it (or across it and the target) is invalid."""
    errors_before = len(obj.errors.items)
    intervals = _scaling_intervals(obj)
    overlap = _change_params_map(obj.obj("scalingIntervalsOverlap"), max_percentage=100)
    base = _change_params_map(obj.obj("baseResourcesPerReplica"), max_percentage=100)
    gap = _change_params_map(obj.obj("limitsRequestsGapScaleParams"))
    scale_up = _scale_type(obj.obj("scaleUp"))
    scale_down = _scale_type(obj.obj("scaleDown"))
    window = _maintenance_window(obj.obj("maintenanceTimeWindow"))
    vpa = obj.string("vpa", non_empty=True)
    if vpa and not _DNS1123_SUBDOMAIN.match(vpa):
        obj.error("vpa", "must be the name of a VerticalPodAutoscaler (a DNS-1123 subdomain)")
    containers = read_containers(obj)
    sources = _sources(obj)
    obj.finish()
    warnings: list[str] = []
    for key in ("scaleUp", "scaleDown"):
        if _raw_update_mode(obj, key) == UpdateMode.MAINTENANCE_WINDOW.value and not obj.has("maintenanceTimeWindow"):
            obj.errors.add(
                f"{obj.at(key)}.updatePolicy.updateMode",
                f"{REQUIRED}: updateMode MaintenanceWindow needs {obj.at('maintenanceTimeWindow')} (A19)",
            )
    if window is not None and window.begin == window.end:
        warnings.append(
            f"{obj.at('maintenanceTimeWindow')}: begin and end are the same second, so the window "
            f"is one second long, not all day (A19)"
        )
    if min_replicas == 0:
        obj.errors.add(f"{spec_path}.minReplicas", "must be at least 1 with hvpa (HVPA never scales to zero; A8)")
    if intervals is not None and containers is not None and min_replicas and max_replicas:
        _check_intervals(obj, intervals, overlap or {}, containers, min_replicas, max_replicas, warnings)
    if containers is not None and metrics is not None and sources is not None and Source.HPA in sources:
        _warn_hpa_on_off_containers(obj, containers, metrics, spec_path, warnings)
    if len(obj.errors.items) > errors_before:
        return None
    assert intervals is not None and overlap is not None and base is not None and gap is not None
    assert scale_up is not None and scale_down is not None and containers is not None and sources is not None
    return HvpaSpec(
        scaling_intervals=intervals,
        scaling_intervals_overlap=overlap,
        base_resources_per_replica=base,
        limits_requests_gap_scale_params=gap,
        scale_up=scale_up,
        scale_down=scale_down,
        maintenance_time_window=window,
        vpa=vpa,
        containers=containers,
        sources=sources,
        warnings=tuple(warnings),
    )


def _raw_update_mode(obj: Obj, key: str) -> object:
    """The updateMode as written (also when the rest of its ScaleType is invalid)."""
    scale_type = obj.value.get(key)
    policy = scale_type.get("updatePolicy") if isinstance(scale_type, Mapping) else None
    return policy.get("updateMode") if isinstance(policy, Mapping) else None


def _change_params(obj: Obj | None, max_percentage: int) -> ChangeParams | None:
    if obj is None:
        return None
    value = obj.quantity("value", non_negative=True)
    percentage = obj.integer("percentage", minimum=0, maximum=max_percentage)
    obj.finish()
    if not obj.has("value") and not obj.has("percentage"):
        obj.errors.add(obj.path, f"{REQUIRED}: set value, percentage or both")
        return None
    if (obj.has("value") and value is None) or (obj.has("percentage") and percentage is None):
        return None
    return ChangeParams(value.value if value is not None else None, percentage)


def _change_params_map(
    obj: Obj | None, *, max_percentage: int = MAX_INT32, unsupported: Sequence[str] = ()
) -> ResourceChangeParams | None:
    """``{cpu: {value, percentage}, memory: {...}}``."""
    if obj is None:
        return {}
    errors_before = len(obj.errors.items)
    result: dict[str, ChangeParams] = {}
    for resource in RESOURCES:
        params = _change_params(obj.obj(resource), max_percentage)
        if params is not None:
            result[resource] = params
    for key in unsupported:
        if key in obj.value:
            obj.mark_known(key)
            obj.error(key, "Forbidden: not supported (hvpa-controller accepted it and never read it; A17)")
    obj.finish()
    return result if len(obj.errors.items) == errors_before else None


def _scaling_intervals(obj: Obj) -> tuple[ScalingInterval, ...] | None:
    raw = obj.raw("scalingIntervals", required=True)
    result: list[ScalingInterval] = []
    ok = True
    for path, element in obj.items("scalingIntervals"):
        interval = _scaling_interval(Obj.of(element, path, obj.errors))
        if interval is None:
            ok = False
        else:
            result.append(interval)
    if isinstance(raw, list) and not raw:
        obj.error("scalingIntervals", f"{REQUIRED}: list at least one interval")
        return None
    return tuple(result) if ok and isinstance(raw, list) else None


def _scaling_interval(obj: Obj | None) -> ScalingInterval | None:
    if obj is None:
        return None
    errors_before = len(obj.errors.items)
    max_replicas = obj.integer("maxReplicas", minimum=1, maximum=MAX_INT32)
    resources = read_resource_list(obj.obj("maxResources"))
    extrapolation = obj.string(
        "effectiveIntervalExtrapolation", default=Extrapolation.LINEAR.value, choices=[e.value for e in Extrapolation]
    )
    for legacy, hint in _LEGACY_INTERVAL_FIELDS.items():
        if legacy in obj.value:
            obj.mark_known(legacy)
            obj.error(legacy, f'unknown field (did you mean "{hint}"? hvpa-v2 called it {legacy}; A23)')
    obj.finish()
    if len(obj.errors.items) > errors_before or resources is None or extrapolation is None:
        return None
    return ScalingInterval(max_replicas, {k: q.value for k, q in resources.items()}, Extrapolation(extrapolation))


def _scale_type(obj: Obj | None) -> ScaleType | None:
    if obj is None:
        return ScaleType()
    errors_before = len(obj.errors.items)
    mode = UpdateMode.AUTO
    policy = obj.obj("updatePolicy")
    if policy is not None:
        text = policy.string("updateMode", choices=[m.value for m in UpdateMode])
        if text:
            mode = UpdateMode(text)
        policy.finish()
    min_change = _change_params_map(obj.obj("minChange"), unsupported=("replicas",))
    duration_text = obj.string("stabilizationDuration", non_empty=True)
    seconds = Fraction(0)
    if duration_text is not None:
        try:
            seconds = parse_go_duration(duration_text)
        except DurationError as exc:
            obj.error("stabilizationDuration", str(exc))
        else:
            if seconds < 0:
                obj.error("stabilizationDuration", "must not be negative (A27)")
    mode_text = obj.string("stabilizationMode", choices=[m.value for m in StabilizationMode])
    stabilization_mode = StabilizationMode(mode_text) if mode_text else StabilizationMode.SINCE_LAST_SCALING
    obj.finish()
    if len(obj.errors.items) > errors_before or min_change is None:
        return None
    return ScaleType(mode, min_change, seconds, duration_text or "0", stabilization_mode)


def _maintenance_window(obj: Obj | None) -> MaintenanceWindow | None:
    if obj is None:
        return None
    ends: list[int] = []
    texts: list[str] = []
    for key in ("begin", "end"):
        text = obj.string(key, required=True, non_empty=True)
        if text is None:
            continue
        try:
            ends.append(parse_time_of_day(text))
            texts.append(text)
        except WindowTimeError as exc:
            obj.error(key, str(exc))
    obj.finish()
    if len(ends) != 2:
        return None
    return MaintenanceWindow(ends[0], ends[1], texts[0], texts[1])


def _sources(obj: Obj) -> tuple[Source, ...] | None:
    if not obj.has("sources"):
        obj.mark_known("sources")
        return (Source.HPA, Source.VPA)
    result: list[Source] = []
    choices = [s.value for s in Source]
    for path, element in obj.items("sources"):
        if not isinstance(element, str) or element not in choices:
            hint = did_you_mean(element, choices) if isinstance(element, str) else None
            suffix = f' (did you mean "{hint}"?)' if hint else ""
            shown = f'"{element}"' if isinstance(element, str) else repr(element)
            obj.errors.add(path, f'Unsupported value: {shown}: supported values: "hpa", "vpa"{suffix}')
            return None
        if Source(element) in result:
            obj.errors.add(path, f'Duplicate value: "{element}"')
            return None
        result.append(Source(element))
    if not isinstance(obj.value.get("sources"), list):
        return None
    if not result:
        obj.error("sources", f'{REQUIRED}: list "hpa", "vpa" or both')
        return None
    return tuple(result)


def _check_intervals(
    obj: Obj,
    intervals: tuple[ScalingInterval, ...],
    overlap: ResourceChangeParams,
    containers: tuple[ContainerPolicy, ...],
    min_replicas: int,
    max_replicas: int,
    warnings: list[str],
) -> None:
    """Step 1's rules, for every container policy the spec states (A24, A25, A28). Containers the spec
    does not list are checked when they show up (the decision then reports the same problem)."""
    at = obj.at("scalingIntervals")
    previous: int | None = None
    counts_ok = True
    for index, interval in enumerate(intervals):
        top = interval.max_replicas if interval.max_replicas is not None else max_replicas
        defaulted = "" if interval.max_replicas is not None else f" (it defaults to the target's maxReplicas, {top})"
        if previous is None and top < min_replicas:
            obj.errors.add(
                f"{at}[{index}].maxReplicas",
                f"must be at least the target's minReplicas ({min_replicas}){defaulted} (A28)",
            )
            counts_ok = False
        elif previous is not None and top <= previous:
            obj.errors.add(
                f"{at}[{index}].maxReplicas",
                f"must be greater than scalingIntervals[{index - 1}].maxReplicas ({previous}){defaulted} (A28)",
            )
            counts_ok = False
        previous = top
    if not counts_ok:
        return
    spec = HvpaSpec(scaling_intervals=intervals, scaling_intervals_overlap=overlap)
    active = [p for p in containers if p.mode is ContainerMode.AUTO] or ([] if containers else [DEFAULT_POLICY])
    reported: set[tuple[str, str]] = set()
    for policy in active:
        for resource in policy.controlled_resources:
            result = effective_intervals(spec, resource, policy, min_replicas, max_replicas)
            if isinstance(result, IntervalProblem):
                path = f"{at}[{result.index}].{result.field}"
                if (path, result.message) not in reported:
                    reported.add((path, result.message))
                    obj.errors.add(path, result.message)
    start = min_replicas
    for index, interval in enumerate(intervals):
        top = interval.max_replicas if interval.max_replicas is not None else max_replicas
        if start > max_replicas:
            warnings.append(
                f"{at}[{index}]: starts above the target's maxReplicas ({max_replicas}), so it is never used (A25)"
            )
        elif top > max_replicas:
            warnings.append(
                f"{at}[{index}].maxReplicas: counts above the target's "
                f"maxReplicas ({max_replicas}) are never used (A25)"
            )
        start = top + 1


def _warn_hpa_on_off_containers(
    obj: Obj,
    containers: tuple[ContainerPolicy, ...],
    metrics: Sequence[MetricSpec],
    spec_path: str,
    warnings: list[str],
) -> None:
    """EP-0001 "some containers Off": the HPA may scale out for a container HVPA never resizes."""
    off = {p.name for p in containers if p.mode is ContainerMode.OFF}
    for index, metric in enumerate(metrics):
        if metric.type is MetricSourceType.CONTAINER_RESOURCE and metric.container in off:
            warnings.append(
                f"{spec_path}.metrics[{index}]: the HPA source scales on container "
                f'"{metric.container}", which has mode Off in {obj.at("containers")} and is never '
                f"resized (A11)"
            )
