"""Pausing a target (issue 36 item 3): spec.pause and the autoscaler.dev/paused* annotations, each mode, the
end of a pause, an invalid annotation, and the pause's state across a restart (status.pause)."""

from __future__ import annotations

import pytest

from autoscaler.core import conditions as c
from autoscaler.core.conditions import find_condition
from autoscaler.core.decision import TargetState
from autoscaler.core.observation import ExternalReading, Observation, ScaleInfo
from autoscaler.core.pause import PAUSED, effective_pause
from autoscaler.core.pause_spec import PauseAnnotations, PauseSpec, pause_annotation_items, read_pause_annotations
from autoscaler.core.pause_state import PauseMode, PauseState, pause_document, restore_pause
from autoscaler.core.rescale import scale_intent, state_before_write
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import (
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    TargetSpec,
)
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.core.sync import NOTHING_WRITTEN, SyncInputs, SyncOutcome, SyncState, WriteResults, plan_sync, settle
from autoscaler.values.fields import SpecError
from autoscaler.values.quantity import Quantity

QUEUE = MetricSpec(
    MetricSourceType.EXTERNAL, "queue", MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("10"))
)
SPEC = TargetSpec(CrossVersionObjectReference("Deployment", "web"), 10, 1, (QUEUE,))
SETTINGS = ControllerSettings(downscale_stabilization_window=0.0)  # a scale-down shows at once


def inputs(replicas: int, queue: int, now: float, annotations: dict[str, str] | None = None) -> SyncInputs:
    reading = ExternalReading((queue * 1000,), now)
    observation = Observation(ScaleInfo(replicas, replicas, "app=web"), [], (reading,))
    return SyncInputs(observation, annotations=pause_annotation_items(annotations or {}))


def synced(
    state: TargetState,
    replicas: int,
    queue: int,
    now: float,
    annotations: dict[str, str] | None = None,
    spec: TargetSpec = SPEC,
    results: WriteResults | None = None,
) -> SyncOutcome:
    plan = plan_sync(spec, inputs(replicas, queue, now, annotations), SyncState(state), SETTINGS, now)
    return settle(plan, results if results is not None else WriteResults())


def paused_condition(outcome: SyncOutcome) -> c.Condition | None:
    return find_condition(outcome.decision.conditions, PAUSED)


def test_a_target_never_paused_is_left_exactly_as_it_was() -> None:
    outcome = synced(TargetState(), 3, 50, 100.0)
    assert outcome.decision.scale and outcome.decision.replicas == 5
    assert paused_condition(outcome) is None and outcome.state.target.pause is None
    assert outcome.decision.held_replicas is None


def test_paused_holds_both_directions_decides_and_explains() -> None:
    up = synced(TargetState(), 3, 50, 100.0, {"autoscaler.dev/paused": "true"})
    decision = up.decision
    assert not decision.scale and decision.replicas == 3 and decision.status_desired_replicas == 3
    assert decision.desired_replicas == 5 and decision.held_replicas == 5  # still decided
    condition = paused_condition(up)
    assert condition is not None and (condition.status, condition.reason) == (c.TRUE, "ScalingTargetPaused")
    assert "annotation autoscaler.dev/paused" in condition.message and "1970-01-01T00:01:40Z" in condition.message
    assert [e.reason for e in decision.events] == ["ScalingTargetPaused"]
    assert up.state.target.pause == PauseState(PauseMode.PAUSED, None, 100.0)
    explanation = up.explanation()
    assert "Keep 3 replicas." in explanation
    assert any(line.startswith("Would scale 3 → 5; held: paused since 1970-01-01T00:01:40Z") for line in explanation)
    down = synced(up.state.target, 3, 10, 160.0, {"autoscaler.dev/paused": "true"})
    assert not down.decision.scale and down.decision.held_replicas == 1
    assert down.decision.events == ()  # the pause goes on: no new Event
    assert down.state.target.pause == PauseState(PauseMode.PAUSED, None, 100.0)  # since: when it began


