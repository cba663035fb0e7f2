"""The scenario file of ``autoscaler simulate`` (a public contract: the names are kept as documented).

A scenario is a target spec, optional controller settings and history, and a list of steps, each
describing what the autoscaler would observe at one sync. This module validates the file (every
problem reported with its path, like the spec) and turns each step into the engine's
:class:`~autoscaler.core.observation.Observation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from autoscaler.core.conditions import Condition
from autoscaler.core.history import DecisionHistory
from autoscaler.core.metric_health import MetricHealth
from autoscaler.core.observation import (
    DEFAULT_SAMPLE_WINDOW,
    ConditionStatus,
    ContainerInfo,
    ExternalReading,
    MetricFailure,
    MetricReading,
    ObjectReading,
    Observation,
    PodInfo,
    PodPhase,
    PodsReading,
    PodUsage,
    ResourceReading,
    Sample,
    ScaleInfo,
)
from autoscaler.core.pause_state import PauseState
from autoscaler.core.prediction.forecast import Forecast
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.settings_parse import SCENARIO_SUFFIX, read_controller_settings
from autoscaler.core.spec import MetricSourceType, MetricSpec, TargetSpec
from autoscaler.core.spec_parse import read_target_spec
from autoscaler.simulate.annotation_steps import ANNOTATIONS_STEP_KEY, read_status_pause, read_step_annotations
from autoscaler.simulate.forecast_steps import FORECASTS_STEP_KEY, read_step_forecasts
from autoscaler.simulate.health_status import read_metric_health
from autoscaler.simulate.history_status import MAX_TIME, read_history
from autoscaler.simulate.history_status import scenario_time as _time
from autoscaler.simulate.hvpa_steps import HVPA_STEP_KEYS, ClockCarry, HvpaStepInput, read_hvpa_step
from autoscaler.simulate.observed import OBSERVED_STEP_KEYS, ObservedInputs, read_observed
from autoscaler.values.fields import ErrorList, Obj, to_quantity

# "Far past" for readySince/startedAt when a pod does not say (relative to the step).
FAR_PAST = -10_000_000_000.0
SCENARIO_SELECTOR = "app=scenario"


@dataclass(frozen=True, slots=True)
class ScenarioContainer:
    info: ContainerInfo
    usage: Mapping[str, int] | None  # None: the container reports no usage at all


@dataclass(frozen=True, slots=True)
class ScenarioPod:
    info: PodInfo
    containers: tuple[ScenarioContainer, ...]
    metrics: Mapping[str, int]
    sample_at: float
    sample_window: float


@dataclass(frozen=True, slots=True)
class ScenarioStep:
    at: float
    replicas: int | None
    status_replicas: int | None
    pods: tuple[ScenarioPod, ...]
    objects: Mapping[str, int]
    external: Mapping[str, tuple[int, ...]]
    failures: frozenset[str]
    extra: Mapping[str, Any] = field(default_factory=dict)  # sections read by extensions (e.g. HVPA)
    hvpa: HvpaStepInput | None = None  # the HVPA keys, parsed (spec.hvpa only)
    observed: ObservedInputs | None = None  # what a recorded sync observed exactly (simulate/observed.py)
    # The target's annotations from this step on (a pause set with kubectl annotate); None: as before.
    annotations: Mapping[str, str] | None = None
    # spec.prediction: the forecasts from this step on, by metric name (simulate/forecast_steps.py); None: as before.
    forecasts: Mapping[str, Forecast] | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    spec: TargetSpec
    settings: ControllerSettings
    history: DecisionHistory | None
    conditions: tuple[Condition, ...]
    steps: tuple[ScenarioStep, ...]
    raw: Mapping[str, Any]
    desired_replicas: int | None = None  # status.desiredReplicas before the first step
    last_scale_time: float | None = None  # status.lastScaleTime before the first step
    metric_health: tuple[MetricHealth, ...] = ()  # status.metricHealth before the first step (spec.fallback)
    last_active_time: float | None = None  # status.lastActiveTime before the first step (spec.activation)
    pause: PauseState | None = None  # status.pause before the first step (a paused target)


# Step keys owned by extensions (the HVPA engine); parsed there, accepted here.
EXTENSION_STEP_KEYS: tuple[str, ...] = HVPA_STEP_KEYS


def parse_scenario(data: object) -> Scenario:
    """Validate a scenario document; raise :class:`~autoscaler.values.fields.SpecError` listing every problem."""
    errors = ErrorList()
    scenario = _scenario(data, errors)
    errors.raise_if_any()
    assert scenario is not None
    return scenario


def _scenario(data: object, errors: ErrorList) -> Scenario | None:
    root = Obj.of(data, "", errors)
    if root is None:
        return None
    raw_spec = root.raw("spec", required=True)
    spec = read_target_spec(raw_spec, "spec", errors, require_queries=False) if raw_spec is not None else None
    settings = read_controller_settings(root.obj("settings"), suffix=SCENARIO_SUFFIX)
    history = read_history(root.obj("history"))
    status = root.obj("status")
    metric_health = read_metric_health(status, MAX_TIME)  # first: _status refuses the keys it does not read
    last_active = _time(status, "lastActiveTime") if status is not None else None  # before _status, as above
    pause = read_status_pause(status)  # before _status, as above
    conditions, desired, last_scale = _status(status)
    steps: list[ScenarioStep] = []
    raw_steps = root.value.get("steps")
    clock = ClockCarry()
    for index, (path, element) in enumerate(root.items("steps", required=True)):
        # The first step of the file, not the first valid one: a step after a broken first needs no replicas.
        step = _step(Obj.of(element, path, errors), first=index == 0, index=index)
        if step is not None:
            hvpa = read_hvpa_step(step.extra, path, step.at, spec, index == 0, clock, errors)
            observed = read_observed(element, path, step.at, spec, errors)
            annotations = read_step_annotations(element, path, errors)
            forecasts = read_step_forecasts(element, path, errors)
            steps.append(replace(step, hvpa=hvpa, observed=observed, annotations=annotations, forecasts=forecasts))
    if isinstance(raw_steps, list) and not raw_steps:
        root.error("steps", "must list at least one step")
    root.finish()
    if isinstance(raw_steps, list) and len(steps) == len(raw_steps):  # else the indices would not be the file's
        _check_step_order(steps, errors)
    if errors or spec is None or settings is None:
        return None
    scenario = Scenario(spec, settings, history, conditions, tuple(steps), dict(root.value), desired, last_scale)
    return replace(scenario, metric_health=metric_health, last_active_time=last_active, pause=pause)


def _check_step_order(steps: list[ScenarioStep], errors: ErrorList) -> None:
    for index in range(1, len(steps)):
        if steps[index].at <= steps[index - 1].at:
            errors.add(f"steps[{index}].at", f"must be later than steps[{index - 1}].at ({steps[index - 1].at:g})")


def _status(obj: Obj | None) -> tuple[tuple[Condition, ...], int | None, float | None]:
    """Optional ``status``: the conditions the target already carries before the first step, and its
    ``desiredReplicas`` and ``lastScaleTime`` as last written."""
    if obj is None:
        return (), None, None
    result: list[Condition] = []
    for path, element in obj.items("conditions"):
        cond = Obj.of(element, path, obj.errors)
        if cond is None:
            continue
        type_ = cond.string("type", required=True, non_empty=True)
        status = cond.string("status", required=True, choices=("True", "False", "Unknown"))
        reason = cond.string("reason", default="") or ""
        message = cond.string("message", default="") or ""
        since = _time(cond, "lastTransitionTime")
        cond.finish()
        if type_ and status:
            result.append(Condition(type_, status, reason, message, since))
    desired = obj.integer("desiredReplicas", minimum=0, maximum=2**31 - 1)
    last_scale = _time(obj, "lastScaleTime")
    obj.finish()
    return tuple(result), desired, last_scale


def _step(obj: Obj | None, *, first: bool, index: int) -> ScenarioStep | None:
    if obj is None:
        return None
    at = _time(obj, "at", required=True)
    replicas = obj.integer("replicas", required=first, minimum=0, maximum=2**31 - 1)
    status_replicas = obj.integer("statusReplicas", minimum=0, maximum=2**31 - 1)
    pods: list[ScenarioPod] = []
    names: set[str] = set()
    for path, element in obj.items("pods"):
        pod = _pod(Obj.of(element, path, obj.errors), at or 0.0)
        if pod is not None:
            if pod.info.name in names:
                obj.errors.add(f"{path}.name", f"duplicate pod name {pod.info.name!r}")
            names.add(pod.info.name)
            pods.append(pod)
    objects = _values(obj, "objects")
    external = _series(obj, "external")
    failures: set[str] = set()
    for path, element in obj.items("failures"):
        if isinstance(element, str) and element:
            failures.add(element)
        else:
            obj.errors.add(path, "must be a metric name")
    extra = {key: obj.raw(key) for key in EXTENSION_STEP_KEYS if obj.has(key)}
    obj.mark_known(*EXTENSION_STEP_KEYS, *OBSERVED_STEP_KEYS, ANNOTATIONS_STEP_KEY, FORECASTS_STEP_KEY)
    obj.finish()
    if at is None:
        return None
    return ScenarioStep(at, replicas, status_replicas, tuple(pods), objects, external, frozenset(failures), extra)


def _milli(value: object, path: str, errors: ErrorList) -> int | None:
    quantity = to_quantity(value, path, errors)
    return quantity.milli_value() if quantity is not None else None


def _values(obj: Obj, key: str) -> dict[str, int]:
    section = obj.obj(key)
    if section is None:
        return {}
    result: dict[str, int] = {}
    for name, value in section.value.items():
        milli = _milli(value, section.at(str(name)), obj.errors)
        section.mark_known(name)
        if milli is not None:
            result[str(name)] = milli
    return result


def _series(obj: Obj, key: str) -> dict[str, tuple[int, ...]]:
    section = obj.obj(key)
    if section is None:
        return {}
    result: dict[str, tuple[int, ...]] = {}
    for name, value in section.value.items():
        section.mark_known(name)
        items = value if isinstance(value, list) else [value]
        values = [
            _milli(v, f"{section.at(str(name))}[{i}]" if isinstance(value, list) else section.at(str(name)), obj.errors)
            for i, v in enumerate(items)
        ]
        if all(v is not None for v in values):
            result[str(name)] = tuple(v for v in values if v is not None)
    return result


_READY = {
    True: ConditionStatus.TRUE,
    False: ConditionStatus.FALSE,
    "True": ConditionStatus.TRUE,
    "False": ConditionStatus.FALSE,
    "Unknown": ConditionStatus.UNKNOWN,
}


def _pod(obj: Obj | None, at: float) -> ScenarioPod | None:
    if obj is None:
        return None
    name = obj.string("name", required=True, non_empty=True)
    phase = obj.string("phase", default="Running", choices=[p.value for p in PodPhase])
    ready: ConditionStatus | None = ConditionStatus.TRUE
    if "ready" in obj.value:
        raw_ready = obj.raw("ready")
        if raw_ready is None:
            ready = None
        elif isinstance(raw_ready, bool | str) and raw_ready in _READY:
            ready = _READY[raw_ready]
        else:
            obj.error("ready", 'must be true, false, null or "Unknown"')
    ready_since: float | None = FAR_PAST
    ready_untimed = "readySince" in obj.value and obj.value["readySince"] is None  # a Ready condition, no time
    if ready_untimed:
        obj.mark_known("readySince")
        ready_since = None
    else:
        ready_since = _time(obj, "readySince", default=FAR_PAST)
    started_at: float | None = FAR_PAST
    if "startedAt" in obj.value and obj.value["startedAt"] is None:
        obj.mark_known("startedAt")
        started_at = None
    else:
        started_at = _time(obj, "startedAt", default=FAR_PAST)
    deleting = obj.boolean("deleting", default=False)
    containers: list[ScenarioContainer] = []
    for path, element in obj.items("containers"):
        container = _container(Obj.of(element, path, obj.errors))
        if container is not None:
            containers.append(container)
    pod_requests = _requests(obj, "requests")
    metrics = _values(obj, "metrics")
    sample_at = _time(obj, "sampleAt", default=0.0)
    sample_window = obj.number("sampleWindow", default=DEFAULT_SAMPLE_WINDOW, minimum=0)
    obj.finish()
    if (
        name is None
        or phase is None
        or sample_at is None
        or sample_window is None
        or (ready_since is None and not ready_untimed)
    ):
        return None
    info = PodInfo(
        name=name,
        phase=PodPhase(phase),
        ready=ready,
        ready_since=None if ready_since is None else at + ready_since,
        started_at=None if started_at is None else at + started_at,
        deleting=bool(deleting),
        containers=tuple(c.info for c in containers),
        pod_requests=pod_requests or None,
    )
    return ScenarioPod(info, tuple(containers), metrics, at + sample_at, sample_window)


def _requests(obj: Obj, key: str) -> dict[str, int]:
    return _values(obj, key)


def _container(obj: Obj | None) -> ScenarioContainer | None:
    if obj is None:
        return None
    name = obj.string("name", required=True, non_empty=True)
    requests = _requests(obj, "requests")
    limits = _requests(obj, "limits")
    usage = _values(obj, "usage") if obj.has("usage") else None
    obj.mark_known("usage")
    sidecar = obj.boolean("sidecar", default=False)
    obj.finish()
    if name is None:
        return None
    return ScenarioContainer(ContainerInfo(name, requests, bool(sidecar), limits), usage)


def observation_for(scenario: Scenario, step: ScenarioStep, replicas: int) -> Observation:
    """What the engine observes at ``step`` when the scale's spec.replicas is ``replicas``."""
    status_replicas = step.status_replicas if step.status_replicas is not None else replicas
    pods = tuple(p.info for p in step.pods)
    observed = step.observed or ObservedInputs()
    readings = observed.readings
    if readings is None:
        readings = tuple(_reading(metric, step) for metric in scenario.spec.metrics)
    selector = observed.selector if observed.selector is not None else SCENARIO_SELECTOR
    return Observation(ScaleInfo(replicas, status_replicas, selector), pods, readings, observed.selector_problem)


def _reading(metric: MetricSpec, step: ScenarioStep) -> MetricReading:
    if metric.name in step.failures:
        return MetricFailure(f"the scenario marks {metric.name} as failing in this step")
    if metric.type in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE):
        usages: dict[str, PodUsage] = {}
        for pod in step.pods:
            reported = {c.info.name: c.usage.get(metric.name) for c in pod.containers if c.usage is not None}
            if reported:
                usages[pod.info.name] = PodUsage(reported, pod.sample_at, pod.sample_window)
        return ResourceReading(usages)
    if metric.type is MetricSourceType.PODS:
        return PodsReading(
            {
                pod.info.name: Sample(pod.metrics[metric.name], pod.sample_at, pod.sample_window)
                for pod in step.pods
                if metric.name in pod.metrics
            }
        )
    if metric.type is MetricSourceType.OBJECT:
        if metric.name not in step.objects:
            return MetricFailure(f"the step gives no value for object metric {metric.name}")
        return ObjectReading(step.objects[metric.name], step.at)
    if metric.name not in step.external:
        return MetricFailure(f"the step gives no value for external metric {metric.name}")
    return ExternalReading(step.external[metric.name], step.at)
