"""Per-pod requests (step 5: A13 base formula, A15 max rule) and limits (step 6, A20), rounding (A22)."""

from fractions import Fraction

from autoscaler.core.hvpa.current import CurrentResource
from autoscaler.core.hvpa.resources import (
    ADJUSTED,
    HELD,
    KEPT,
    VERTICAL,
    adjusted_recommendation,
    new_limit,
    round_request,
    round_up,
    size_pair,
)
from autoscaler.core.hvpa.spec import ChangeParams, ContainerPolicy, ControlledValues
from autoscaler.values.quantity import Quantity
from tests.core.hvpa.builders import q

NO_BOUNDS = ContainerPolicy("main")


def test_base_formula() -> None:
    # A13 with base cpu {50m, 5 %}: 1 × 500m → 2 pods at T = 1.2: raw = 1.2 − 50m × 1; A = 575m + max(50m, 5 % × 575m).
    base = ChangeParams(q("50m"), 5)
    assert adjusted_recommendation(q("1.2"), q("500m"), 1, 2, base) == q("625m")
    # At 4 × 4 → 5 at 17: base(4) = 5 % × 4 = 200m; raw = 17 − 0.8 = 16.2; 3.24 + 5 % × 3.24 = 3.402.
    assert adjusted_recommendation(q("17"), q("4"), 4, 5, base) == q("3.402")
    # Scale-in 5 → 4 at 11 with pods at 2.4: raw = 11 − 5 × 120m = 10.4; 2.6 + 130m = 2.73.
    assert adjusted_recommendation(q("11"), q("2.4"), 5, 4, base) == q("2.73")


def test_base_formula_edge_cases() -> None:
    assert adjusted_recommendation(q("3"), q("1"), 2, 3, None) == 1  # no base: T/d
    assert adjusted_recommendation(q("100m"), q("1"), 2, 1, ChangeParams(q("50m"))) == q("100m")  # raw ≤ 0: T/d
    only_value = ChangeParams(q("100m"))
    assert adjusted_recommendation(q("2"), q("1"), 2, 4, only_value) == q("550m")  # (2 − .2)/4 + .1
    only_percentage = ChangeParams(None, 10)
    assert adjusted_recommendation(q("2"), q("1"), 2, 4, only_percentage) == q("0.495")  # (2 − .2)/4 × 1.1


def test_same_count_is_pure_vertical() -> None:
    sizing = size_pair(q("5.1"), q("1"), NO_BOUNDS, "cpu", 3, 3, None, ChangeParams(q("1")), held=False, max_rule=True)
    assert (sizing.per_pod, sizing.rule, sizing.adjusted) == (q("1.7"), VERTICAL, None)


def test_scale_out_never_shrinks_pods_while_the_total_rises() -> None:
    # A15: 4 × 4 → 5 at 17: A = 3.4 < 4 → keep 4.
    kept = size_pair(q("17"), q("4"), NO_BOUNDS, "cpu", 4, 5, None, None, held=False, max_rule=True)
    assert (kept.per_pod, kept.rule, kept.adjusted) == (4, KEPT, q("3.4"))
    # The total falls (another pair drove the scale-out): no max rule.
    falling = size_pair(q("12"), q("4"), NO_BOUNDS, "cpu", 4, 5, None, None, held=False, max_rule=True)
    assert (falling.per_pod, falling.rule) == (q("2.4"), ADJUSTED)
    # Outside the intervals (A8): no max rule.
    outside = size_pair(q("17"), q("4"), NO_BOUNDS, "cpu", 4, 5, None, None, held=False, max_rule=False)
    assert outside.per_pod == q("3.4")


def test_held_pods_never_shrink() -> None:
    held = size_pair(q("11"), q("2.4"), NO_BOUNDS, "cpu", 5, 5, None, None, held=True, max_rule=True)
    assert (held.per_pod, held.rule) == (q("2.4"), HELD)
    grows = size_pair(q("13"), q("2.4"), NO_BOUNDS, "cpu", 5, 5, None, None, held=True, max_rule=True)
    assert grows.per_pod == q("2.6")


def test_the_users_bounds_clamp_the_pod() -> None:
    policy = ContainerPolicy(
        "main", min_allowed={"cpu": Quantity.parse("300m")}, max_allowed={"cpu": Quantity.parse("2")}
    )
    assert size_pair(q("9"), q("1"), policy, "cpu", 3, 3, None, None, held=False, max_rule=True).per_pod == 2
    assert size_pair(q("0.3"), q("1"), policy, "cpu", 3, 3, None, None, held=False, max_rule=True).per_pod == q("300m")


def current(request: str, limit: str | None) -> CurrentResource:
    return CurrentResource(q(request), "pods", q(limit) if limit is not None else None)


def test_limit_rules() -> None:
    p = q("1.5")
    assert new_limit(p, current("1", None), 3, ChangeParams(q("1")), ControlledValues.REQUESTS_AND_LIMITS) is None
    assert new_limit(p, current("1", "1"), 3, None, ControlledValues.REQUESTS_AND_LIMITS) == p  # equal: follows
    assert new_limit(p, current("0", "2"), 3, None, ControlledValues.REQUESTS_AND_LIMITS) == p  # no request
    assert new_limit(p, current("1", "2"), 3, None, ControlledValues.REQUESTS_AND_LIMITS) == 3  # ratio 2 kept
    # A20: the gap value is a total shared by the d pods: max(1.5 + 3/3, 1.5 × 1.2) = 2.5.
    gap = ChangeParams(q("3"), 20)
    assert new_limit(p, current("1", "2"), 3, gap, ControlledValues.REQUESTS_AND_LIMITS) == q("2.5")
    assert new_limit(p, current("1", "2"), 3, ChangeParams(None, 100), ControlledValues.REQUESTS_AND_LIMITS) == 3
    assert new_limit(p, current("1", "2"), 3, gap, ControlledValues.REQUESTS_ONLY) == 2  # left alone


def test_rounding_is_up_to_a_millicore_and_a_byte() -> None:
    assert round_up("cpu", Fraction(10, 3)) == q("3334m")
    assert round_up("cpu", q("1.5")) == q("1.5")
    assert round_up("memory", q("8.96Gi")) == 9620726744  # 9620726743.04 bytes
    # A maxAllowed off the grid is not exceeded by the rounding.
    policy = ContainerPolicy("main", max_allowed={"memory": Quantity.parse("0.9Gi")})
    assert round_request("memory", q("0.9Gi"), policy) == 966367641
