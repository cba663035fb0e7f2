"""Converted ScaledObjects replayed through ``simulate``: each converted target, given a metric curve, decides
the replica counts KEDA would have. The expected sequences are derived by hand from KEDA's rules
(``pkg/scaling/executor/scale_scaledobjects.go``: 0 -> max(minReplicaCount, 1) when a trigger is active,
idle after ``cooldownPeriod`` without one; ``pkg/fallback/fallback.go``: fallback replicas once a trigger
failed more than ``failureThreshold`` times; the composite metric of ``scalingModifiers``) and from the HPA
KEDA drives between them (without a behavior: up to max(2 x current, 4) a sync, down after the controller's
300 s stabilization window)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario
from tests.convert.keda_helpers import queue_worker, run, spec_of


def replay(spec: dict[str, Any], steps: list[dict[str, Any]]) -> list[int]:
    """The replica count after each step of a scenario made of the converted spec and ``steps``."""
    scenario = parse_scenario({"spec": spec, "steps": steps})
    return [result.decision.replicas for result in run_scenario(scenario)]


def queue(at: int, value: str | None, name: str = "queue", **step: Any) -> dict[str, Any]:
    """A sync at ``at`` where the queue reads ``value`` (None: the query fails)."""
    if value is None:
        return {"at": at, "failures": [name], **step}
    return {"at": at, "external": {name: [value]}, **step}


def test_the_queue_worker_keda_left_at_zero_wakes_and_goes_back_to_zero(tmp_path: Path) -> None:
    """Issue 36's stranded worker: KEDA had it at 0; the queue rises to 200 (8 replicas at 25 a replica)."""
    spec = spec_of(run(queue_worker())[0], tmp_path)  # minReplicaCount 0 (KEDA's default), cooldown 300 s
    steps = [queue(0, "0", replicas=0), queue(30, "200"), queue(60, "200"), queue(90, "200")]
    steps += [queue(at, "0") for at in range(120, 451, 30)]
    assert replay(spec, steps) == [
        0,  # inactive at 0: stays
        1,  # active at 0: KEDA scales to max(minReplicaCount, 1)
        4,  # the HPA: 200 / 25 = 8, limited to max(2 x 1, 4)
        8,
        *[8] * 10,  # t=120..390: inactive but cooling down (active last at 90); the HPA's 300 s window holds 8
        0,  # t=420: past 90 + 300: cooled down, idle
        0,
    ]


def test_idle_replicas_activation_threshold_and_initial_cooldown(tmp_path: Path) -> None:
    document = queue_worker(minReplicaCount=3, idleReplicaCount=1, cooldownPeriod=60, initialCooldownPeriod=120)
    document["spec"]["triggers"][0]["metadata"].update({"threshold": "10", "activationThreshold": "5"})
    spec = spec_of(run(document)[0], tmp_path)
    steps = [
        queue(0, "5", replicas=3),  # exactly at the activation threshold: not active
        queue(30, "5"),
        queue(150, "5"),
        queue(180, "6"),
        queue(210, "60"),
        queue(240, "0"),
        queue(300, "0"),
    ]
    assert replay(spec, steps) == [
        3,  # inactive, but within initialCooldownPeriod of the target's creation (never active yet)
        3,
        1,  # t=150: past the initial cooldown: idleReplicaCount
        3,  # 6 > 5: active below minReplicaCount: back to minReplicaCount
        6,  # the HPA: 60 / 10
        6,  # inactive, cooling down (active last at 210, cooldown 60 s)
        1,  # t=300 > 270: idle
    ]


def test_fallback_after_failure_threshold_until_a_metric_answers(tmp_path: Path) -> None:
    document = queue_worker(minReplicaCount=2, fallback={"failureThreshold": 2, "replicas": 6})
    document["spec"]["triggers"][0]["metadata"]["threshold"] = "10"
    spec = spec_of(run(document)[0], tmp_path)
    steps = [queue(0, "40", replicas=2), queue(15, None), queue(30, None), queue(45, None), queue(60, None)]
    steps += [queue(75, "30")]
    assert replay(spec, steps) == [
        4,  # 40 / 10
        4,  # 1 failure: a failed metric does not vote
        4,  # 2 failures: not more than failureThreshold
        6,  # 3 failures: fallback replicas
        6,
        6,  # it answers (3): fallback ends, but the HPA's scale-down window still holds the 6
    ]


