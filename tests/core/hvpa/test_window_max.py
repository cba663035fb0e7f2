"""``stabilizationMode``: SinceLastScaling (EP-0001's letter, the default) and WindowMax (the HPA's windows)
for the per-pod requests — both modes, the window's edges, per-resource independence, and a restart in the
middle of a window (the history restored from the status document the service writes).
"""

from __future__ import annotations

import itertools

import pytest
import yaml

from autoscaler.core.hvpa.decision import HvpaDecision, HvpaState
from autoscaler.core.hvpa.explain import explain_hvpa
from autoscaler.core.hvpa.gates import BlockReason
from autoscaler.core.hvpa.spec import StabilizationMode
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.service.sync.status.restore import restore
from autoscaler.service.sync.status.sections import hvpa_status
from autoscaler.values.fields import SpecError
from tests.core.hvpa.builders import CPU_ONLY, DESIGN, VPA_ONLY, decide, pods, target_spec, texts, vpa_status

DOWN_WINDOW = "  scaleDown: {stabilizationDuration: 2m, stabilizationMode: WindowMax}\n"
# The noisy load: 4 replicas, the VPA recommending demand / replicas with demand 6.3 / 5.7 cores.
HIGH, LOW = "1575m", "1425m"


def run(spec_text: str, recommendations: list[str], *, start: str = HIGH, step: float = 60) -> list[str]:
    """Drive decide_hvpa in a closed loop (each sync's pods carry what the last one applied); the requests."""
    spec = target_spec(VPA_ONLY + DESIGN + CPU_ONLY + spec_text)
    state, request, seen = HvpaState(), start, []
    for index, recommendation in enumerate(recommendations):
        d = decide(spec, 4, pods(4, {"cpu": request}), vpa=vpa_status({"main": {"cpu": recommendation}}),
                   state=state, now=index * step)  # fmt: skip
        if d.applied:
            request = texts(d.requests)["main"]["cpu"]
        state = d.state
        seen.append(request)
    return seen


def flips(requests: list[str]) -> int:
    return sum(1 for before, after in itertools.pairwise(requests) if before != after)


def test_the_mode_defaults_to_since_last_scaling_and_parses_both_values() -> None:
    hvpa = target_spec(VPA_ONLY).hvpa
    assert hvpa is not None
    assert hvpa.scale_down.stabilization_mode is StabilizationMode.SINCE_LAST_SCALING
    assert hvpa.scale_up.stabilization_mode is StabilizationMode.SINCE_LAST_SCALING
    both = target_spec(VPA_ONLY + DOWN_WINDOW + "  scaleUp: {stabilizationMode: WindowMax}\n").hvpa
    assert both is not None
    assert both.scale_down.stabilization_mode is StabilizationMode.WINDOW_MAX
    assert both.scale_up.stabilization_mode is StabilizationMode.WINDOW_MAX


def test_an_unknown_mode_is_an_error_naming_its_path_and_the_values() -> None:
    text = (
        "scaleTargetRef: {kind: Deployment, name: x}\nmaxReplicas: 5\nhvpa:\n"
        "  scalingIntervals: [{maxReplicas: 5, maxResources: {cpu: 1, memory: 1Gi}}]\n"
        "  scaleDown: {stabilizationMode: windowMax}\n"
    )
    with pytest.raises(SpecError) as info:
        parse_target_spec(yaml.safe_load(text))
    assert [str(e) for e in info.value.errors] == [
        'spec.hvpa.scaleDown.stabilizationMode: Unsupported value: "windowMax": supported values: '
        '"SinceLastScaling", "WindowMax" (did you mean "WindowMax"?)'
    ]


def test_since_last_scaling_flips_on_a_noisy_load_and_window_max_does_not() -> None:
    noisy = [HIGH, LOW] * 10
    # EP-0001's letter: a 2m stabilization from the last scaling lets every other swing through.
    since = run("  scaleDown: {stabilizationDuration: 2m}\n", noisy)
    assert flips(since) >= 8 and set(since) == {HIGH, LOW}
    # WindowMax: 1575m is always within the last 2m, so the requests never come down.
    assert run(DOWN_WINDOW, noisy) == [HIGH] * 20


