"""The status round trip: a restore decides exactly as the process that wrote the status would have,
and a steady sync writes nothing."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.core.decision import Decision, TargetState, decide
from autoscaler.core.history import DecisionHistory, Recommendation, ScaleEvent
from autoscaler.core.observation import ExternalReading, Observation, ScaleInfo
from autoscaler.core.rescale import apply_scale_result
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import (
    DEFAULT_SCALE_DOWN_RULES,
    DEFAULT_SCALE_UP_RULES,
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
from autoscaler.core.sync import SyncState
from autoscaler.service.sync.report import SyncReporter
from autoscaler.service.sync.status import StatusDigest, compact_history, needs_write, status_document
from autoscaler.service.sync.status.restore import restore, restore_history
from autoscaler.values.quantity import Quantity

T0 = 1_800_000_000.0
QUEUE = MetricSpec(
    MetricSourceType.EXTERNAL, "q", MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("10"))
)
SETTINGS = ControllerSettings()


def spec_with(behavior: Behavior | None) -> TargetSpec:
    return TargetSpec(CrossVersionObjectReference("Deployment", "web"), 100, 1, (QUEUE,), behavior)


def observe(replicas: int, load: int, now: float) -> Observation:
    return Observation(ScaleInfo(replicas, replicas, "app=web"), [], (ExternalReading((load * 1000,), now),))


behaviors = st.one_of(
    st.none(),
    st.just(Behavior(DEFAULT_SCALE_UP_RULES, DEFAULT_SCALE_DOWN_RULES)),
    st.builds(
        lambda up, down: Behavior(
            ScalingRules(up, SelectPolicy.MAX, (ScalingPolicy(PolicyType.PODS, 2, 60),)),
            ScalingRules(down, SelectPolicy.MAX, (ScalingPolicy(PolicyType.PERCENT, 50, 120),)),
        ),
        st.sampled_from([0, 60, 300]),
        st.sampled_from([0, 120, 600]),
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    behavior=behaviors,
    loads=st.lists(st.integers(0, 600), min_size=2, max_size=30),
    gaps=st.lists(st.sampled_from([15, 15, 30, 60, 200]), min_size=30, max_size=30),
    restart_at=st.integers(0, 28),
)
def test_a_restore_decides_exactly_as_the_writer_would_have(
    behavior: Behavior | None, loads: list[int], gaps: list[int], restart_at: int
) -> None:
    spec = spec_with(behavior)
    state, replicas, now = TargetState(), 5, T0
    restored: TargetState | None = None
    restored_replicas = replicas
    for step, (load, gap) in enumerate(zip(loads, gaps, strict=False)):
        now += gap
        decision = decide(spec, observe(replicas, load, now), state, SETTINGS, now)
        if decision.scale:
            decision = apply_scale_result(decision, spec, True, now)
        if restored is not None:
            other = decide(spec, observe(restored_replicas, load, now), restored, SETTINGS, now)
            if other.scale:
                other = apply_scale_result(other, spec, True, now)
            assert (other.replicas, other.scale) == (decision.replicas, decision.scale)
            restored = TargetState(
                other.history, other.conditions, other.status_desired_replicas, other.last_scale_time
            )
            restored_replicas = other.replicas
        state = TargetState(
            decision.history, decision.conditions, decision.status_desired_replicas, decision.last_scale_time
        )
        replicas = decision.replicas
        if step == restart_at:
            # The process writes its status and dies; a new one reads it back at the same moment.
            document = status_document(decision, generation=1, now=now)
            restored = restore(document, now).target
            restored_replicas = replicas


@settings(max_examples=150, deadline=None)
@given(
    behavior=behaviors,
    loads=st.lists(st.integers(0, 600), min_size=1, max_size=30),
    gaps=st.lists(st.sampled_from([15, 15, 15, 30, 200, 900, 4000]), min_size=30, max_size=30),
    extra=st.sampled_from(
        [
            None,
            {"dryRun": True},
            {"hvpa": {"state": {"pins": {"app": {"cpu": "500m"}}}, "explanation": ["a", "b"], "blocked": None}},
        ]
    ),
)
def test_a_decision_and_its_status_have_one_digest(
    behavior: Behavior | None, loads: list[int], gaps: list[int], extra: dict[str, object] | None
) -> None:
    """The digest a sync takes from its decision is the digest of the status it would write: so a steady
    sync can tell that nothing needs writing without building the status."""
    spec = spec_with(behavior)
    state, replicas, now = TargetState(), 5, T0
    written = None
    for load, gap in zip(loads, gaps, strict=False):
        now += gap
        decision = decide(spec, observe(replicas, load, now), state, SETTINGS, now)
        if decision.scale:
            decision = apply_scale_result(decision, spec, True, now)
        document = status_document(decision, generation=1, now=now, extra=extra)
        digest = StatusDigest.of_decision(decision, generation=1, now=now, extra=extra)
        assert digest == StatusDigest.of_status(document)
        # …and the rule over digests is the rule over the documents they come from.
        assert digest.needs_write_after(StatusDigest.of_status(written)) == needs_write(written, document)
        if needs_write(written, document):
            written = document
        state = TargetState(
            decision.history, decision.conditions, decision.status_desired_replicas, decision.last_scale_time
        )
        replicas = decision.replicas
    # A steady run repeats its digest (or the rule would never save anything).
    steady = spec_with(None)
    state, now = TargetState(), T0
    digests = []
    for _ in range(4):
        now += 15
        decision = decide(steady, observe(5, 50, now), state, SETTINGS, now)
        state = TargetState(
            decision.history, decision.conditions, decision.status_desired_replicas, decision.last_scale_time
        )
        digests.append(StatusDigest.of_decision(decision, generation=1, now=now))
    assert digests[1:] == [digests[1]] * 3
    assert not digests[3].needs_write_after(digests[1])


def test_every_significant_change_needs_a_write() -> None:
    """One change at a time to each part of a status that is worth a write: the digest must see it."""
    spec = spec_with(Behavior(DEFAULT_SCALE_UP_RULES, DEFAULT_SCALE_DOWN_RULES))
    state, now = TargetState(), T0
    for load in (50, 50, 50):
        now += 15
        base = decide(spec, observe(5, load, now), state, SETTINGS, now)
        state = TargetState(base.history, base.conditions, base.status_desired_replicas, base.last_scale_time)
    first = base.conditions[0]
    history = base.history
    variants: dict[str, tuple[Decision, dict[str, object] | None, int]] = {
        "generation": (base, None, 2),
        "current": (replace(base, current_replicas=6), None, 1),
        "desired": (replace(base, status_desired_replicas=7), None, 1),
        "last scale time": (replace(base, last_scale_time=now - 100), None, 1),
        "condition transition": (
            replace(base, conditions=(replace(first, last_transition_time=now - 5000), *base.conditions[1:])),
            None,
            1,
        ),
        "condition message": (
            replace(base, conditions=(replace(first, message="other"), *base.conditions[1:])),
            None,
            1,
        ),
        "a closed count": (
            replace(
                base, history=replace(history, recommendations=(*history.recommendations, Recommendation(9, now - 20)))
            ),
            None,
            1,
        ),
        "the ongoing count": (
            replace(
                base, history=replace(history, recommendations=(*history.recommendations, Recommendation(9, now + 1)))
            ),
            None,
            1,
        ),
        "a scale event": (replace(base, history=replace(history, scale_up_events=(ScaleEvent(2, now - 10),))), None, 1),
        "error": (replace(base, error="boom"), None, 1),
        "extra": (base, {"dryRun": True}, 1),
    }
    before = status_document(base, generation=1, now=now)
    digest = StatusDigest.of_decision(base, generation=1, now=now)
    assert not digest.needs_write_after(StatusDigest.of_status(before))
    for what, (variant, extra, generation) in variants.items():
        after = status_document(variant, generation=generation, now=now, extra=extra)
        assert needs_write(before, after), what
        assert StatusDigest.of_decision(variant, generation=generation, now=now, extra=extra).needs_write_after(
            digest
        ), what
    # A closed count that merely aged out of the retention window is not worth a write.
    aged = replace(
        base, history=replace(history, recommendations=(*history.recommendations, Recommendation(9, now - 3000)))
    )
    assert StatusDigest.of_decision(aged, generation=1, now=now).needs_write_after(digest)
    later = StatusDigest.of_decision(aged, generation=1, now=now, retention=2000)
    assert not later.needs_write_after(StatusDigest.of_decision(aged, generation=1, now=now))


def test_the_ongoing_count_is_held_until_the_restore() -> None:
    history = DecisionHistory((Recommendation(9, T0), Recommendation(4, T0 + 30), Recommendation(6, T0 + 60)))
    document = status_document_history(history, T0 + 60)
    later = restore_history(document, T0 + 500)
    assert later is not None
    assert sorted((r.replicas, r.at) for r in later.recommendations) == [(4, T0 + 30), (6, T0 + 500), (9, T0)]


def status_document_history(history: DecisionHistory, now: float) -> dict[str, object]:
    from autoscaler.service.sync.status import history_document

    return history_document(compact_history(history, now))


def test_compaction_keeps_one_entry_per_count() -> None:
    recs = tuple(Recommendation(5 if i % 3 else 6, T0 + 15 * i) for i in range(200))
    compact = compact_history(DecisionHistory(recs), T0 + 15 * 199)
    assert compact.ongoing == 5
    assert [(r.replicas, r.at) for r in compact.closed] == [(6, T0 + 15 * 198)]
    # recommendations older than the longest possible window are dropped
    old = compact_history(DecisionHistory((Recommendation(7, T0), Recommendation(5, T0 + 4000))), T0 + 4000)
    assert old.closed == ()


def test_a_steady_sync_writes_nothing_and_a_change_does() -> None:
    spec = spec_with(Behavior(DEFAULT_SCALE_UP_RULES, DEFAULT_SCALE_DOWN_RULES))
    state, now = TargetState(history=DecisionHistory()), T0
    documents = []
    for load in (50, 51, 49, 50, 50, 52, 48):  # within tolerance around 5 replicas
        now += 15
        decision = decide(spec, observe(5, load, now), state, SETTINGS, now)
        state = TargetState(decision.history, decision.conditions, decision.status_desired_replicas)
        documents.append(status_document(decision, generation=1, now=now))
    writes = [needs_write(a, b) for a, b in itertools.pairwise(documents)]
    assert writes == [False] * len(writes)
    now += 15
    decision = decide(spec, observe(5, 200, now), state, SETTINGS, now)
    assert needs_write(documents[-1], status_document(decision, generation=1, now=now))
    # a spec change (new generation) is worth a write too
    assert needs_write(documents[-1], {**documents[-1], "observedGeneration": 2})


def test_conditions_and_times_survive_the_round_trip() -> None:
    spec = spec_with(None)
    decision = apply_scale_result(decide(spec, observe(2, 100, T0), TargetState(), SETTINGS, T0), spec, True, T0)
    document = status_document(decision, generation=3, now=T0)
    assert document["lastScaleTime"] == "2027-01-15T08:00:00Z"
    assert document["observedGeneration"] == 3
    state = restore(document, T0 + 10).target
    assert [(c.type, c.status, c.reason, c.last_transition_time) for c in state.conditions] == [
        (c.type, c.status, c.reason, c.last_transition_time) for c in decision.conditions
    ]
    assert state.desired_replicas == decision.status_desired_replicas
    assert restore(None, T0) == SyncState()
    assert restore(None, T0).target == TargetState()


def test_the_last_status_kept_is_the_status_given_whatever_encodes_it() -> None:
    """The reporter keeps the last status compressed (orjson's text, the standard library's where orjson
    refuses): it reads back equal, an integer past 64 bits and a NaN included."""
    for status in ({"currentReplicas": 4, "x": "ü"}, {"currentReplicas": 4, "big": 2**70}):
        assert (
            SyncReporter(cast(Any, None), cast(Any, None), dry_run=False, shard=None, last_status=status).last_status
            == status
        )
    odd = SyncReporter(
        cast(Any, None), cast(Any, None), dry_run=False, shard=None, last_status={"big": 2**70, "v": math.nan}
    )
    assert math.isnan(odd.last_status["v"]) and odd.last_status["big"] == 2**70  # type: ignore[index]
