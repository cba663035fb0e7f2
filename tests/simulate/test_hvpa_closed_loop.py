"""Issue 42's closed loop, replayed: a steady, noisy load (4 replicas, demand 6.3 / 5.7 cores each minute)
flips the per-pod requests with EP-0001's stabilization and does not with ``stabilizationMode: WindowMax``;
and the simulator's ``demand`` step key that drives the loop.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.cli import main
from autoscaler.core.sync_step import StepResult
from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario
from autoscaler.values.fields import SpecError

SCENARIOS = Path(__file__).resolve().parents[2] / "config" / "scenarios"


def replay(name: str) -> list[StepResult]:
    return run_scenario(parse_scenario(yaml.safe_load((SCENARIOS / name).read_text())))


def carried(results: list[StepResult]) -> list[int]:
    """The cpu request (milli) every step's pods carry: what the previous steps applied."""
    values = []
    for result in results:
        [request] = {p.containers[0].requests["cpu"] for p in result.observation.pods}  # all pods alike
        values.append(request)
    return values


def flips(values: list[int]) -> int:
    return sum(1 for before, after in itertools.pairwise(values) if before != after)


def test_since_last_scaling_flips_the_requests_on_a_noisy_load() -> None:
    results = replay("hvpa-noisy-load.yaml")
    assert len(results) == 20 and all(len(r.observation.pods) == 4 for r in results)
    requests = carried(results)
    assert set(requests) == {1425, 1575}
    assert flips(requests) == 10  # down, and back up a minute later, each time the 2m count has passed
    assert all(r.decision.replicas == 4 for r in results)  # the count never moves: the overlap holds it


def test_window_max_keeps_the_requests_still() -> None:
    results = replay("hvpa-noisy-load-window-max.yaml")
    assert carried(results) == [1575] * 20
    assert all(r.decision.replicas == 4 and r.hvpa is not None and r.hvpa.vpa_patch is None for r in results)


def test_the_table_and_explain_show_the_hold(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(SCENARIOS / "hvpa-noisy-load-window-max.yaml"), "--explain"]) == 0
    out = capsys.readouterr().out
    assert "main/cpu 1575m → 1575m (vertical; requests held at 1575m: the largest recommendation in the last 2m)" in out
    assert "1425m" not in out.replace("4 × 1425m", "")  # the recommendation, never a request
    assert main(["simulate", str(SCENARIOS / "hvpa-noisy-load.yaml")]) == 0
    assert "main 1425m        resize (down)" in capsys.readouterr().out


SPEC: dict[str, Any] = {
    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"},
    "maxReplicas": 5,
    "hvpa": {"sources": ["vpa"], "scalingIntervals": [{"maxReplicas": 5, "maxResources": {"cpu": 4, "memory": "8Gi"}}]},
}
POD = {"name": "p0", "containers": [{"name": "main", "requests": {"cpu": "1", "memory": "1Gi"}}]}


def test_demand_is_validated_with_paths() -> None:
    vpa = {"recommendation": {"containerRecommendations": [{"containerName": "main", "target": {"cpu": "1"}}]}}
    document = {
        "spec": SPEC,
        "steps": [
            {"at": 0, "replicas": 1, "pods": [POD], "demand": {"main": {"cpu": "1"}}, "vpa": vpa},
            {"at": 60, "demand": {"main": {"cpu": "lots", "gpu": 1}}},
        ],
    }
    with pytest.raises(SpecError) as info:
        parse_scenario(document)
    errors = [str(e) for e in info.value.errors]
    assert "steps[0].demand: Forbidden: a step gives either vpa or demand (the VPA recommends demand / replicas)" in (
        errors
    )
    assert any(e.startswith("steps[1].demand.main.cpu:") for e in errors), errors
    assert any(e.startswith("steps[1].demand.main.gpu:") for e in errors), errors


def test_demand_spreads_over_the_replicas_and_the_pods_follow_the_decision() -> None:
    steps = [
        {"at": 0, "replicas": 2, "pods": [POD, {**POD, "name": "p1"}], "demand": {"main": {"cpu": 3}}},
        {"at": 60, "demand": {"main": {"cpu": 3}}},
    ]
    results = run_scenario(parse_scenario({"spec": SPEC, "steps": steps}))
    first = results[0].hvpa
    assert first is not None and first.applied
    assert first.pairs[0].totals.vpa_per_pod == 1.5  # 3 cores over 2 pods
    assert [c.requests for p in results[1].observation.pods for c in p.containers] == [
        {"cpu": 1500, "memory": 2**30 * 1000}
    ] * 2


def test_a_step_up_settles_at_the_total_not_a_product() -> None:
    # Gardener's multiplicative-interaction example: 1 pod of 1 core, then a steady 5 cores. The total is decided
    # once and split over the pods (d × P = T, plus the base each new pod gets back, A13), so it settles at
    # 3 × 1733m, not at 3 × 3 cores.
    document = yaml.safe_load((SCENARIOS / "hvpa-noisy-load.yaml").read_text())
    pod = {"name": "p0", "containers": [{"name": "main", "requests": {"cpu": "1"}}]}
    document["steps"] = [{"at": 0, "replicas": 1, "pods": [pod], "demand": {"main": {"cpu": 1}}}] + [
        {"at": 60 * minute, "demand": {"main": {"cpu": 5}}} for minute in range(1, 12)
    ]
    results = run_scenario(parse_scenario(document))
    settled = [[p.containers[0].requests["cpu"] for p in r.observation.pods] for r in results[2:]]
    assert settled == [[1733] * 3] * 10