def test_window_max_comes_down_once_the_larger_recommendation_leaves_the_window() -> None:
    # 1575m at t=0, then 1425m: held at t=60 (0 is 60s old), still at t=119, down at t=120 (exactly 2m old:
    # out of the window, as the HPA's cutoff).
    assert run(DOWN_WINDOW, [HIGH, LOW, LOW, LOW], step=60) == [HIGH, HIGH, LOW, LOW]
    spec = target_spec(VPA_ONLY + DESIGN + CPU_ONLY + DOWN_WINDOW)
    first = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": HIGH}}), now=0)
    inside = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": LOW}}), state=first.state,
                    now=119.999)  # fmt: skip
    assert not inside.applied and texts(inside.requests) == {"main": {"cpu": HIGH}}
    edge = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": LOW}}), state=first.state,
                  now=120)  # fmt: skip
    assert edge.applied and texts(edge.requests) == {"main": {"cpu": LOW}}


def test_explain_says_what_held_the_requests() -> None:
    spec = target_spec(VPA_ONLY + DESIGN + CPU_ONLY + DOWN_WINDOW)
    first = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": HIGH}}), now=0)
    held = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": LOW}}), state=first.state, now=60)
    assert held.direction is None and held.vpa_patch is None
    assert "requests held at 1575m: the largest recommendation in the last 2m" in " ".join(explain_hvpa(held))


def test_window_max_lowers_to_the_largest_in_the_window_not_to_the_current_request() -> None:
    # Recommendations 1.7, 1.6, then 1.45 with the pods at 1.8: down to 1.7, the largest of the last 2m.
    spec = target_spec(VPA_ONLY + DESIGN + CPU_ONLY + DOWN_WINDOW)
    state = HvpaState()
    for now, recommendation in ((0, "1700m"), (30, "1600m")):
        state = decide(spec, 4, pods(4, {"cpu": "1800m"}), vpa=vpa_status({"main": {"cpu": recommendation}}),
                       state=state, now=now).state  # fmt: skip
    d = decide(spec, 4, pods(4, {"cpu": "1800m"}), vpa=vpa_status({"main": {"cpu": "1450m"}}), state=state, now=60)
    assert d.applied and texts(d.requests) == {"main": {"cpu": "1700m"}}
    assert "requests limited to 1700m: the largest recommendation in the last 2m" in " ".join(explain_hvpa(d))


def test_scale_up_window_max_rises_only_to_the_smallest_in_its_window() -> None:
    up = "  scaleUp: {stabilizationDuration: 1m, stabilizationMode: WindowMax}\n"
    assert run(up, [LOW, HIGH, LOW, HIGH, LOW, HIGH], start=LOW, step=30) == [LOW] * 6
    assert run(up, [LOW, HIGH, HIGH, HIGH], start=LOW, step=30) == [LOW, LOW, HIGH, HIGH]
    assert run("", [LOW, HIGH], start=LOW, step=30) == [LOW, HIGH]  # SinceLastScaling: up at once


