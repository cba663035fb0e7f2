"""The HVPA scenarios shipped in config/scenarios/ (HVPA-EP-0001's examples), with their exact numbers, and the
simulator's HVPA output and step keys.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.cli import main
from autoscaler.simulate.output import render_table, step_json
from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario
from autoscaler.values.fields import SpecError

SCENARIOS = Path(__file__).resolve().parents[2] / "config" / "scenarios"


def steps_of(name: str) -> list[dict[str, Any]]:
    scenario = parse_scenario(yaml.safe_load((SCENARIOS / name).read_text()))
    return [step_json(result) for result in run_scenario(scenario)]


def column(steps: list[dict[str, Any]], *keys: str) -> list[Any]:
    values = []
    for step in steps:
        value: Any = step
        for key in keys:
            value = value[key]
        values.append(value)
    return values


def test_five_interval_kube_apiserver_example() -> None:
    steps = steps_of("hvpa-kube-apiserver-intervals.yaml")
    assert column(steps, "replicas") == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5]
    assert [s["hvpa"]["requests"]["main"] for s in steps] == [
        {"cpu": "250m", "memory": "1Gi"},  # nothing to change
        {"cpu": "500m", "memory": "2Gi"},  # = MAX(1): the pod grows
        {"cpu": "500m", "memory": "2Gi"},  # 750m → 2 pods, not shrunk to 375m (A15)
        {"cpu": "1", "memory": "4Gi"},
        {"cpu": "1", "memory": "4Gi"},
        {"cpu": "2", "memory": "8Gi"},
        {"cpu": "2250m", "memory": "9Gi"},  # 9 → 4 × 2.25
        {"cpu": "4", "memory": "16Gi"},
        {"cpu": "4", "memory": "16Gi"},
        {"cpu": "8", "memory": "32Gi"},
        {"cpu": "10", "memory": "40Gi"},  # beyond the last interval (A9)
    ]
    assert all(s["hvpa"]["blocked"] is None for s in steps)
    assert column(steps, "scaled") == [False, False, True, False, True, False, True, False, True, False, False]


def test_overlap_30_percent_thresholds() -> None:
    steps = steps_of("hvpa-overlap-30-percent.yaml")
    # Pairs of probes: on MIN(r) (stays r), just below it (r − 1); r = 1 has nothing below.
    assert column(steps, "currentReplicas") == [5, 5, 4, 4, 3, 3, 2, 2, 1]
    assert column(steps, "replicas") == [5, 4, 4, 3, 3, 2, 2, 1, 1]
    assert [s["hvpa"]["desiredByPair"] for s in steps] == [
        {"main/cpu": r, "main/memory": r} for r in (5, 4, 4, 3, 3, 2, 2, 1, 1)
    ]
    requests = [s["hvpa"]["requests"]["main"] for s in steps]
    assert requests[0] == {"cpu": "2240m", "memory": "9620726744"}  # 11.2 / 5 and 44.8Gi / 5, rounded up
    assert requests[2] == {"cpu": "1050m", "memory": "4509715661"}  # 4.2 / 4 and 16.8Gi / 4
    assert requests[6] == {"cpu": "175m", "memory": "751619277"}  # 0.35 / 2 and 1.4Gi / 2 = 0.7Gi
    assert requests[8] == {"cpu": "125m", "memory": "512Mi"}  # minAllowed
    assert not any(s["hvpa"]["scaleInPostponed"] for s in steps)


def test_multiple_resources_conflict() -> None:
    (step,) = steps_of("hvpa-multiple-resources.yaml")
    assert step["hvpa"] == {
        "desiredReplicas": 4,
        "desiredByPair": {"main/cpu": 3, "main/memory": 4},
        "scaleInPostponed": False,
        "blocked": None,
        "requests": {"main": {"cpu": "1", "memory": "6656Mi"}},
        "limits": {"main": {}},
        "vpaPatch": {
            "spec": {
                "resourcePolicy": {
                    "containerPolicies": [
                        {
                            "containerName": "main",
                            "minAllowed": {"cpu": "1", "memory": "6656Mi"},
                            "maxAllowed": {"cpu": "1", "memory": "6656Mi"},
                        }
                    ]
                }
            }
        },
    }
    assert (step["currentReplicas"], step["replicas"], step["scaled"]) == (2, 4, True)
    assert step["rescaleReason"] == "HVPA: the total of main/memory needs 4 replicas"


def test_full_rise_and_fall_round() -> None:
    steps = steps_of("hvpa-rise-and-fall.yaml")
    assert column(steps, "at") == [
        0,
        60,
        120,
        180,
        240,
        300,
        360,
        420,
        480,
        540,
        600,
        630,
        720,
        840,
        960,
        1080,
        1200,
        1320,
        1440,
        1560,
        1680,
        1800,
        1920,
        2040,
    ]
    assert column(steps, "replicas") == [1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5, 5, 4, 4, 3, 3, 2, 2, 2, 1]
    assert [s["hvpa"]["requests"]["main"]["cpu"] for s in steps] == [
        "300m",
        "340m",
        "500m",
        "625m",
        "1",
        "1365m",
        "2",
        "2547m",
        "4",
        "4",
        "8",
        "6",
        "6",
        "3200m",
        "2400m",
        "2400m",
        "2205m",
        "1500m",
        "1295m",
        "667m",
        "575m",
        "250m",
        "150m",
        "100m",
    ]
    blocked = {s["at"]: s["hvpa"]["blocked"] for s in steps if s["hvpa"]["blocked"]}
    assert blocked == {60: "MinChange", 630: "StabilizationWindow", 1080: "ParadoxicalScaling"}
    held = steps[15]["hvpa"]
    assert held["scaleInPostponed"] and held["desiredByPair"] == {"main/cpu": 4, "main/memory": 4}
    assert held["desiredReplicas"] == 5 and held["vpaPatch"] is None
    # The overlap keeps 2 replicas at 300m (≥ MIN(2) = 250m) and lets go at 100m.
    assert steps[22]["hvpa"]["desiredByPair"] == {"main/cpu": 2, "main/memory": 2}
    # A patch whenever a pod's request changes, none when only the count does (t=540) or nothing applies.
    patched = [s["at"] for s in steps if s["hvpa"]["vpaPatch"] is not None]
    assert patched == [
        120,
        180,
        240,
        300,
        360,
        420,
        480,
        600,
        720,
        840,
        960,
        1200,
        1320,
        1440,
        1560,
        1680,
        1800,
        1920,
        2040,
    ]


def test_hvpa_with_the_hpa_source() -> None:
    steps = steps_of("hvpa-with-hpa.yaml")
    assert [s["metrics"][0]["proposedReplicas"] for s in steps] == [3, 6, 2, 2]
    assert column(steps, "replicas") == [3, 3, 3, 3]
    assert [s["hvpa"]["requests"]["main"]["cpu"] for s in steps] == ["1", "1700m", "1700m", "1134m"]
    assert column(steps, "limitedBy") == [None, "ScaleUpLimit", "ScaleDownStabilized", None]
    assert "HVPA: the HPA source proposes 4 replicas." in steps[1]["explanation"]


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.glob("hvpa-*.yaml")))
def test_hvpa_output_has_exactly_the_documented_keys(name: str) -> None:
    for step in steps_of(name):
        assert set(step["hvpa"]) == {
            "desiredReplicas",
            "desiredByPair",
            "scaleInPostponed",
            "blocked",
            "requests",
            "limits",
            "vpaPatch",
        }
        json.dumps(step)


def test_scenarios_without_hvpa_have_no_hvpa_output() -> None:
    assert all("hvpa" not in s for s in steps_of("quickstart.yaml"))


def test_table_shows_requests_and_block_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(SCENARIOS / "hvpa-rise-and-fall.yaml")]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    assert "requests per pod" in header and "blocked / why" in header
    assert "main 625m/≈2591Mi" in out and "ParadoxicalScaling" in out and "StabilizationWindow" in out
    # memory in units throughout: no raw byte counts beside 2Gi (2717028189 bytes is ≈2591Mi)
    assert not re.search(r"/\d{6,}\b", out), out


def test_explain_shows_the_hvpa_working(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(SCENARIOS / "hvpa-multiple-resources.yaml"), "--explain"]) == 0
    out = capsys.readouterr().out
    assert "HVPA main/cpu: request 1 per pod (pods); total 4 (vpa 2 × 2 = 4): above MAX(2) = 2 → 3" in out
    assert (
        "HVPA main/memory: request 4Gi per pod (pods); total 26Gi (vpa 2 × 13Gi = 26Gi): above MAX(2) = 8Gi → 4" in out
    )


# --- the per-step keys -------------------------------------------------------------------------------------------

HVPA_SPEC = {
    "scaleTargetRef": {"kind": "Deployment", "name": "api"},
    "maxReplicas": 5,
    "hvpa": {
        "scalingIntervals": [{"maxResources": {"cpu": "1", "memory": "1Gi"}}],
        "scaleUp": {"updatePolicy": {"updateMode": "MaintenanceWindow"}},
        "maintenanceTimeWindow": {"begin": "220000+0000", "end": "040000+0000"},
    },
}
POD = {"name": "a", "containers": [{"name": "main", "requests": {"cpu": "500m", "memory": "512Mi"}}]}


def scenario_errors(document: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_scenario(document)
    return [str(e) for e in info.value.errors]


def test_step_keys_are_validated_with_paths() -> None:
    errors = scenario_errors(
        {
            "spec": HVPA_SPEC,
            "steps": [
                {"at": 0, "replicas": 1, "pods": [POD], "clock": "2024-05-01T22:00:00Z"},
                {"at": 60, "lastScaleTime": 30, "clock": "2024-05-01 23:00"},
                {
                    "at": 120,
                    "vpa": {
                        "recommendation": {
                            "containerRecommendations": [{"containerName": "main", "target": {"cpu": "1.5x"}}]
                        },
                        "conditons": [],
                    },
                },
            ],
        }
    )
    assert errors == [
        "steps[1].lastScaleTime: must be less than or equal to 0",
        'steps[1].clock: must be an RFC 3339 time such as "2024-05-01T22:30:00Z", not "2024-05-01 23:00"',
        "steps[2].vpa.recommendation.containerRecommendations[0].target.cpu: invalid quantity '1.5x': expected a "
        "number with an optional suffix, such as 500m, 1.5Gi, 2e3 or 100k (quantities must match "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$')",
        'steps[2].vpa.conditons: unknown field (did you mean "conditions"?)',
    ]


def test_maintenance_windows_need_a_clock() -> None:
    errors = scenario_errors({"spec": HVPA_SPEC, "steps": [{"at": 0, "replicas": 1, "pods": [POD]}]})
    assert errors == [
        "steps[0].clock: Required value: updateMode MaintenanceWindow needs the time of day; give the "
        "first step a clock (later steps follow it)"
    ]


def test_step_keys_need_an_hvpa_spec() -> None:
    plain = {"scaleTargetRef": {"kind": "Deployment", "name": "api"}, "maxReplicas": 5}
    errors = scenario_errors({"spec": plain, "steps": [{"at": 0, "replicas": 1, "vpa": {}, "clock": "x"}]})
    assert errors == [
        "steps[0].vpa: Forbidden: only read when the spec has an hvpa section",
        "steps[0].clock: Forbidden: only read when the spec has an hvpa section",
    ]


def test_the_clock_runs_on_and_last_scale_time_is_relative() -> None:
    scenario = parse_scenario(
        {
            "spec": HVPA_SPEC,
            "steps": [
                {"at": 0, "replicas": 1, "pods": [POD], "clock": "2024-05-01T21:59:00Z"},
                {"at": 90, "pods": [POD], "lastScaleTime": -30},
            ],
        }
    )
    first, second = (step.hvpa for step in scenario.steps)
    assert first is not None and second is not None
    assert second.clock is not None and first.clock is not None and second.clock - first.clock == 90
    assert second.last_scale_time == 60


def test_the_clock_drives_the_maintenance_window() -> None:
    rec = {
        "recommendation": {
            "containerRecommendations": [{"containerName": "main", "target": {"cpu": "900m", "memory": "512Mi"}}]
        },
        "conditions": [{"type": "RecommendationProvided", "status": "True"}],
    }
    spec = {**HVPA_SPEC, "hvpa": {**HVPA_SPEC["hvpa"], "sources": ["vpa"]}}
    results = run_scenario(
        parse_scenario(
            {
                "spec": spec,
                "steps": [
                    {"at": 0, "replicas": 1, "pods": [POD], "vpa": rec, "clock": "2024-05-01T21:59:00Z"},
                    {"at": 60, "pods": [POD], "vpa": rec},
                ],
            }
        )
    )
    assert [r.hvpa.blocked.value if r.hvpa and r.hvpa.blocked else None for r in results] == ["MaintenanceWindow", None]
    assert "requests per pod" in render_table(results)


def test_spec_warnings_go_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    interval = {"maxReplicas": 9, "maxResources": {"cpu": "1", "memory": "1Gi"}}
    spec = {**HVPA_SPEC, "hvpa": {"scalingIntervals": [interval], "sources": ["vpa"]}}
    path = tmp_path / "warn.yaml"
    path.write_text(yaml.safe_dump({"spec": spec, "steps": [{"at": 0, "replicas": 1, "pods": [POD]}]}))
    assert main(["simulate", str(path), "-o", "json"]) == 0
    captured = capsys.readouterr()
    assert (
        "warning: spec.hvpa.scalingIntervals[0].maxReplicas: counts above the target's maxReplicas (5)" in captured.err
    )
    assert json.loads(captured.out)["hvpa"]["blocked"] is None