@pytest.mark.parametrize(
    ("annotations", "spec_pause", "mode"),
    [
        ({"autoscaler.dev/paused-scale-in": "true"}, None, PauseMode.SCALE_IN),
        ({}, PauseSpec(scale_in=True), PauseMode.SCALE_IN),
        ({"autoscaler.dev/paused-scale-out": "true"}, None, PauseMode.SCALE_OUT),
        ({}, PauseSpec(scale_out=True), PauseMode.SCALE_OUT),
    ],
)
def test_one_direction_held_the_other_goes_on(
    annotations: dict[str, str], spec_pause: PauseSpec | None, mode: PauseMode
) -> None:
    spec = TargetSpec(SPEC.scale_target_ref, 10, 1, (QUEUE,), pause=spec_pause)
    seen = synced(TargetState(), 3, 30, 0.0, spec=spec).state.target  # steady at 3 before: no window holds 3 now
    up = synced(seen, 3, 50, 100.0, annotations, spec)
    down = synced(seen, 3, 10, 100.0, annotations, spec)
    held, free = (down, up) if mode is PauseMode.SCALE_IN else (up, down)
    assert not held.decision.scale and held.decision.held_replicas in (1, 5)
    assert free.decision.scale and free.decision.applied and free.decision.held_replicas is None
    reason = "PausedScaleIn" if mode is PauseMode.SCALE_IN else "PausedScaleOut"
    for outcome in (up, down):
        condition = paused_condition(outcome)
        assert condition is not None and (condition.status, condition.reason) == (c.TRUE, reason)
        assert outcome.state.target.pause is not None and outcome.state.target.pause.mode is mode
    assert any("held: paused scale-" in line for line in held.explanation())


def test_paused_replicas_scales_once_then_holds() -> None:
    annotations = {"autoscaler.dev/paused-replicas": "2"}
    first = synced(TargetState(), 5, 50, 100.0, annotations)
    assert first.decision.scale and first.decision.replicas == 2 and first.decision.applied
    assert "paused at 2 replicas (annotation autoscaler.dev/paused-replicas)" in first.decision.rescale_reason
    assert first.state.target.pause == PauseState(PauseMode.REPLICAS, 2, 100.0, reached=True)
    # Held from then on, whatever the metrics say and whoever changes the count (KEDA scales it once).
    again = synced(first.state.target, 2, 90, 160.0, annotations)
    assert not again.decision.scale and again.decision.held_replicas == 4  # 9, limited to 2 × 2
    moved = synced(again.state.target, 4, 90, 220.0, annotations)
    assert not moved.decision.scale and moved.decision.replicas == 4
    # A new count is a new pause: written once again.
    other = synced(moved.state.target, 4, 90, 280.0, {"autoscaler.dev/paused-replicas": "3"})
    assert other.decision.scale and other.decision.replicas == 3
    assert other.state.target.pause == PauseState(PauseMode.REPLICAS, 3, 100.0, reached=True)


def test_paused_replicas_retries_a_failed_write_and_a_dry_run_writes_nothing() -> None:
    annotations = {"autoscaler.dev/paused-replicas": "2"}
    failed = synced(TargetState(), 5, 50, 100.0, annotations, results=WriteResults(scale=False, scale_error="boom"))
    assert failed.decision.applied is False
    assert failed.state.target.pause == PauseState(PauseMode.REPLICAS, 2, 100.0, reached=False)
    retried = synced(failed.state.target, 5, 50, 160.0, annotations)
    assert retried.decision.scale and retried.decision.replicas == 2 and retried.decision.applied
    dry = synced(TargetState(), 5, 50, 100.0, annotations, results=NOTHING_WRITTEN)
    assert dry.decision.scale and dry.state.target.pause is not None and not dry.state.target.pause.reached
    found = synced(TargetState(), 2, 90, 100.0, annotations)  # already at the count: reached, held
    assert not found.decision.scale and found.state.target.pause == PauseState(PauseMode.REPLICAS, 2, 100.0, True)


def test_paused_at_zero_wakes_when_resumed() -> None:
    """A pause at 0 is this autoscaler's zero: once resumed, the target leaves it (minReplicas 1 here), where a
    person's 0 stays 0 (upstream)."""
    annotations = {"autoscaler.dev/paused-replicas": "0"}
    zero = synced(TargetState(), 3, 50, 100.0, annotations)
    assert zero.decision.replicas == 0 and zero.decision.applied
    scaled_to_zero = find_condition(zero.state.target.conditions, c.SCALED_TO_ZERO)
    assert scaled_to_zero is not None and scaled_to_zero.status == c.TRUE
    held = synced(zero.state.target, 0, 50, 160.0, annotations)
    assert not held.decision.scale and held.decision.held_replicas == 4  # 5, limited to 4 from 0
    resumed = synced(held.state.target, 0, 50, 220.0)
    assert resumed.decision.scale and resumed.decision.replicas == 4


