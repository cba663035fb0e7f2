"""``run``, ``backtest`` and ``simulate`` read the same controller settings the same way.

The service's settings file says ``controller: {tolerance: 0, downscaleStabilizationWindowSeconds: 60}``,
a scenario ``settings: {tolerance: 0, downscaleStabilizationWindow: 60}``: each command reads its file
as it does when it runs, and all three must end with the same settings, or the same problems.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.cli import build_parser
from autoscaler.cli.backtest import read_settings
from autoscaler.cli.run import read_run_inputs
from autoscaler.cli.simulate import read_scenario
from autoscaler.core.settings import ControllerSettings, Tolerances
from autoscaler.values.fields import SpecError

SCENARIO = {
    "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5},
    "steps": [{"at": 0, "replicas": 1}],
}

VALID = [
    ({}, ControllerSettings()),
    ({"tolerance": 0}, ControllerSettings()),  # kube-controller-manager's: 0 is the default
    ({"tolerance": 0.3}, ControllerSettings(Tolerances(0.3, 0.3))),
    ({"tolerance": {"scaleUp": 0}}, ControllerSettings(Tolerances(scale_down=0.1, scale_up=0))),
    ({"tolerance": {"scaleDown": 0.5, "scaleUp": 0.02}}, ControllerSettings(Tolerances(0.5, 0.02))),
    (
        {
            "cpuInitializationPeriodSeconds": 60,
            "initialReadinessDelaySeconds": 0,
            "downscaleStabilizationWindowSeconds": 3600,
        },
        ControllerSettings(Tolerances(), 60, 0, 3600),
    ),
]
INVALID = [
    {"tolerance": -1},
    {"tolerance": 11},
    {"tolerance": {"scaleUp": 20, "scaledown": 0.1}},
    {"downscaleStabilizationWindowSeconds": 3601},
    {"cpuInitializationPeriodSeconds": -1, "initialReadinessDelaySeconds": "30s"},
]


@pytest.fixture(autouse=True)
def no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("AUTOSCALER_")]:
        monkeypatch.delenv(name)


def write(path: Path, document: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return str(path)


def read_by_each_command(directory: Path, controller: dict[str, Any]) -> dict[str, ControllerSettings | list[str]]:
    """What each command makes of ``controller`` (as the service's file writes it): its settings, or its
    problems with the section's own name and the ``Seconds`` of the service's keys taken out."""
    config = write(directory / "settings.yaml", {"prometheus": {"url": "http://127.0.0.1:9"}, "controller": controller})
    scenario = write(
        directory / "scenario.yaml",
        {**SCENARIO, "settings": {key.removesuffix("Seconds"): value for key, value in controller.items()}},
    )
    backtest_args: argparse.Namespace = build_parser().parse_args(
        ["backtest", "target.yaml", "--config", config, "--from", "-1h"]
    )
    readers = {
        "run": lambda: read_run_inputs(config, {})[0].controller,
        "backtest": lambda: read_settings(backtest_args).controller,
        "simulate": lambda: read_scenario(scenario).settings,
    }
    results: dict[str, ControllerSettings | list[str]] = {}
    for command, reader in readers.items():
        try:
            results[command] = reader()
        except SpecError as exc:
            results[command] = [str(e).split(".", 1)[1].replace("Seconds", "") for e in exc.errors]
    return results


@pytest.mark.parametrize(("controller", "expected"), VALID)
def test_the_same_settings(tmp_path: Path, controller: dict[str, Any], expected: ControllerSettings) -> None:
    assert read_by_each_command(tmp_path, controller) == {"run": expected, "backtest": expected, "simulate": expected}


@pytest.mark.parametrize("controller", INVALID)
def test_the_same_problems(tmp_path: Path, controller: dict[str, Any]) -> None:
    results = read_by_each_command(tmp_path, controller)
    assert isinstance(results["run"], list) and results["run"]
    assert results["backtest"] == results["run"] and results["simulate"] == results["run"]
