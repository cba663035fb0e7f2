"""Tests that need something optional (a server binary, the plot extra) skip locally without it, but
fail with ``AUTOSCALER_REQUIRE_SERVERS=1`` (set by ``.ci/run``): CI never skips them quietly, nor lets
them be deselected. A conftest makes one :class:`Guard` and forwards its hooks to it (the same rules
as ``tests/prometheus/conftest.py``)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import pytest

REQUIRE_SERVERS = os.environ.get("AUTOSCALER_REQUIRE_SERVERS") == "1"


class Guard:
    def __init__(self, missing: Mapping[str, Sequence[str]], where: str) -> None:
        """``missing``: marker → what that marker's tests need and this machine lacks (with how to
        get it); ``where``: the test directory the guard covers."""
        self.missing = {marker: list(items) for marker, items in missing.items()}
        self.where = where
        self.skipped: list[str] = []
        self.deselected: list[str] = []

    def _lacking(self, item: pytest.Item) -> list[str]:
        return [text for marker, items in self.missing.items() if item.get_closest_marker(marker)
                for text in items]

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
        self.deselected.extend(item.nodeid for item in items if str(item.path).startswith(self.where)
                               and any(item.get_closest_marker(marker) for marker in self.missing))

    def finish(self, session: pytest.Session) -> None:
        if not REQUIRE_SERVERS or session.config.option.collectonly:
            return
        for outcome, ids in (("skipped", self.skipped), ("deselected", self.deselected)):
            if ids:
                reporter = session.config.pluginmanager.get_plugin("terminalreporter")
                if reporter is not None:
                    reporter.write_line(f"ERROR: {len(ids)} test(s) needing {', '.join(self.missing)} were {outcome} "
                                        f"with AUTOSCALER_REQUIRE_SERVERS=1: {', '.join(ids[:5])}", red=True, bold=True)
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
