"""Parse and validate ``spec.composite`` (KEDA's ``advanced.scalingModifiers``) into a :class:`CompositeSpec`.

The formula is checked and compiled here (:func:`~autoscaler.core.composite_formula.compile_formula`, cached),
against the target's External metrics: they are its variables, by metric name, so each must be a CEL
identifier and unique among them. A problem is reported at its path: the formula's at
``spec.composite.formula`` with the line, column and a caret; a metric's name at that metric's path.
"""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.core.composite_formula import FormulaProblem, compile_formula, is_cel_identifier
from autoscaler.core.metric_spec_parse import _target as read_metric_target  # the shape of every metric target
from autoscaler.core.spec import (
    DEFAULT_COMPOSITE_NAME,
    CompositeSpec,
    MetricSourceType,
    MetricSpec,
    MetricTargetType,
)
from autoscaler.values.fields import REQUIRED, Obj

_TARGET_TYPES = (MetricTargetType.AVERAGE_VALUE, MetricTargetType.VALUE)


def external_inputs(metrics: Sequence[MetricSpec]) -> list[tuple[int, MetricSpec]]:
    """The formula's inputs: the External metrics, with their index in ``spec.metrics``."""
    return [(index, metric) for index, metric in enumerate(metrics) if metric.type is MetricSourceType.EXTERNAL]


def read_composite(spec: Obj, metrics: Sequence[MetricSpec] | None) -> CompositeSpec | None:
    """``spec.composite`` of the spec ``spec``; None when absent or invalid (each problem added with its
    path). ``metrics``: the spec's metrics as parsed (None when they are invalid: the formula's variables
    are then unknown and it is checked for its syntax only by the next parse)."""
    obj = spec.obj("composite")
    if obj is None:
        return None
    errors_before = len(obj.errors.items)
    formula = obj.string("formula", required=True, non_empty=True)
    target = read_metric_target(obj.obj("target", required=True), _TARGET_TYPES, MetricSourceType.EXTERNAL)
    activation_target = obj.quantity("activationTarget")
    name = obj.string("name", non_empty=True, default=DEFAULT_COMPOSITE_NAME) or DEFAULT_COMPOSITE_NAME
    for bad in ("/", "%"):
        if bad in name:
            obj.error("name", f"may not contain '{bad}'")
    obj.finish()
    if metrics is not None:
        variables = _variables(spec, metrics)
        if not variables and not any(m.type is MetricSourceType.EXTERNAL for m in metrics):
            spec.error(
                "composite",
                f"{REQUIRED}: a composite metric computes its value from the target's External metrics; "
                "spec.metrics has none",
            )
        elif formula is not None:
            try:
                compile_formula(formula, frozenset(variables))
            except FormulaProblem as problem:
                obj.error("formula", str(problem))
    if len(obj.errors.items) > errors_before or formula is None or target is None or metrics is None:
        return None
    return CompositeSpec(formula=formula, target=target, name=name, activation_target=activation_target)


def _variables(spec: Obj, metrics: Sequence[MetricSpec]) -> list[str]:
    """The External metrics' names, each checked: a CEL identifier, used once."""
    names: list[str] = []
    for index, metric in external_inputs(metrics):
        path = f"{spec.at('metrics')}[{index}].external.metric.name"
        if not is_cel_identifier(metric.name):
            spec.errors.add(
                path,
                f'"{metric.name}" is not a formula variable: with spec.composite, each External metric is an input '
                "of the formula by its name, which must be a CEL identifier (letters, digits and _, not starting "
                "with a digit, not a reserved word such as in or null)",
            )
        elif metric.name in names:
            spec.errors.add(
                path,
                f'Duplicate value: "{metric.name}": with spec.composite, External metrics are the formula\'s '
                "variables by name, so each name is used once",
            )
        else:
            names.append(metric.name)
    return names