def test_window_max_replaces_the_since_last_scaling_gate_for_its_direction() -> None:
    spec = target_spec(VPA_ONLY + DESIGN + CPU_ONLY + DOWN_WINDOW)
    # The last scaling 10s ago, no recommendation in the window above the proposal: down now.
    state = HvpaState(last_applied=990.0)
    d = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": LOW}}), state=state, now=1000)
    assert d.applied and texts(d.requests) == {"main": {"cpu": LOW}}
    since = target_spec(VPA_ONLY + DESIGN + CPU_ONLY + "  scaleDown: {stabilizationDuration: 2m}\n")
    blocked = decide(since, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": LOW}}), state=state, now=1000)
    assert blocked.blocked is BlockReason.STABILIZATION_WINDOW


def test_each_resource_has_its_own_window() -> None:
    spec = target_spec(VPA_ONLY + DESIGN + DOWN_WINDOW + "  containers: [{name: main}]\n")
    start = {"cpu": HIGH, "memory": "6Gi"}
    first = decide(spec, 4, pods(4, start), vpa=vpa_status({"main": {"cpu": "1425m", "memory": "6Gi"}}), now=0)
    assert first.applied and texts(first.requests)["main"]["cpu"] == LOW  # nothing higher in the window
    after = {"cpu": LOW, "memory": "6Gi"}
    d = decide(spec, 4, pods(4, after), vpa=vpa_status({"main": {"cpu": LOW, "memory": "5Gi"}}), state=first.state,
               now=60)  # fmt: skip
    # memory's 6Gi is in its window: held; cpu is not touched by memory's history.
    assert texts(d.requests) == {"main": {"cpu": LOW, "memory": "6Gi"}} and not d.applied
    [memory] = [o for o in d.pairs if o.pair.resource == "memory"]
    [cpu] = [o for o in d.pairs if o.pair.resource == "cpu"]
    assert memory.stabilized is not None and "6Gi" in memory.stabilized and cpu.stabilized is None


def test_recommendations_for_another_replica_count_are_not_compared() -> None:
    spec = target_spec(VPA_ONLY + DESIGN + CPU_ONLY + DOWN_WINDOW)
    first = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": HIGH}}), now=0)
    assert [s.replicas for s in first.state.history] == [4]
    # The same history, read for 3 pods: the 4-pod sample does not hold a 3-pod proposal.
    d = decide(spec, 3, pods(3, {"cpu": "2100m"}), vpa=vpa_status({"main": {"cpu": "1900m"}}),
               state=first.state, now=30)  # fmt: skip
    assert d.applied and texts(d.requests) == {"main": {"cpu": "1900m"}}


def test_the_history_is_bounded_by_the_window() -> None:
    spec = target_spec(VPA_ONLY + DESIGN + CPU_ONLY + DOWN_WINDOW)
    state = HvpaState()
    for now in range(0, 600, 15):
        state = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": HIGH}}), state=state,
                       now=now).state  # fmt: skip
    assert [s.at for s in state.history] == list(range(480, 600, 15))  # younger than 2m
    assert decide(target_spec(VPA_ONLY + DESIGN + CPU_ONLY), 4, pods(4, {"cpu": HIGH}),
                  vpa=vpa_status({"main": {"cpu": HIGH}})).state.history == ()  # fmt: skip


def restarted(decision: HvpaDecision) -> HvpaState:
    """The state a new process (or the next shard owner) reads back from the status document."""
    status = yaml.safe_load(yaml.safe_dump({"hvpa": hvpa_status(decision, decision.state)}))
    return restore(status, 0.0).hvpa


def test_a_restart_in_the_middle_of_a_window_keeps_holding() -> None:
    spec = target_spec(VPA_ONLY + DESIGN + CPU_ONLY + DOWN_WINDOW)
    first = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": HIGH}}), now=1000.25)
    state = restarted(first)
    assert state.history == first.state.history
    held = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": LOW}}), state=state, now=1060)
    assert not held.applied and texts(held.requests) == {"main": {"cpu": HIGH}}
    # Without the restored history (a restart that forgot it) the requests would come down at once.
    forgot = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": LOW}}), now=1060)
    assert forgot.applied
    later = decide(spec, 4, pods(4, {"cpu": HIGH}), vpa=vpa_status({"main": {"cpu": LOW}}),
                   state=restarted(held), now=1120.25)  # fmt: skip
    assert later.applied and texts(later.requests) == {"main": {"cpu": LOW}}


def test_a_malformed_history_entry_is_left_out() -> None:
    document = {
        "pins": {},
        "recommendations": [
            {"time": "2026-01-01T00:00:00Z", "container": "main", "resource": "cpu", "replicas": 4, "request": "1"},
            {"time": "yesterday", "container": "main", "resource": "cpu", "replicas": 4, "request": "1"},
            {"time": "2026-01-01T00:00:00Z", "container": "main", "resource": "cpu", "replicas": 0, "request": "1"},
            {"time": "2026-01-01T00:00:00Z", "container": "main", "resource": "cpu", "replicas": 4, "request": "x"},
            "junk",
        ],
    }
    assert len(restore({"hvpa": {"state": document}}, 0.0).hvpa.history) == 1
