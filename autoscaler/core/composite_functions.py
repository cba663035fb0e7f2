"""The functions a composite formula can call (:data:`FUNCTIONS`), and CEL's division as IEEE 754 has it.

expr-lang's common math functions, under their names, so that KEDA's formulas convert unchanged:
``min``, ``max``, ``sum``, ``mean``, ``median`` (numbers one by one or as one list, expr's array form),
``abs``, ``ceil``, ``floor``, ``round`` (halves away from zero, as expr's and Go's), ``int`` (toward zero,
still a number), ``float``/``double`` (the number itself), and ``pow`` (what expr writes ``x ** y``).
Each takes and gives numbers (doubles); the check of a formula
(:mod:`autoscaler.core.composite_formula`) has made sure of the arguments' count and kind before any call.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from celpy import celtypes


def _round_half_away(x: float) -> float:
    """expr's ``round`` (Go's ``math.Round``): halves away from zero, unlike Python's ``round``."""
    if not math.isfinite(x):
        return x
    return math.copysign(math.floor(abs(x) + 0.5), x)


def _whole(operation: Callable[[float], int], x: float) -> float:
    return x if not math.isfinite(x) else float(operation(x))


def _pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except OverflowError:
        return math.inf
    except ValueError:  # a negative number to a fractional power, 0 to a negative one
        return math.nan


def _ceil(x: float) -> float:
    return _whole(math.ceil, x)


def _floor(x: float) -> float:
    return _whole(math.floor, x)


def _truncate(x: float) -> float:
    return _whole(math.trunc, x)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _sum(values: Sequence[float]) -> float:
    return math.fsum(values)


def _min(values: Sequence[float]) -> float:
    return min(values)


def _max(values: Sequence[float]) -> float:
    return max(values)


@dataclass(frozen=True, slots=True)
class Function:
    """A formula function: how many arguments it takes and what it does. ``aggregate``: it takes any
    number of numbers (at least one), given one by one (``max(a, b, c)``) or as one list (``max([a, b])``,
    expr's array form); the others take exactly ``arity`` numbers."""

    summary: str
    arity: int = 1
    aggregate: Callable[[Sequence[float]], float] | None = None
    scalar: Callable[..., float] | None = None


FUNCTIONS: Mapping[str, Function] = {
    "min": Function("the smallest of its arguments", aggregate=_min),
    "max": Function("the largest of its arguments", aggregate=_max),
    "sum": Function("the sum of its arguments", aggregate=_sum),
    "mean": Function("the mean of its arguments", aggregate=_mean),
    "median": Function("the median of its arguments", aggregate=_median),
    "abs": Function("the absolute value", scalar=abs),
    "ceil": Function("the least whole number not below it", scalar=_ceil),
    "floor": Function("the greatest whole number not above it", scalar=_floor),
    "round": Function(
        "the nearest whole number, halves away from zero (expr's and Go's round)", scalar=_round_half_away
    ),
    "int": Function("its whole part, toward zero (expr's int); still a number", scalar=_truncate),
    "float": Function("the number itself (expr's float, kept so formulas convert unchanged)", scalar=float),
    "double": Function("the number itself (CEL's name for float)", scalar=float),
    "pow": Function("pow(x, y): x to the power y (expr's x ** y and x ^ y)", arity=2, scalar=_pow),
}


def _numbers(values: Iterable[Any]) -> list[float]:
    result: list[float] = []
    for value in values:
        if isinstance(value, list):  # one list argument: expr's array form
            result.extend(float(item) for item in value)
        else:
            result.append(float(value))
    return result


class _Bound:
    """A formula function as cel-python calls it: CEL values in, a CEL double out."""

    def __init__(self, function: Function) -> None:
        self.function = function

    def __call__(self, *arguments: Any) -> celtypes.DoubleType:
        numbers = _numbers(arguments)
        if self.function.aggregate is not None:
            return celtypes.DoubleType(self.function.aggregate(numbers))
        assert self.function.scalar is not None
        return celtypes.DoubleType(self.function.scalar(*numbers))


def _divide(x: Any, y: Any) -> celtypes.DoubleType:
    """``x / y`` as IEEE 754 divides (cel-python gives +Inf for every division by zero, 0/0 and -1/0 too):
    ±Inf, or NaN for 0/0, so that the failure says which."""
    numerator, denominator = float(x), float(y)
    if denominator == 0:
        if numerator == 0 or math.isnan(numerator):
            return celtypes.DoubleType(math.nan)
        return celtypes.DoubleType(math.copysign(math.inf, numerator) * math.copysign(1.0, denominator))
    return celtypes.DoubleType(numerator / denominator)


# What a compiled formula's runner is given: our functions, and CEL's division operator replaced.
BOUND: dict[str, Any] = {name: _Bound(function) for name, function in FUNCTIONS.items()}
BOUND["_/_"] = _divide
