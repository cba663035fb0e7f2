"""The step keys that say exactly what a sync observed: ``selector``, ``selectorProblem`` and ``readings``.

A scenario written by hand describes pods and lets the simulator derive each metric's reading from them
(``usage``, ``metrics``, ``objects``, ``external``, ``failures``). A scenario made from a recording of
``autoscaler run`` (:mod:`autoscaler.simulate.recording`) says instead what the service read, exactly:

* ``selector`` — the scale's ``status.selector`` (default ``app=scenario``; ``""``: the workload publishes
  none, which the HPA refuses with ``SelectorRequired``);
* ``selectorProblem`` — ``{reason, message}``: the selector could not be used (``InvalidSelector``, or
  ``AmbiguousSelector`` when another target selects the same pods);
* ``readings`` — one entry per spec metric, in spec order, each either ``{failed: MESSAGE}`` or the
  samples of its type: ``{usage: {POD: {containers: {NAME: QUANTITY or null}, at, window}}}`` (Resource and
  ContainerResource), ``{pods: {POD: {value, at, window}}}`` (Pods), ``{value, at}`` (Object),
  ``{values: [...], at}`` (External). ``at`` is relative to the step's ``at`` (default 0), ``window`` in
  seconds (default 60). With ``readings``, the step's own sample keys (pods' ``usage``, ``metrics``,
  ``sampleAt``, ``sampleWindow``; ``objects``, ``external``, ``failures``) are not read, so they are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler.core.observation import (
    DEFAULT_SAMPLE_WINDOW,
    ExternalReading,
    MetricFailure,
    MetricReading,
    ObjectReading,
    PodsReading,
    PodUsage,
    ResourceReading,
    Sample,
    SelectorProblem,
)
from autoscaler.core.spec import MetricSourceType, MetricSpec, TargetSpec
from autoscaler.values.fields import ErrorList, Obj, to_quantity

OBSERVED_STEP_KEYS: tuple[str, ...] = ("selector", "selectorProblem", "readings")
SELECTOR_REASONS = ("InvalidSelector", "AmbiguousSelector")
# What the simulator derives readings from: refused next to ``readings``.
_SAMPLE_STEP_KEYS = ("objects", "external", "failures")
_SAMPLE_POD_KEYS = ("metrics", "sampleAt", "sampleWindow")
MAX_OFFSET = 1e15  # seconds; as the scenario's times


@dataclass(frozen=True, slots=True)
class ObservedInputs:
    selector: str | None = None  # None: the scenario's default selector
    selector_problem: SelectorProblem | None = None
    readings: tuple[MetricReading, ...] | None = None  # None: derived from the step's pods and values


def read_observed(
    step: Mapping[str, Any], path: str, at: float, spec: TargetSpec | None, errors: ErrorList
) -> ObservedInputs | None:
    """The keys above of the step at ``path`` (``step`` is the raw step); None when it has none of them.
    ``spec`` None: the spec is invalid (its own errors are reported), so ``readings`` is not checked
    against its metrics."""
    obj = Obj(step, path, errors)
    if not any(key in step for key in OBSERVED_STEP_KEYS):
        return None
    selector: str | None = None
    if "selector" in step:
        selector = obj.string("selector")
        if step.get("selector") is None:
            obj.error("selector", 'must be a string ("" for none)')
    problem = None
    found = obj.obj("selectorProblem")
    if found is not None:
        reason = found.string("reason", required=True, choices=SELECTOR_REASONS)
        message = found.string("message", required=True)
        found.finish()
        if reason is not None and message is not None:
            problem = SelectorProblem(reason, message)
    readings = None
    if obj.has("readings"):
        _refuse_samples(obj, path, errors)
        readings = _readings(obj, at, spec)
    return ObservedInputs(selector, problem, readings)


def _refuse_samples(step: Obj, path: str, errors: ErrorList) -> None:
    for key in _SAMPLE_STEP_KEYS:
        if step.has(key):
            step.error(key, "Forbidden: the step gives its readings")
    pods = step.value.get("pods")
    for index, pod in enumerate(pods if isinstance(pods, list) else []):
        if not isinstance(pod, Mapping):
            continue
        at = f"{path}.pods[{index}]"
        for key in _SAMPLE_POD_KEYS:
            if pod.get(key) is not None:
                errors.add(f"{at}.{key}", "Forbidden: the step gives its readings")
        containers = pod.get("containers")
        for number, container in enumerate(containers if isinstance(containers, list) else []):
            if isinstance(container, Mapping) and "usage" in container:
                errors.add(f"{at}.containers[{number}].usage", "Forbidden: the step gives its readings")


def _readings(step: Obj, at: float, spec: TargetSpec | None) -> tuple[MetricReading, ...] | None:
    items = list(step.items("readings"))
    if spec is not None and len(items) != len(spec.metrics):
        step.error("readings", f"must have one entry per spec metric ({len(spec.metrics)}), not {len(items)}")
        return None
    readings: list[MetricReading] = []
    for index, (path, element) in enumerate(items):
        item = Obj.of(element, path, step.errors)
        if item is None:
            continue
        reading = _reading(item, at, spec.metrics[index] if spec is not None else None)
        item.finish()
        if reading is not None:
            readings.append(reading)
    return tuple(readings) if len(readings) == len(items) else None


def _reading(item: Obj, at: float, metric: MetricSpec | None) -> MetricReading | None:
    if item.has("failed"):
        message = item.string("failed")
        return MetricFailure(message) if message is not None else None
    kind = metric.type if metric is not None else None
    if kind in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE):
        usages = {}
        for name, pod in _per_pod(item, "usage"):
            containers = pod.obj("containers", required=True)
            amounts: dict[str, int | None] = {}
            for container, value in containers.value.items() if containers is not None else ():
                assert containers is not None
                containers.mark_known(container)
                amounts[str(container)] = (
                    None if value is None else _milli(value, containers.at(str(container)), item.errors)
                )
            timestamp, window = _when(pod, at)
            pod.finish()
            if timestamp is not None and window is not None:
                usages[name] = PodUsage(amounts, timestamp, window)
        return ResourceReading(usages)
    if kind is MetricSourceType.PODS:
        samples = {}
        for name, pod in _per_pod(item, "pods"):
            value = _milli(pod.raw("value", required=True), pod.at("value"), item.errors, required=True)
            timestamp, window = _when(pod, at)
            pod.finish()
            if value is not None and timestamp is not None and window is not None:
                samples[name] = Sample(value, timestamp, window)
        return PodsReading(samples)
    if kind is MetricSourceType.OBJECT:
        value = _milli(item.raw("value", required=True), item.at("value"), item.errors, required=True)
        timestamp = _offset(item, at)
        return ObjectReading(value, timestamp) if value is not None and timestamp is not None else None
    if kind is MetricSourceType.EXTERNAL:
        values = [_milli(v, path, item.errors) for path, v in item.items("values", required=True)]
        timestamp = _offset(item, at)
        if timestamp is None or any(v is None for v in values):
            return None
        return ExternalReading(tuple(v for v in values if v is not None), timestamp)
    item.mark_known("usage", "pods", "value", "values", "at")  # an invalid spec: nothing to check against
    return None


def _per_pod(item: Obj, key: str) -> list[tuple[str, Obj]]:
    section = item.obj(key, required=True)
    if section is None:
        return []
    pods = []
    for name, value in section.value.items():
        section.mark_known(name)
        pod = Obj.of(value, section.at(str(name)), item.errors)
        if pod is not None:
            pods.append((str(name), pod))
    return pods


def _when(pod: Obj, at: float) -> tuple[float | None, float | None]:
    return _offset(pod, at), pod.number("window", default=DEFAULT_SAMPLE_WINDOW, minimum=0)


def _offset(obj: Obj, at: float) -> float | None:
    relative = obj.number("at", default=0.0, minimum=-MAX_OFFSET, maximum=MAX_OFFSET)
    return at + relative if relative is not None else None


def _milli(value: object, path: str, errors: ErrorList, *, required: bool = False) -> int | None:
    """``value`` in milli-units; None (reported already) when a required one is missing."""
    if value is None and required:
        return None
    quantity = to_quantity(value, path, errors)
    return quantity.milli_value() if quantity is not None else None
