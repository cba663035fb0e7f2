"""Declarative decision cases: upstream's HPA unit tests ported to the scenario format, and our own.

Each file under tests/cases/<source>/ holds a scenario and, per step, what its JSON output must contain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.simulate.output import step_json
from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario
from tests.simulate.matching import mismatches

CASES = Path(__file__).resolve().parents[1] / "cases"
FILES = sorted(CASES.glob("*/**/*.yaml"))


def test_there_are_cases() -> None:
    assert len([f for f in FILES if "upstream" in f.parts]) >= 200


@pytest.mark.parametrize("path", FILES, ids=[str(f.relative_to(CASES)) for f in FILES])
def test_case(path: Path) -> None:
    case: dict[str, Any] = yaml.safe_load(path.read_text())
    results = run_scenario(parse_scenario(case["scenario"]))
    expected = case["expect"]
    assert len(expected) == len(results), "one expectation per step"
    problems: list[str] = []
    for index, (want, result) in enumerate(zip(expected, results, strict=True)):
        got = step_json(result)
        problems.extend(f"step {index} (at {got['at']}){p}" for p in mismatches(want, got))
    assert not problems, f"{case.get('upstream', path.name)}\n" + "\n".join(problems)
