"""A scale write recorded before it is sent, settled against the workload's count after a crash.

The service writes the status of the decision as made, with the write as its intent, before it sends the
scale write (core/rescale.py ``state_before_write``); a process that starts from that status settles the
intent against the count it reads (``resolve_scale_intent``). What must hold:

* a write that landed is recorded exactly as the writer would have recorded it: the state equals the one
  :func:`~autoscaler.core.sync.settle` leaves after the write, so every later decision is the same;
* one that never landed leaves the state the writer held while the write was in flight, no scale event;
* a count changed by another writer since counts the write (conservative);
* whatever the crash point, no policy period sees more change than the policies allow (hypothesis).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoscaler.core import conditions as c
from autoscaler.core.conditions import find_condition
from autoscaler.core.decision import TargetState
from autoscaler.core.history import DecisionHistory, Recommendation, ScaleEvent, ScaleIntent
from autoscaler.core.observation import ExternalReading, Observation, ScaleInfo
from autoscaler.core.rescale import resolve_scale_intent, scale_intent, state_before_write
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import (
    Behavior,
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    PolicyType,
    ScalingPolicy,
    ScalingRules,
    SelectPolicy,
    TargetSpec,
)
from autoscaler.core.sync import ALL_WRITTEN, SyncInputs, SyncPlan, SyncState, plan_sync, settle
from autoscaler.values.quantity import Quantity

QUEUE = MetricSpec(
    MetricSourceType.EXTERNAL, "queue", MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("10"))
)
ONE_POD_A_MINUTE = ScalingRules(0, SelectPolicy.MAX, (ScalingPolicy(PolicyType.PODS, 1, 60),))
SPEC = TargetSpec(
    CrossVersionObjectReference("Deployment", "web"),
    10,
    1,
    (QUEUE,),
    Behavior(ONE_POD_A_MINUTE, ScalingRules(0, SelectPolicy.MAX, (ScalingPolicy(PolicyType.PODS, 1, 60),))),
)
SETTINGS = ControllerSettings()


def observed(replicas: int, queue: int, now: float) -> SyncInputs:
    reading = ExternalReading((queue * 1000,), now)
    return SyncInputs(Observation(ScaleInfo(replicas, replicas, "app=web"), [], (reading,)))


def planned(state: TargetState, replicas: int, queue: int, now: float, spec: TargetSpec = SPEC) -> SyncPlan:
    return plan_sync(spec, observed(replicas, queue, now), SyncState(state), SETTINGS, now)


def first_scale_up() -> tuple[SyncPlan, TargetState]:
    """A target at 2 replicas, seen before, whose load wants 10: its plan scales 2 → 3, and the state a
    status written before the write holds."""
    settled = settle(planned(TargetState(), 2, 20, 100.0), ALL_WRITTEN).state.target
    plan = planned(settled, 2, 100, 110.0)
    assert plan.scale_to == 3
    return plan, state_before_write(plan.decision, scale_intent(plan.decision, plan.now))


def test_the_intent_is_the_write_the_decision_makes() -> None:
    plan, before = first_scale_up()
    assert before.scale_intent == ScaleIntent(2, 3, 110.0, plan.decision.rescale_reason)
    assert plan.decision.rescale_reason  # the SuccessfulRescale Event's reason


def test_a_write_that_landed_is_recorded_as_the_writer_would_have() -> None:
    plan, before = first_scale_up()
    written = settle(plan, ALL_WRITTEN)
    resolved, event = resolve_scale_intent(before, SPEC, 3)
    assert resolved == written.state.target
    assert resolved.history is not None and resolved.history.scale_up_events == (ScaleEvent(1, 110.0),)
    assert resolved.last_scale_time == 110.0 and resolved.scale_intent is None
    assert event is not None and event == written.decision.events[-1]
    # And so every later sync decides the same: held by the policy until the period has passed.
    for now in (111.0, 150.0, 169.9, 170.0, 200.0):
        after_crash = planned(before, 3, 100, now).decision
        unbroken = planned(written.state.target, 3, 100, now).decision
        assert replace(after_crash, events=after_crash.events[1:]) == unbroken
        assert after_crash.events[0] == event
        assert after_crash.scale == (now >= 170.0)


def test_a_write_that_never_landed_leaves_the_state_the_writer_held() -> None:
    _, before = first_scale_up()
    resolved, event = resolve_scale_intent(before, SPEC, 2)
    assert event is None
    assert resolved == replace(before, scale_intent=None)
    assert resolved.history is not None and resolved.history.scale_up_events == ()
    # The next sync scales at once: the write it never made does not hold it.
    assert planned(before, 2, 100, 111.0).scale_to == 3


def test_a_count_another_writer_changed_counts_the_write() -> None:
    """5 replicas: someone scaled since, and whether this write landed first cannot be told."""
    _, before = first_scale_up()
    resolved, event = resolve_scale_intent(before, SPEC, 5)
    assert event is None
    assert resolved.history is not None and resolved.history.scale_up_events == (ScaleEvent(1, 110.0),)
    assert resolved.scale_intent is None


def test_no_intent_leaves_the_state_as_it_is() -> None:
    state = TargetState(DecisionHistory((Recommendation(2, 1.0),)))
    assert resolve_scale_intent(state, SPEC, 7) == (state, None)


def test_a_landed_scale_to_zero_carries_scaled_to_zero_so_the_target_can_leave_zero() -> None:
    """Without ScaledToZero a target at 0 is a person's 0 (scaling disabled): the write's condition is
    restored with its scale event."""
    spec = replace(SPEC, min_replicas=0)
    settled = settle(planned(TargetState(), 1, 10, 0.0, spec), ALL_WRITTEN).state.target
    plan = planned(settled, 1, 0, 400.0, spec)
    assert plan.scale_to == 0
    before = state_before_write(plan.decision, scale_intent(plan.decision, plan.now))
    resolved, _ = resolve_scale_intent(before, spec, 0)
    flag = find_condition(resolved.conditions, c.SCALED_TO_ZERO)
    assert flag is not None and flag.status == c.TRUE
    assert resolved == settle(plan, ALL_WRITTEN).state.target
    assert planned(before, 0, 30, 500.0, spec).decision.branch == "metrics"  # not "disabled"


def test_an_intent_in_a_state_without_history_gets_the_initial_recommendation() -> None:
    """A status holding an intent but no history (written by hand): the history starts as a first sync's."""
    state = TargetState(scale_intent=ScaleIntent(1, 2, 50.0, "r"))
    resolved, _ = resolve_scale_intent(state, SPEC, 2)
    assert resolved.history == DecisionHistory((Recommendation(1, 50.0),), (ScaleEvent(1, 50.0),))