def test_fallback_current_replicas_if_higher_keeps_a_larger_count(tmp_path: Path) -> None:
    document = queue_worker(
        minReplicaCount=1, fallback={"failureThreshold": 0, "replicas": 2, "behavior": "currentReplicasIfHigher"}
    )
    spec = spec_of(run(document)[0], tmp_path)
    assert replay(spec, [queue(0, "100", replicas=4), queue(15, None), queue(30, None)]) == [4, 4, 4]


def test_the_composite_metric_of_scaling_modifiers(tmp_path: Path) -> None:
    document = queue_worker(minReplicaCount=1)
    first = document["spec"]["triggers"][0]
    second = {**first, "name": "retries", "metadata": {**first["metadata"], "query": "sum(retries)"}}
    document["spec"]["triggers"].append(second)
    document["spec"]["advanced"] = {"scalingModifiers": {"formula": "(queue + retries) / 2", "target": "10"}}
    spec = spec_of(run(document)[0], tmp_path)

    def both(at: int, a: str, b: str, **step: Any) -> dict[str, Any]:
        return {"at": at, "external": {"queue": [a], "retries": [b]}, **step}

    # (30 + 10) / 2 = 20 -> 2; (100 + 60) / 2 = 80 -> 8, limited to max(2 x 2, 4) = 4; then 8
    assert replay(spec, [both(0, "30", "10", replicas=1), both(15, "100", "60"), both(30, "100", "60")]) == [2, 4, 8]


def test_paused_replicas_then_resumed(tmp_path: Path) -> None:
    """KEDA's paused-replicas: scaled to that count and held whatever the metric says; removed, the HPA resumes."""
    document = queue_worker(minReplicaCount=1)
    document["metadata"]["annotations"] = {"autoscaling.keda.sh/paused-replicas": "3"}
    conversion, _ = run(document)
    spec = spec_of(conversion, tmp_path)
    assert conversion.target is not None
    paused = conversion.target["metadata"]["annotations"]  # the target's own, as it is applied
    steps = [queue(0, "200", replicas=1, annotations=paused), queue(15, "200"), queue(30, "200", annotations={})]
    steps += [queue(45, "200")]
    assert replay(spec, steps) == [
        3,  # paused at 3: scaled to it
        3,  # held, though 200 / 25 asks for 8
        6,  # resumed: the HPA, limited to max(2 x 3, 4)
        8,
    ]


def test_paused_scale_in_holds_the_count_and_keeps_it_from_idling(tmp_path: Path) -> None:
    """KEDA's paused-scale-in: the HPA scales out but not in, and KEDA does not scale to idle."""
    document = queue_worker(cooldownPeriod=0)
    document["metadata"]["annotations"] = {"autoscaling.keda.sh/paused-scale-in": "true"}
    conversion, _ = run(document)
    spec = spec_of(conversion, tmp_path)
    assert conversion.target is not None
    paused = conversion.target["metadata"]["annotations"]
    steps = [queue(0, "100", replicas=2, annotations=paused), queue(15, "0"), queue(400, "0"), queue(415, "50")]
    assert replay(spec, steps) == [
        4,  # 100 / 25: scaling out is not paused
        4,  # inactive, cooled down at once (cooldownPeriod 0): scaling in to idle is paused
        4,  # past the HPA's window too: still no scale-in
        4,  # 50 / 25 = 2: a scale-in, held
    ]


def test_fallback_does_not_wake_an_idle_workload(tmp_path: Path) -> None:
    """At 0 KEDA's HPA is disabled, so a failing trigger's fallback never applies there; running, it does."""
    spec = spec_of(run(queue_worker(fallback={"failureThreshold": 1, "replicas": 3}))[0], tmp_path)
    failing = [queue(at, None) for at in (15, 30, 45)]
    assert replay(spec, [queue(0, "0", replicas=0), *failing]) == [0, 0, 0, 0]
    assert replay(spec, [queue(0, "50", replicas=2), *failing]) == [2, 2, 3, 3]  # more than 1 failure: 3
