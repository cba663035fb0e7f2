"""How the HPA engine's decision and HVPA meet: the HPA source is the engine's final count, so its behavior
(stabilization windows, rate policies) shapes that source; HVPA's scale changes are recorded as the HPA's
scale events (docs/hvpa.md, "HVPA and the HPA behavior")."""

from autoscaler.core.decision import Decision, TargetState, decide
from autoscaler.core.history import DecisionHistory, Recommendation, ScaleEvent
from autoscaler.core.hvpa.hpa_link import adopt_hvpa, hpa_off_decision
from autoscaler.core.observation import ExternalReading, Observation, ScaleInfo
from autoscaler.core.rescale import apply_scale_result
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import TargetSpec
from tests.core.hvpa.builders import decide as decide_hvpa
from tests.core.hvpa.builders import pods, target_spec, texts, vpa_status

EXTERNAL = (
    "metrics:\n- type: External\n  external: {metric: {name: load}, target: {type: AverageValue, "
    "averageValue: '1'}, query: load}\n"
)
CPU_ONLY = "  containers: [{name: main, controlledResources: [cpu]}]\n"
NO_MIN_CHANGE = "  scaleUp: {minChange: {cpu: {value: 0}}}\n  scaleDown: {minChange: {cpu: {value: 0}}}\n"


def hpa_decision(
    spec: TargetSpec, current: int, load: int, *, now: float = 1000.0, state: TargetState | None = None
) -> Decision:
    """The HPA engine's decision with an External AverageValue 1 metric: it proposes ``load`` replicas."""
    observation = Observation(ScaleInfo(current, current, "app=x"), [], (ExternalReading((load * 1000,), now),))
    return decide(spec, observation, state or TargetState(history=DecisionHistory()), ControllerSettings(), now)


def test_the_hpa_source_is_the_engines_final_count_after_its_rate_policy() -> None:
    # The HPA wants 6, its scaleUp policy allows +1 per minute → it proposes 4; 4 × 1 CPU = 4 ≤ MAX(3) = 6.
    behavior = "behavior:\n  scaleUp: {policies: [{type: Pods, value: 1, periodSeconds: 60}]}\n"
    spec = target_spec(NO_MIN_CHANGE + CPU_ONLY + "  sources: [hpa]\n", extra=EXTERNAL + behavior)
    hpa = hpa_decision(spec, 3, 6)
    assert (hpa.desired_replicas, hpa.replicas) == (6, 4)
    d = decide_hvpa(spec, 3, pods(3, {"cpu": "1"}), hpa=hpa)
    assert d.sources is not None and d.sources.hpa_replicas == 4
    assert d.pairs[0].totals.hpa_total == 4 and d.replicas == 3 and texts(d.requests) == {"main": {"cpu": "1334m"}}
    unlimited = target_spec(NO_MIN_CHANGE + CPU_ONLY + "  sources: [hpa]\n", extra=EXTERNAL, max_replicas=9)
    d = decide_hvpa(unlimited, 3, pods(3, {"cpu": "1"}), hpa=hpa_decision(unlimited, 3, 6))
    assert d.replicas == 3 and texts(d.requests) == {"main": {"cpu": "2"}}  # 6 = MAX(3)


def test_the_hpa_scale_down_window_holds_the_total() -> None:
    # The HPA recommended 3 a minute ago; its 5-minute scale-down window keeps the proposal at 3 → the HPA
    # total 3 × 1.7 holds the pods although the VPA (3 × 0.8) would shrink them.
    spec = target_spec(NO_MIN_CHANGE + CPU_ONLY, extra=EXTERNAL)
    state = TargetState(history=DecisionHistory((Recommendation(3, 940.0),)))
    hpa = hpa_decision(spec, 3, 2, state=state)
    assert (hpa.desired_replicas, hpa.replicas) == (2, 3)
    d = decide_hvpa(spec, 3, pods(3, {"cpu": "1.7"}), hpa=hpa, vpa=vpa_status({"main": {"cpu": "800m"}}))
    assert d.direction is None and texts(d.requests) == {"main": {"cpu": "1700m"}}
    later = hpa_decision(spec, 3, 2, now=1300.0, state=state)
    d = decide_hvpa(spec, 3, pods(3, {"cpu": "1.7"}), hpa=later, vpa=vpa_status({"main": {"cpu": "800m"}}), now=1300)
    assert texts(d.requests) == {"main": {"cpu": "1134m"}}  # 2 × 1.7 / 3


