"""Stabilization windows and rate limits (normalizeDesiredReplicas[WithBehaviors])."""

import pytest

from autoscaler.core.behavior import legacy_scale_up_limit, normalize_legacy, normalize_with_behavior
from autoscaler.core.history import DecisionHistory, Recommendation, ScaleEvent
from autoscaler.core.spec import (
    DEFAULT_SCALE_DOWN_RULES,
    DEFAULT_SCALE_UP_RULES,
    Behavior,
    PolicyType,
    ScalingPolicy,
    ScalingRules,
    SelectPolicy,
)

NOW = 10_000.0


def recs(*pairs: tuple[int, float]) -> DecisionHistory:
    return DecisionHistory(tuple(Recommendation(r, NOW + at) for r, at in pairs))


def behavior(up: ScalingRules = DEFAULT_SCALE_UP_RULES, down: ScalingRules = DEFAULT_SCALE_DOWN_RULES) -> Behavior:
    return Behavior(up, down)


def rules(
    *policies: tuple[PolicyType, int, int], window: int | None = 0, select: SelectPolicy = SelectPolicy.MAX
) -> ScalingRules:
    return ScalingRules(window, select, tuple(ScalingPolicy(t, v, p) for t, v, p in policies))


@pytest.mark.parametrize(("current", "limit"), [(0, 4), (1, 4), (2, 4), (3, 6), (10, 20)])
def test_legacy_scale_up_limit(current: int, limit: int) -> None:
    assert legacy_scale_up_limit(current) == limit


def test_legacy_stabilization_counts_recommendations_at_the_cutoff() -> None:
    history = recs((9, -300), (7, -301))
    norm = normalize_legacy(history, 8, 5, 1, 20, 300, NOW)
    assert norm.stabilized == 9  # a recommendation exactly 300 s old still counts (legacy path)
    assert norm.able_reason == "ScaleDownStabilized"
    # the expired one (7 at -301) is overwritten with the new proposal
    assert [r.replicas for r in norm.history.recommendations] == [9, 5]


def test_legacy_limits_and_reasons() -> None:
    up = normalize_legacy(DecisionHistory(), 3, 50, 1, 20, 300, NOW)
    assert (up.final, up.limit_reason, up.limited) == (6, "ScaleUpLimit", True)
    capped = normalize_legacy(DecisionHistory(), 10, 50, 1, 15, 300, NOW)
    assert (capped.final, capped.limit_reason) == (15, "TooManyReplicas")
    floor = normalize_legacy(DecisionHistory(), 5, 1, 3, 15, 0, NOW)
    assert (floor.final, floor.limit_reason) == (3, "TooFewReplicas")
    assert floor.limit_message == "the desired replica count is less than the minimum replica count"
    inside = normalize_legacy(DecisionHistory(), 5, 6, 3, 15, 0, NOW)
    assert (inside.final, inside.limit_reason, inside.limited) == (6, "DesiredWithinRange", False)


def test_behavior_stabilization_excludes_the_cutoff_and_works_both_ways() -> None:
    down = behavior(down=rules((PolicyType.PERCENT, 100, 15), window=300))
    norm = normalize_with_behavior(recs((9, -300), (8, -299)), down, 10, 5, 1, 20, 300, NOW)
    assert norm.stabilized == 8  # 9 is exactly 300 s old: out of the window
    assert norm.able_reason == "ScaleDownStabilized"
    up = behavior(up=rules((PolicyType.PODS, 100, 15), window=60))
    norm = normalize_with_behavior(recs((4, -30), (7, -10)), up, 3, 9, 1, 20, 300, NOW)
    assert norm.stabilized == 4 and norm.able_reason == "ScaleUpStabilized"
    assert norm.binding_recommendation == Recommendation(4, NOW - 30)


def test_stabilization_never_moves_against_the_proposal() -> None:
    # proposal 6 > current 5, but the up window holds a 3: stay at 5 (never go down to 3)
    up = behavior(up=rules((PolicyType.PODS, 100, 15), window=60))
    assert normalize_with_behavior(recs((3, -10)), up, 5, 6, 1, 20, 300, NOW).stabilized == 5


def test_recommendation_slot_reuse_needs_both_windows_expired() -> None:
    b = behavior(up=rules((PolicyType.PODS, 4, 15), window=100), down=rules((PolicyType.PERCENT, 100, 15), window=50))
    norm = normalize_with_behavior(recs((2, -80), (3, -200)), b, 3, 3, 1, 20, 300, NOW)
    assert [r.replicas for r in norm.history.recommendations] == [2, 3]  # 3@-200 overwritten by the new 3


