"""The composite metric's step of a sync: the External metrics' readings → one reading, the formula's value.

With ``spec.composite`` (KEDA's ``advanced.scalingModifiers``) the External metrics are the formula's inputs
and are not scaled on by themselves: :func:`apply_composite` gives ``decide`` a spec whose External metrics
are replaced by one External metric, the composite (named ``composite.name``, with ``composite.target``, in
the place of the first External metric), and readings to match, the composite's being the formula's value.
The other metrics (Resource, ContainerResource, Pods, Object) stay HPA metrics beside it, as KEDA keeps its
cpu/memory triggers beside its composite.

An input that failed fails the composite (the failure names it), so "a failed metric never causes a
scale-down" holds for the composite as for any metric, and ``spec.fallback`` applies to it; a formula whose
value is not a finite number (a division by zero) fails it too. Each input's value is the sum of its series
(upstream's External reading), as a number; the formula's value becomes a milli-value as KEDA makes it
(``int64(value * 1000)``, toward zero).

Pure: the spec and the readings in, the spec and the readings ``decide`` sees out, with the sentences
``explain`` shows (the formula, each input's value, the result).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from autoscaler.core.composite_formula import FormulaError, FormulaProblem, compile_formula
from autoscaler.core.observation import ExternalReading, MetricFailure, MetricReading, Observation
from autoscaler.core.spec import CompositeSpec, MetricSourceType, MetricSpec, TargetSpec
from autoscaler.values.fields import MAX_MILLI


@dataclass(frozen=True, slots=True)
class CompositeResult:
    """The composite evaluated on one sync's readings: ``value`` (None when it failed, ``error`` says why),
    each input's value (None: that input failed), and the reading ``decide`` gets for it."""

    composite: CompositeSpec
    inputs: tuple[tuple[str, float | None], ...]
    value: float | None
    error: str | None
    reading: MetricReading


def _input_value(reading: MetricReading) -> float | MetricFailure:
    if isinstance(reading, MetricFailure):
        return reading
    if isinstance(reading, ExternalReading):
        return math.fsum(reading.values) / 1000
    return MetricFailure(f"unexpected reading {type(reading).__name__}")


def _failed(
    composite: CompositeSpec, inputs: list[tuple[str, float | None]], message: str, backend: bool = False
) -> CompositeResult:
    return CompositeResult(composite, tuple(inputs), None, message, MetricFailure(message, backend=backend))


def evaluate_composite(
    composite: CompositeSpec, metrics: Sequence[MetricSpec], readings: Sequence[MetricReading]
) -> CompositeResult:
    """The formula of ``composite`` over the External ``metrics``' ``readings`` (aligned with ``metrics``)."""
    inputs: list[tuple[str, float | None]] = []
    values: dict[str, float] = {}
    failures: list[str] = []
    backend = False
    timestamps: list[float] = []
    for metric, reading in zip(metrics, readings, strict=False):
        if metric.type is not MetricSourceType.EXTERNAL:
            continue
        value = _input_value(reading)
        if isinstance(value, MetricFailure):
            inputs.append((metric.name, None))
            failures.append(f"input {metric.name} failed: {value.message}")
            backend = backend or value.backend
            continue
        inputs.append((metric.name, value))
        values[metric.name] = value
        if isinstance(reading, ExternalReading):
            timestamps.append(reading.timestamp)
    if failures:
        return _failed(composite, inputs, "; ".join(failures), backend)
    try:
        value = compile_formula(composite.formula, frozenset(values)).evaluate(values)
    except (FormulaError, FormulaProblem) as exc:  # a problem only when the spec was not parsed (a test's)
        return _failed(composite, inputs, str(exc))
    milli = int(value * 1000)  # KEDA's ret.Value.SetMilli(int64(out * 1000))
    if abs(milli) > MAX_MILLI:
        return _failed(composite, inputs, f"the formula gave {value:g}, beyond a quantity's range")
    reading = ExternalReading((milli,), min(timestamps) if timestamps else 0.0)
    return CompositeResult(composite, tuple(inputs), value, None, reading)


def composite_metric(composite: CompositeSpec) -> MetricSpec:
    """The one External metric ``decide`` scales on in place of the inputs. Activation compares its value
    with ``composite.activationTarget`` (autoscaler.core.activation), as KEDA decides activity by the
    composite alone when there is one."""
    return MetricSpec(type=MetricSourceType.EXTERNAL, name=composite.name, target=composite.target)


def decided_metrics(spec: TargetSpec) -> tuple[MetricSpec, ...]:
    """``spec``'s metrics as ``decide`` sees them: with ``composite``, its metric where the first External
    metric was and no other External metric; without, ``spec.metrics``."""
    if spec.composite is None:
        return spec.metrics
    result: list[MetricSpec] = []
    placed = False
    for metric in spec.metrics:
        if metric.type is not MetricSourceType.EXTERNAL:
            result.append(metric)
        elif not placed:
            result.append(composite_metric(spec.composite))
            placed = True
    return tuple(result)


def apply_composite(spec: TargetSpec, observation: Observation) -> tuple[TargetSpec, Observation, tuple[str, ...]]:
    """The spec and observation ``decide`` sees, and the sentences that explain the composite (step
    "composite" of :func:`~autoscaler.core.sync.plan_sync`). Without ``spec.composite``: all unchanged, no
    sentence."""
    composite = spec.composite
    if composite is None:
        return spec, observation, ()
    result = evaluate_composite(composite, spec.metrics, observation.readings)
    readings: list[MetricReading] = []
    placed = False
    for metric, reading in zip(spec.metrics, observation.readings, strict=False):
        if metric.type is not MetricSourceType.EXTERNAL:
            readings.append(reading)
        elif not placed:
            readings.append(result.reading)
            placed = True
    seen_spec = replace(spec, metrics=decided_metrics(spec), composite=None)
    seen = Observation(observation.scale, observation.pods, readings, observation.selector_problem)
    return seen_spec, seen, explain_composite(result)


def composite_value(spec: TargetSpec, observation: Observation) -> float | None:
    """The composite's value on this sync's readings (those of ``spec.metrics``), or None: no composite,
    or it failed. What activation compares with ``composite.activationTarget``."""
    if spec.composite is None:
        return None
    return evaluate_composite(spec.composite, spec.metrics, observation.readings).value


def _number(value: float | None) -> str:
    return "FAILED" if value is None else f"{value:g}"


def explain_composite(result: CompositeResult) -> tuple[str, ...]:
    """The composite in words: its formula, each input's value, the result."""
    composite = result.composite
    inputs = ", ".join(f"{name} = {_number(value)}" for name, value in result.inputs) or "no input"
    outcome = f"→ {result.value:g}" if result.value is not None else f"→ FAILED: {result.error}"
    return (f"Composite metric {composite.name} = {composite.formula} with {inputs} {outcome}.",)
