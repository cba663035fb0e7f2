"""The subset matcher of tests/cases (see tests/cases/README.md)."""

from __future__ import annotations

from typing import Any


def mismatches(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Every place where ``actual`` does not match ``expected``, as readable lines."""
    if isinstance(expected, dict) and set(expected) == {"$contains"}:
        if isinstance(actual, str) and expected["$contains"] in actual:
            return []
        return [f"{path}: expected a string containing {expected['$contains']!r}, got {actual!r}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r}"]
        problems: list[str] = []
        for key, value in expected.items():
            if key not in actual:
                problems.append(f"{path}.{key}: missing (expected {value!r})")
            else:
                problems.extend(mismatches(value, actual[key], f"{path}.{key}"))
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {len(expected)} items {expected!r}, got {actual!r}"]
        problems = []
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            problems.extend(mismatches(e, a, f"{path}[{index}]"))
        return problems
    if isinstance(expected, bool) or isinstance(actual, bool):
        return [] if expected is actual else [f"{path}: expected {expected!r}, got {actual!r}"]
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]
    return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]