def test_default_scale_up_policies_take_the_larger_change() -> None:
    b = behavior()
    assert normalize_with_behavior(DecisionHistory(), b, 2, 100, 1, 100, 0, NOW).final == 6  # +4 pods
    assert normalize_with_behavior(DecisionHistory(), b, 10, 100, 1, 100, 0, NOW).final == 20  # +100 %


def test_percent_scale_up_rounds_up_in_float64() -> None:
    b = behavior(up=rules((PolicyType.PERCENT, 10, 60)))
    # 100 × 1.1 = 110.00000000000001 in float64 -> 111 (upstream DV-003)
    assert normalize_with_behavior(DecisionHistory(), b, 100, 500, 1, 1000, 0, NOW).final == 111


def test_percent_scale_down_truncates() -> None:
    b = behavior(down=rules((PolicyType.PERCENT, 10, 60), window=0))
    assert normalize_with_behavior(DecisionHistory(), b, 72, 10, 1, 100, 0, NOW).final == 64


def test_events_inside_the_period_reduce_what_remains() -> None:
    b = behavior(up=rules((PolicyType.PODS, 4, 60)))
    history = DecisionHistory(scale_up_events=(ScaleEvent(3, NOW - 30), ScaleEvent(5, NOW - 60)))
    norm = normalize_with_behavior(history, b, 10, 50, 1, 100, 0, NOW)
    # only the event 30 s ago is inside the 60 s period (strictly after the cutoff): start 7, allow 11
    assert (norm.final, norm.limit_reason) == (11, "ScaleUpLimit")
    assert norm.rate_limit is not None and norm.rate_limit.policies[0].period_start_replicas == 7


def test_old_events_never_force_a_scale_down() -> None:
    b = behavior(up=rules((PolicyType.PODS, 1, 60)))
    history = DecisionHistory(scale_up_events=(ScaleEvent(5, NOW - 10),))
    norm = normalize_with_behavior(history, b, 10, 20, 1, 100, 0, NOW)
    assert norm.final == 10  # limit 6 < current: the limit becomes current


@pytest.mark.parametrize(
    ("select", "up_final", "down_final"),
    [
        (SelectPolicy.MAX, 20, 5),
        (SelectPolicy.MIN, 14, 8),
        (SelectPolicy.DISABLED, 10, 10),
    ],
)
def test_select_policy(select: SelectPolicy, up_final: int, down_final: int) -> None:
    up = rules((PolicyType.PODS, 4, 60), (PolicyType.PERCENT, 100, 60), select=select)
    down = rules((PolicyType.PODS, 2, 60), (PolicyType.PERCENT, 50, 60), window=0, select=select)
    b = behavior(up, down)
    assert normalize_with_behavior(DecisionHistory(), b, 10, 50, 1, 100, 0, NOW).final == up_final
    assert normalize_with_behavior(DecisionHistory(), b, 10, 1, 1, 100, 0, NOW).final == down_final


def test_disabled_direction_reports_the_rate_limit_reason() -> None:
    b = behavior(down=rules((PolicyType.PERCENT, 100, 15), window=0, select=SelectPolicy.DISABLED))
    norm = normalize_with_behavior(DecisionHistory(), b, 8, 1, 2, 20, 0, NOW)
    assert (norm.final, norm.limit_reason) == (8, "ScaleDownLimit")


def test_min_and_max_bind_with_their_reasons() -> None:
    b = behavior()
    up = normalize_with_behavior(DecisionHistory(), b, 8, 50, 1, 10, 0, NOW)
    assert (up.final, up.limit_reason) == (10, "TooManyReplicas")
    down = normalize_with_behavior(DecisionHistory(), b, 8, 1, 3, 10, 0, NOW)
    assert (down.final, down.limit_reason) == (3, "TooFewReplicas")


def test_no_clamping_when_the_proposal_equals_current() -> None:
    norm = normalize_with_behavior(DecisionHistory(), behavior(), 5, 5, 1, 10, 0, NOW)
    assert (norm.final, norm.limit_reason, norm.rate_limit) == (5, "DesiredWithinRange", None)


def test_scale_down_window_none_takes_the_controller_setting() -> None:
    b = behavior(down=rules((PolicyType.PERCENT, 100, 15), window=None))
    norm = normalize_with_behavior(recs((9, -100)), b, 9, 2, 1, 10, 120, NOW)
    assert norm.down_window == 120 and norm.stabilized == 9
    norm = normalize_with_behavior(recs((9, -100)), b, 9, 2, 1, 10, 60, NOW)
    assert norm.stabilized == 2
