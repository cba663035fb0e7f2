"""The controller settings' one set of rules (``run``'s ``controller``, a scenario's ``settings``)."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.core.settings import ControllerSettings, Tolerances
from autoscaler.core.settings_parse import SCENARIO_SUFFIX, SERVICE_SUFFIX, read_controller_settings
from autoscaler.values.fields import ErrorList, Obj


def read(document: dict[str, Any], suffix: str = SERVICE_SUFFIX) -> ControllerSettings | list[str]:
    errors = ErrorList()
    settings = read_controller_settings(Obj(document, "controller", errors), suffix=suffix)
    return [str(e) for e in errors.items] if errors else settings or []


@pytest.mark.parametrize(
    ("document", "tolerances"),
    [
        ({}, Tolerances(0.1, 0.1)),
        ({"tolerance": None}, Tolerances(0.1, 0.1)),
        ({"tolerance": 0.25}, Tolerances(0.25, 0.25)),
        ({"tolerance": 0}, Tolerances(0.1, 0.1)),  # kube-controller-manager: 0 is unset, so 0.1
        ({"tolerance": 10}, Tolerances(10, 10)),
        ({"tolerance": {"scaleUp": 0}}, Tolerances(scale_down=0.1, scale_up=0)),  # per direction, 0 is 0
        ({"tolerance": {"scaleDown": 0.3}}, Tolerances(scale_down=0.3, scale_up=0.1)),
        ({"tolerance": {}}, Tolerances(0.1, 0.1)),
    ],
)
def test_tolerances(document: dict[str, Any], tolerances: Tolerances) -> None:
    assert read(document) == ControllerSettings(tolerances=tolerances)


def test_the_durations_and_their_names() -> None:
    service = {
        "cpuInitializationPeriodSeconds": 60,
        "initialReadinessDelaySeconds": 0,
        "downscaleStabilizationWindowSeconds": 3600,
    }
    expected = ControllerSettings(
        cpu_initialization_period=60, initial_readiness_delay=0, downscale_stabilization_window=3600
    )
    assert read(service) == expected
    assert read({key.removesuffix("Seconds"): value for key, value in service.items()}, SCENARIO_SUFFIX) == expected
    assert read(service, SCENARIO_SUFFIX) == [  # each file keeps its own names
        'controller.cpuInitializationPeriodSeconds: unknown field (did you mean "cpuInitializationPeriod"?)',
        'controller.initialReadinessDelaySeconds: unknown field (did you mean "initialReadinessDelay"?)',
        'controller.downscaleStabilizationWindowSeconds: unknown field (did you mean "downscaleStabilizationWindow"?)',
    ]


@pytest.mark.parametrize(
    ("document", "problems"),
    [
        ({"tolerance": -1}, ["controller.tolerance: must be between 0 and 10"]),
        ({"tolerance": 10.5}, ["controller.tolerance: must be between 0 and 10"]),
        ({"tolerance": "0.1"}, ["controller.tolerance: must be a number, not string"]),
        (
            {"tolerance": {"scaleUp": 11, "scaleDown": -0.1, "up": 1}},
            [
                "controller.tolerance.scaleUp: must be between 0 and 10",
                "controller.tolerance.scaleDown: must be between 0 and 10",
                "controller.tolerance.up: unknown field",
            ],
        ),
        (
            {"downscaleStabilizationWindowSeconds": 3601},
            ["controller.downscaleStabilizationWindowSeconds: must be between 0 and 3600"],
        ),
        (
            {"cpuInitializationPeriodSeconds": -1, "initialReadinessDelaySeconds": float("inf")},
            [
                "controller.cpuInitializationPeriodSeconds: must be greater than or equal to 0",
                "controller.initialReadinessDelaySeconds: must be a finite number",
            ],
        ),
    ],
)
def test_every_problem_is_reported_with_its_path(document: dict[str, Any], problems: list[str]) -> None:
    assert read(document) == problems