def test_resume_ends_the_pause_visibly() -> None:
    paused = synced(TargetState(), 3, 50, 100.0, {"autoscaler.dev/paused-scale-out": "true"})
    resumed = synced(paused.state.target, 3, 50, 160.0)
    assert resumed.decision.scale and resumed.decision.replicas == 5
    condition = paused_condition(resumed)
    assert condition is not None and (condition.status, condition.reason) == (c.FALSE, "ScalingTargetResumed")
    assert condition.last_transition_time == 160.0
    assert "ScalingTargetResumed" in [e.reason for e in resumed.decision.events]
    assert resumed.state.target.pause is None
    later = synced(resumed.state.target, 5, 50, 220.0)
    assert later.decision.events == () and paused_condition(later) == condition  # steady


def test_a_mode_change_keeps_since_and_posts_an_event() -> None:
    first = synced(TargetState(), 3, 30, 100.0, {"autoscaler.dev/paused-scale-in": "true"})
    both = synced(first.state.target, 3, 30, 160.0, {"autoscaler.dev/paused": "true"})
    assert both.state.target.pause == PauseState(PauseMode.PAUSED, None, 100.0)
    assert [e.reason for e in both.decision.events] == ["ScalingTargetPaused"]
    condition = paused_condition(both)
    assert condition is not None and condition.last_transition_time == 100.0


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("abc", "must be a whole number of replicas from 0 to 2147483647"),
        ("-1", "must be a whole number of replicas from 0 to 2147483647"),
        ("2147483648", "must be a whole number of replicas from 0 to 2147483647"),
    ],
)
def test_an_invalid_paused_replicas_is_reported_and_changes_nothing_else(value: str, rule: str) -> None:
    annotations = {"autoscaler.dev/paused-replicas": value}
    outcome = synced(TargetState(), 3, 50, 100.0, annotations)
    assert outcome.decision.scale and outcome.decision.replicas == 5  # not paused
    condition = paused_condition(outcome)
    assert condition is not None and (condition.status, condition.reason) == (c.FALSE, "InvalidPauseAnnotation")
    assert f'annotation autoscaler.dev/paused-replicas: "{value}": {rule}' in condition.message
    warnings = [e for e in outcome.decision.events if e.reason == "InvalidPauseAnnotation"]
    assert len(warnings) == 1 and warnings[0].type == "Warning"
    again = synced(outcome.state.target, 5, 50, 160.0, annotations)
    assert not any(e.reason == "InvalidPauseAnnotation" for e in again.decision.events)  # once
    fixed = synced(again.state.target, 5, 50, 220.0)
    condition = paused_condition(fixed)
    assert condition is not None and (condition.status, condition.message) == (c.FALSE, "not paused")


def test_an_invalid_annotation_beside_a_valid_pause_is_named_in_it() -> None:
    annotations = {"autoscaler.dev/paused": "true", "autoscaler.dev/paused-scale-in": "yes"}
    outcome = synced(TargetState(), 3, 50, 100.0, annotations)
    assert not outcome.decision.scale
    condition = paused_condition(outcome)
    assert condition is not None and condition.status == c.TRUE
    assert 'ignored: annotation autoscaler.dev/paused-scale-in: "yes": must be "true" or "false"' in condition.message
    assert "InvalidPauseAnnotation" in [e.reason for e in outcome.decision.events]


def test_annotations_win_over_the_spec_where_both_say_something() -> None:
    def mode(spec: PauseSpec | None, annotations: dict[str, str]) -> tuple[PauseMode, int | None] | None:
        pause = effective_pause(spec, read_pause_annotations(pause_annotation_items(annotations)))
        return None if pause is None else (pause.mode, pause.replicas)

    assert mode(PauseSpec(replicas=3), {}) == (PauseMode.REPLICAS, 3)
    assert mode(PauseSpec(replicas=3), {"autoscaler.dev/paused-replicas": "5"}) == (PauseMode.REPLICAS, 5)
    assert mode(PauseSpec(replicas=3), {"autoscaler.dev/paused": "true"}) == (PauseMode.PAUSED, None)
    assert mode(PauseSpec(replicas=3, scale_in=True), {"autoscaler.dev/paused": "false"}) is None  # lifts the spec's
    assert mode(PauseSpec(scale_in=True), {"autoscaler.dev/paused-scale-in": "false"}) is None
    assert mode(PauseSpec(scale_in=True), {"autoscaler.dev/paused-scale-out": "true"}) == (PauseMode.PAUSED, None)
    assert mode(PauseSpec(scale_in=True, scale_out=True), {}) == (PauseMode.PAUSED, None)
    # KEDA: paused-replicas wins over every other annotation; paused "true" over the one-direction ones.
    both = {"autoscaler.dev/paused": "true", "autoscaler.dev/paused-replicas": "0"}
    assert mode(None, both) == (PauseMode.REPLICAS, 0)
    assert mode(None, {"autoscaler.dev/paused": "true", "autoscaler.dev/paused-scale-in": "false"}) == (
        PauseMode.PAUSED,
        None,
    )
    assert mode(None, {"autoscaler.dev/paused": "1", "autoscaler.dev/paused-scale-out": "F"}) == (
        PauseMode.PAUSED,
        None,
    )
    assert mode(None, {"autoscaler.dev/paused": "false"}) is None
    assert mode(None, {"other": "x"}) is None
    assert read_pause_annotations(()) == PauseAnnotations()


