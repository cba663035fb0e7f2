"""Go's numeric semantics where upstream's arithmetic depends on them.

Upstream mixes int64 milli-values (integer division truncating toward zero) with float64 ratios
(IEEE division: x/0 is ±Inf or NaN, never an exception). Python's ``//`` floors and its ``/``
raises on zero, so the engine uses these helpers wherever the difference could show.
"""

from __future__ import annotations

import math

MAX_INT32 = 2**31 - 1
MIN_INT32 = -(2**31)
MAX_INT64 = 2**63 - 1


def trunc_div(a: int, b: int) -> int:
    """Go ``a / b`` on integers: the quotient truncated toward zero."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def float_div(a: float, b: float) -> float:
    """IEEE-754 division, as Go's float64 ``/``."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def ceil_to_int32(value: float) -> int:
    """``int32(math.Ceil(value))`` with saturation instead of Go's undefined overflow."""
    if math.isnan(value):
        return 0
    if value >= MAX_INT32:
        return MAX_INT32
    if value <= MIN_INT32:
        return MIN_INT32
    return math.ceil(value)


def trunc_to_int32(value: float) -> int:
    """``int32(value)`` (truncation toward zero), saturated."""
    if math.isnan(value):
        return 0
    if value >= MAX_INT32:
        return MAX_INT32
    if value <= MIN_INT32:
        return MIN_INT32
    return int(value)


def clamp_int32(value: int) -> int:
    return max(MIN_INT32, min(MAX_INT32, value))


def saturating_sum_int64(values: list[int] | tuple[int, ...]) -> int:
    """Sum that stops at MaxInt64 on positive overflow (master's External metric summation)."""
    total = 0
    for value in values:
        if value > 0 and total > MAX_INT64 - value:
            return MAX_INT64
        total += value
    return total
