"""Tests that need something optional (a server binary, the plot extra) skip locally without it, but
fail with ``AUTOSCALER_REQUIRE_SERVERS=1`` (set by ``.ci/run``): CI never skips them quietly, nor lets
them be deselected. A conftest makes one :class:`Guard` and installs its hooks::

    _guard = Guard({"prometheus": missing_binaries("prometheus")}, str(Path(__file__).parent))
    pytest_runtest_setup, pytest_runtest_logreport, pytest_deselected, pytest_sessionfinish = _guard.hooks()
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from autoscaler_sandbox import find_binary

REQUIRE_SERVERS = os.environ.get("AUTOSCALER_REQUIRE_SERVERS") == "1"


def missing_binaries(*names: str, package: str = "prometheus") -> list[str]:
    """What is lacking of the binaries ``names`` (from the Debian package ``package``), with how to get them."""
    return [f"{name} is not installed (Debian package '{package}')" for name in names if find_binary(name) is None]


def missing_modules(*names: str, extra: str) -> list[str]:
    """What is lacking of the Python modules ``names``, installed with the package extra ``extra``."""
    return [
        f"{name} is not installed (pip install '.[{extra}]')"
        for name in names
        if importlib.util.find_spec(name) is None
    ]


class Guard:
    def __init__(self, missing: Mapping[str, Sequence[str]], where: str) -> None:
        """``missing``: marker → what that marker's tests need and this machine lacks (with how to
        get it); ``where``: the test directory the guard covers."""
        self.missing = {marker: list(items) for marker, items in missing.items()}
        self.where = where
        self.skipped: list[str] = []
        self.deselected: list[str] = []

    def hooks(self) -> tuple[Callable[..., Any], ...]:
        """The four pytest hooks for a conftest: runtest_setup, runtest_logreport, deselected, sessionfinish."""

        def pytest_runtest_setup(item: pytest.Item) -> None:
            self.setup(item)

        def pytest_runtest_logreport(report: pytest.TestReport) -> None:
            self.logreport(report)

        def pytest_deselected(items: list[pytest.Item]) -> None:
            # "-m 'not prometheus'" or "-k" would be a quiet way around the real-server tests.
            self.deselect(items)

        def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
            self.finish(session)

        return pytest_runtest_setup, pytest_runtest_logreport, pytest_deselected, pytest_sessionfinish

    def require(self, marker: str) -> None:
        """For a fixture that needs what ``marker`` stands for: skip without it, or fail in CI."""
        if self.missing.get(marker):
            message = "; ".join(self.missing[marker])
            if REQUIRE_SERVERS:
                pytest.fail(f"{message}, and AUTOSCALER_REQUIRE_SERVERS=1 forbids skipping these tests")
            pytest.skip(message)

    def _lacking(self, item: pytest.Item) -> list[str]:
        return [text for marker, items in self.missing.items() if item.get_closest_marker(marker) for text in items]

    def setup(self, item: pytest.Item) -> None:
        lacking = self._lacking(item)
        if not lacking:
            return
        message = "; ".join(lacking)
        if REQUIRE_SERVERS:
            pytest.fail(f"{message}, and AUTOSCALER_REQUIRE_SERVERS=1 forbids skipping these tests")
        pytest.skip(message)

    def logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and any(marker in report.keywords for marker in self.missing):
            self.skipped.append(report.nodeid)

    def deselect(self, items: list[pytest.Item]) -> None:
        self.deselected.extend(
            item.nodeid
            for item in items
            if str(item.path).startswith(self.where) and any(item.get_closest_marker(marker) for marker in self.missing)
        )

    def finish(self, session: pytest.Session) -> None:
        if not REQUIRE_SERVERS or session.config.option.collectonly:
            return
        for outcome, ids in (("skipped", self.skipped), ("deselected", self.deselected)):
            if ids:
                reporter = session.config.pluginmanager.get_plugin("terminalreporter")
                if reporter is not None:
                    reporter.write_line(
                        f"ERROR: {len(ids)} test(s) needing {', '.join(self.missing)} were {outcome} "
                        f"with AUTOSCALER_REQUIRE_SERVERS=1: {', '.join(ids[:5])}",
                        red=True,
                        bold=True,
                    )
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
