"""Fixtures of the backtest tests: one Prometheus holding the known histories (promtool backfill),
and the guard that keeps real-Prometheus and plot tests from being skipped in CI."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from autoscaler.sandbox import PrometheusSandbox, find_binary
from tests.backtest import history_data
from tests.guard import REQUIRE_SERVERS, Guard

PLOT_LIBRARIES = ("matplotlib", "plotly")
_guard = Guard({
    "prometheus": [f"{name} is not installed (Debian package 'prometheus')"
                   for name in ("prometheus", "promtool") if find_binary(name) is None],
    "plot": [f"{name} is not installed (pip install '.[plot]')"
             for name in PLOT_LIBRARIES if importlib.util.find_spec(name) is None],
}, str(Path(__file__).parent))


def pytest_runtest_setup(item: pytest.Item) -> None:
    _guard.setup(item)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _guard.logreport(report)


def pytest_deselected(items: list[pytest.Item]) -> None:
    _guard.deselect(items)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _guard.finish(session)


@pytest.fixture(scope="session")
def history_prometheus() -> Iterator[PrometheusSandbox]:
    """The known histories at fixed times. A 10 s lookback: a series whose last sample is one sync
    (15 s) old is gone, as a scraped series is once its stale marker is written (backfill has none)."""
    if _guard.missing["prometheus"]:
        message = "; ".join(_guard.missing["prometheus"])
        pytest.fail(message) if REQUIRE_SERVERS else pytest.skip(message)
    prom = PrometheusSandbox(extra_args=["--query.lookback-delta=10s"])
    try:
        prom.backfill(history_data.backfill_text())
        prom.start()
        yield prom
    finally:
        prom.close()