def test_the_pause_state_survives_a_restart() -> None:
    for state in (
        PauseState(PauseMode.PAUSED, None, 1_700_000_000.25),
        PauseState(PauseMode.SCALE_OUT, None, 1_700_000_000.0),
        PauseState(PauseMode.REPLICAS, 4, 1_700_000_000.5, reached=True),
        PauseState(PauseMode.REPLICAS, 0, 1_700_000_000.5, reached=False),
    ):
        assert restore_pause(pause_document(state)) == state
    assert restore_pause(None) is None
    assert restore_pause({"mode": "sideways", "since": "2026-01-01T00:00:00Z"}) is None
    assert restore_pause({"mode": "replicas", "since": "2026-01-01T00:00:00Z", "replicas": -1}) is None
    assert restore_pause({"mode": "paused"}) is None


def test_spec_pause_is_validated_with_its_path() -> None:
    base = {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 10}
    spec = parse_target_spec({**base, "pause": {"replicas": 3, "scaleIn": True}}, require_queries=False)
    assert spec.pause == PauseSpec(3, True, False)
    with pytest.raises(SpecError) as raised:
        parse_target_spec(
            {**base, "pause": {"replicas": -1, "scaleIn": "yes", "scaleOutt": True}}, require_queries=False
        )
    assert {(e.path, e.message.split(" (")[0]) for e in raised.value.errors} == {
        ("spec.pause.replicas", "must be between 0 and 2147483647"),
        ("spec.pause.scaleIn", "must be true or false, not string"),
        ("spec.pause.scaleOutt", "unknown field"),
    }


def activated(pause: dict[str, bool]) -> TargetSpec:
    """A queue worker with spec.activation (idle at 0, no cooldown) and ``pause``."""
    return parse_target_spec(
        {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
            "minReplicas": 0,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "External",
                    "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}},
                }
            ],
            "activation": {"cooldownSeconds": 0},
            "pause": pause,
        },
        require_queries=False,
    )


def test_a_direction_pause_holds_activations_idle_and_wake_too() -> None:
    """Scale-in paused: the step to idle is held; scale-out paused: the wake from idle is held."""
    idle = synced(TargetState(), 3, 0, 100.0, spec=activated({"scaleIn": True}))
    assert not idle.decision.scale and idle.decision.replicas == 3 and idle.decision.held_replicas == 0
    assert synced(TargetState(), 3, 0, 100.0, spec=activated({})).decision.replicas == 0  # unpaused: idle
    wake = synced(TargetState(), 0, 30, 100.0, spec=activated({"scaleOut": True}))
    assert not wake.decision.scale and wake.decision.replicas == 0 and wake.decision.held_replicas == 1
    assert synced(TargetState(), 0, 30, 100.0, spec=activated({})).decision.replicas == 1  # unpaused: woken


@pytest.mark.parametrize(("landed", "writes_again"), [(True, False), (False, True)])
def test_a_crash_during_the_paused_write_is_settled_as_any_write(landed: bool, writes_again: bool) -> None:
    """The status recorded before the write (pendingScale) carries the pause; a restarted process that finds
    the count written holds it, one that finds the old count writes it again."""
    annotations = {"autoscaler.dev/paused-replicas": "2"}
    plan = plan_sync(SPEC, inputs(5, 50, 100.0, annotations), SyncState(TargetState()), SETTINGS, 100.0)
    assert plan.scale_to == 2
    before = state_before_write(plan.decision, scale_intent(plan.decision, plan.now))
    assert before.pause == PauseState(PauseMode.REPLICAS, 2, 100.0, reached=False)
    restarted = synced(before, 2 if landed else 5, 90, 160.0, annotations)
    assert restarted.decision.scale is writes_again
    assert restarted.state.target.pause == PauseState(PauseMode.REPLICAS, 2, 100.0, reached=True)