def test_hvpa_scale_changes_count_against_the_hpa_rate_policies() -> None:
    # A VPA-driven 2 → 4 is recorded as a scale-up event; a minute later the HPA's +1/min policy counts it.
    behavior = "behavior:\n  scaleUp: {policies: [{type: Pods, value: 1, periodSeconds: 120}]}\n"
    spec = target_spec(NO_MIN_CHANGE + CPU_ONLY, extra=EXTERNAL + behavior)
    hpa = hpa_decision(spec, 2, 2)
    hvpa = decide_hvpa(spec, 2, pods(2, {"cpu": "1"}), hpa=hpa, vpa=vpa_status({"main": {"cpu": "4"}}))
    assert hvpa.replicas == 4
    adopted = adopt_hvpa(hpa, hvpa)
    assert (adopted.replicas, adopted.scale, adopted.rescale_reason) == (
        4,
        True,
        "HVPA: the total of main/cpu needs 4 replicas",
    )
    recorded = apply_scale_result(adopted, spec, True, 1000.0)
    assert recorded.history.scale_up_events == (ScaleEvent(2, 1000.0),)
    state = TargetState(
        recorded.history, recorded.conditions, recorded.status_desired_replicas, recorded.last_scale_time
    )
    next_hpa = hpa_decision(spec, 4, 9, now=1060.0, state=state)
    assert next_hpa.replicas == 4  # period start 2 + 1 = 3 < 4: no further HPA scale-up yet


def test_a_held_or_blocked_hvpa_decision_keeps_the_count() -> None:
    spec = target_spec(CPU_ONLY + '  scaleUp: {updatePolicy: {updateMode: "Off"}}\n', extra=EXTERNAL)
    hpa = hpa_decision(spec, 2, 5)
    assert hpa.replicas == 4
    hvpa = decide_hvpa(spec, 2, pods(2, {"cpu": "1"}), hpa=hpa)
    adopted = adopt_hvpa(hpa, hvpa)
    assert (adopted.replicas, adopted.scale, adopted.status_desired_replicas) == (2, False, 2)
    assert adopted.history == hpa.history  # the HPA's own recommendation is still remembered


def test_without_the_hpa_source_no_metric_is_read() -> None:
    spec = target_spec("  sources: [vpa]\n", extra=EXTERNAL)
    decision = hpa_off_decision(spec, 3, TargetState(), 50.0)
    assert decision.branch == "hvpa-only" and decision.desired_replicas is None and not decision.scale
    assert all(m.skipped for m in decision.metrics)
    assert decision.history.recommendations == (Recommendation(3, 50.0),)
    d = decide_hvpa(spec, 3, pods(3, {"cpu": "1", "memory": "1Gi"}), hpa=decision)
    assert d.sources is not None and d.sources.hpa_replicas is None
    assert d.inactive is not None and "VPA source unavailable: no VPA status" in d.inactive


def test_a_failed_hpa_metric_leaves_only_the_vpa() -> None:
    spec = target_spec(CPU_ONLY, extra=EXTERNAL)
    from autoscaler.core.observation import MetricFailure

    failed = decide(
        spec,
        Observation(ScaleInfo(2, 2, "app=x"), [], (MetricFailure("down"),)),
        TargetState(),
        ControllerSettings(),
        0.0,
    )
    d = decide_hvpa(spec, 2, pods(2, {"cpu": "1"}), hpa=failed, vpa=vpa_status({"main": {"cpu": "900m"}}))
    assert d.sources is not None and d.sources.hpa_replicas is None
    assert any("HPA source unavailable" in note for note in d.sources.unavailable)
    assert d.applied and texts(d.requests) == {"main": {"cpu": "900m"}}


def test_without_the_hpa_source_status_desired_replicas_is_kept_as_a_sync_that_cannot_decide_keeps_it() -> None:
    # One rule (core/decision.py's kept_desired_replicas): the last written value, else the current count.
    from autoscaler.core.observation import MetricFailure

    spec = target_spec("  sources: [vpa]\n", extra=EXTERNAL)
    for written in (None, 7):
        state = TargetState(desired_replicas=written)
        off = hpa_off_decision(spec, 3, state, 50.0)
        failed = decide(
            spec, Observation(ScaleInfo(3, 3, "app=x"), [], (MetricFailure("down"),)), state, ControllerSettings(), 50.0
        )
        assert failed.branch == "metrics-failed"
        assert off.status_desired_replicas == failed.status_desired_replicas == (3 if written is None else 7)
