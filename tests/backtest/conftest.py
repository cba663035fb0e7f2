"""Fixtures of the backtest tests: one Prometheus holding the known histories (promtool backfill),
and the guard that keeps real-Prometheus and plot tests from being skipped in CI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data
from tests.guard import Guard, missing_binaries, missing_modules

_guard = Guard(
    {
        "prometheus": missing_binaries("prometheus", "promtool"),
        "plot": missing_modules("matplotlib", "plotly", extra="plot"),
    },
    str(Path(__file__).parent),
)

pytest_runtest_setup, pytest_runtest_logreport, pytest_deselected, pytest_sessionfinish = _guard.hooks()


@pytest.fixture(scope="session")
def history_prometheus() -> Iterator[PrometheusSandbox]:
    """The known histories at fixed times. A 10 s lookback: a series whose last sample is one sync
    (15 s) old is gone, as a scraped series is once its stale marker is written (backfill has none)."""
    _guard.require("prometheus")
    prom = PrometheusSandbox(extra_args=["--query.lookback-delta=10s"])
    try:
        prom.backfill(history_data.backfill_text())
        prom.start()
        yield prom
    finally:
        prom.close()