# -- every crash point, any load curve ------------------------------------------------------------------

CRASHES = ("none", "before-the-intent", "never-landed", "landed", "after-the-status")
rules = st.builds(
    ScalingRules,
    st.just(0),
    st.sampled_from([SelectPolicy.MAX, SelectPolicy.MIN]),
    st.lists(
        st.builds(ScalingPolicy, st.sampled_from(PolicyType), st.integers(1, 5), st.sampled_from([15, 30, 60, 120])),
        min_size=1,
        max_size=2,
    ).map(tuple),
)


@dataclass
class Change:
    at: float
    before: int
    after: int


def _bound(policy: ScalingPolicy, start: int, up: bool) -> int:
    if policy.type is PolicyType.PODS:
        return start + policy.value if up else start - policy.value
    return math.ceil(start * (1 + policy.value / 100)) if up else int(start * (1 - policy.value / 100))


def _within_policies(changes: list[Change], rules_: ScalingRules, up: bool) -> bool:
    """The last change, against each policy's period ending at it (as the engine counts: strictly inside)."""
    last = changes[-1]
    verdicts = []
    for policy in rules_.policies:
        inside = [x for x in changes if x.at > last.at - policy.period_seconds]
        added = sum(x.after - x.before for x in inside if x.after > x.before)
        removed = sum(x.before - x.after for x in inside if x.after < x.before)
        start = last.after - added + removed
        bound = _bound(policy, start, up)
        verdicts.append(last.after <= bound if up else last.after >= bound)
    return all(verdicts) if rules_.select_policy is SelectPolicy.MIN else any(verdicts)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    up=rules,
    down=rules,
    start=st.integers(1, 30),
    steps=st.lists(
        st.tuples(st.integers(0, 600), st.sampled_from([5, 15, 15, 30]), st.sampled_from(CRASHES)),
        min_size=5,
        max_size=40,
    ),
)
def test_a_crash_at_any_point_of_any_scale_write_keeps_every_policy(
    up: ScalingRules, down: ScalingRules, start: int, steps: list[tuple[int, int, str]]
) -> None:
    """A load curve replayed through syncs; at each scale the writer dies at a drawn point and the next
    sync starts from what the status held (the settled state, or the state before the write with its
    intent); the count moves only when the write lands. No policy period sees more than it allows."""
    spec = TargetSpec(CrossVersionObjectReference("Deployment", "web"), 100, 1, (QUEUE,), Behavior(up, down))
    state, replicas, now = TargetState(history=DecisionHistory()), start, 0.0
    changes: list[Change] = []
    for load, gap, crash in steps:
        now += gap
        plan = planned(state, replicas, load, now, spec)
        target = plan.scale_to
        if target is None or crash == "none":
            if target is not None:
                changes.append(Change(now, replicas, target))
                assert _within_policies(changes, up if target > replicas else down, target > replicas)
                replicas = target
            state = settle(plan, ALL_WRITTEN).state.target
            continue
        before = state_before_write(plan.decision, scale_intent(plan.decision, now))
        if crash in ("landed", "after-the-status"):
            changes.append(Change(now, replicas, target))
            assert _within_policies(changes, up if target > replicas else down, target > replicas)
            replicas = target
        # What the restarted process starts from: the status as it was left.
        if crash == "before-the-intent":
            pass  # the status of the sync before: the state carried in
        elif crash == "after-the-status":
            state = settle(plan, ALL_WRITTEN).state.target
        else:
            state = before
