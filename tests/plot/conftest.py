"""Plot tests need the plot extra: skipped locally without it, failing in CI (tests/guard.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.guard import Guard

_guard = Guard({"plot": [f"{name} is not installed (pip install '.[plot]')" for name in ("matplotlib", "plotly")
                         if importlib.util.find_spec(name) is None]}, str(Path(__file__).parent))


def pytest_runtest_setup(item: pytest.Item) -> None:
    _guard.setup(item)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _guard.logreport(report)


def pytest_deselected(items: list[pytest.Item]) -> None:
    _guard.deselect(items)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _guard.finish(session)
