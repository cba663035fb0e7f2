"""The demo's tests; the one with a real Prometheus skips locally without the binary, but fails under
``AUTOSCALER_REQUIRE_SERVERS=1`` (``.ci/run``), as everywhere else (``tests/guard.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.sandbox import find_binary
from tests.guard import Guard

_guard = Guard({"prometheus": ["prometheus is not installed (Debian package 'prometheus')"]
                if find_binary("prometheus") is None else []}, str(Path(__file__).parent))


def pytest_runtest_setup(item: pytest.Item) -> None:
    _guard.setup(item)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _guard.logreport(report)


def pytest_deselected(items: list[pytest.Item]) -> None:
    _guard.deselect(items)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _guard.finish(session)
