"""The hvpa section's parser and the scenario's HVPA keys never fail with anything but a validation error
(hypothesis: any value put anywhere in a valid document).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.simulate.scenario import parse_scenario
from autoscaler.values.fields import SpecError
from tests.core.test_properties import _mutate, _paths, json_values

VALID_HVPA: dict[str, Any] = {
    "scaleTargetRef": {"kind": "Deployment", "name": "api"},
    "maxReplicas": 5,
    "hvpa": {
        "scalingIntervals": [
            {"maxReplicas": 2, "maxResources": {"cpu": "1", "memory": "2Gi"}},
            {
                "maxReplicas": 5,
                "maxResources": {"cpu": "4", "memory": "8Gi"},
                "effectiveIntervalExtrapolation": "linear",
            },
        ],
        "scalingIntervalsOverlap": {"cpu": {"value": "250m", "percentage": 30}},
        "baseResourcesPerReplica": {"memory": {"value": "200M"}},
        "limitsRequestsGapScaleParams": {"cpu": {"percentage": 20}},
        "scaleUp": {
            "updatePolicy": {"updateMode": "MaintenanceWindow"},
            "minChange": {"cpu": {"value": "100m"}},
            "stabilizationDuration": "3m",
        },
        "maintenanceTimeWindow": {"begin": "220000+0100", "end": "040000+0100"},
        "vpa": "api",
        "containers": [{"name": "main", "minAllowed": {"cpu": "100m"}, "mode": "Auto"}],
        "sources": ["hpa", "vpa"],
    },
}


HVPA_PATHS = [p for p in _paths(VALID_HVPA, []) if p[:1] == ["hvpa"]]


@settings(max_examples=400, deadline=None)
@given(path=st.sampled_from(HVPA_PATHS), replacement=json_values)
def test_the_hvpa_parser_only_raises_validation_errors(path: list[Any], replacement: Any) -> None:
    try:
        parse_target_spec(_mutate(VALID_HVPA, path, replacement))
    except SpecError as exc:
        assert all(e.path.startswith("spec") for e in exc.errors)


VALID_STEPS: dict[str, Any] = {
    "spec": VALID_HVPA,
    "steps": [
        {
            "at": 0,
            "replicas": 2,
            "clock": "2024-05-01T22:30:00Z",
            "lastScaleTime": -60,
            "vpa": {
                "recommendation": {
                    "containerRecommendations": [
                        {"containerName": "main", "target": {"cpu": "1"}, "uncappedTarget": {"cpu": "2"}}
                    ]
                },
                "conditions": [{"type": "RecommendationProvided", "status": "True"}],
            },
        }
    ],
}


STEP_PATHS = [p for p in _paths(VALID_STEPS, []) if p[:1] == ["steps"]]


@settings(max_examples=400, deadline=None)
@given(path=st.sampled_from(STEP_PATHS), replacement=json_values)
def test_the_scenario_hvpa_keys_only_raise_validation_errors(path: list[Any], replacement: Any) -> None:
    try:
        parse_scenario(_mutate(VALID_STEPS, path, replacement))
    except SpecError as exc:
        assert exc.errors
