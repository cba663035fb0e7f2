"""KEP-853's user stories and the HPA documentation's policy example, with their exact replica sequences.

The scenarios live in config/scenarios/ (shipped as examples); these tests pin what they must show.
"""

from pathlib import Path

import pytest
import yaml

from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "config" / "scenarios"


def replicas_of(name: str) -> list[int]:
    scenario = parse_scenario(yaml.safe_load((SCENARIOS / name).read_text()))
    return [r.decision.replicas for r in run_scenario(scenario)]


def test_story1_scale_up_as_fast_as_possible() -> None:
    assert replicas_of("kep853-story1-scale-up-fast.yaml") == [10, 100, 1000, 1000]


def test_story2_scale_down_one_pod_per_ten_minutes() -> None:
    got = replicas_of("kep853-story2-scale-down-gradually.yaml")
    # t:      0   60   120   180   780   840   960  1079  1080  1380  1679  1680
    assert got == [10, 100, 1000, 1000, 1000, 1000, 1000, 1000, 999, 999, 999, 998]


def test_story3_scale_up_very_gradually() -> None:
    assert replicas_of("kep853-story3-scale-up-gradually.yaml") == [2, 2, 3, 4, 5]


def test_story4_never_scale_down() -> None:
    assert replicas_of("kep853-story4-no-scale-down.yaml") == [6, 8, 8, 8, 8]


def test_story5_stabilization_before_scaling_down() -> None:
    # recommendations [10, 9, 8, 9, 9, 8, 9, 8, 9, 8] -> still 10; then 7 arrives and the 10 leaves: 9
    assert replicas_of("kep853-story5-stabilize-scale-down.yaml") == [10] * 10 + [9]


def test_story6_avoid_false_positive_scale_up() -> None:
    # recommendations [2, 3, 19, 10, 3, 4] -> still 2; then 7 arrives and the 2 leaves: 3
    assert replicas_of("kep853-story6-avoid-false-scale-up.yaml") == [2, 2, 2, 2, 2, 2, 3]


def test_hpa_docs_80_replicas_with_pods_4_and_percent_10() -> None:
    assert replicas_of("hpa-docs-scale-down-policies.yaml") == [
        72,
        72,
        64,
        57,
        51,
        45,
        40,
        36,
        32,
        28,
        24,
        20,
        16,
        12,
        10,
    ]


def test_quickstart_tells_its_story() -> None:
    assert replicas_of("quickstart.yaml") == [3, 5, 5, 7, 7, 7, 7, 7, 3]


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_scenario_is_valid_and_runs(path: Path) -> None:
    results = run_scenario(parse_scenario(yaml.safe_load(path.read_text())))
    assert results
