"""Fixtures of the convert tests: a Prometheus holding known series at fixed times (promtool
backfill), and the guard that keeps real-Prometheus and plot tests from being skipped in CI."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from autoscaler_sandbox import PrometheusSandbox
from tests.convert import series_data
from tests.guard import Guard, missing_binaries, missing_modules

_guard = Guard(
    {
        "prometheus": missing_binaries("prometheus", "promtool"),
        "plot": missing_modules("matplotlib", "plotly", extra="plot"),
        "kubectl": [] if shutil.which("kubectl") else ["kubectl is not installed (.ci/run installs it)"],
    },
    str(Path(__file__).parent),
)

pytest_runtest_setup, pytest_runtest_logreport, pytest_deselected, pytest_sessionfinish = _guard.hooks()


@pytest.fixture(scope="session")
def series_prometheus() -> Iterator[PrometheusSandbox]:
    """The adapter-shaped series of ``series_data`` and the histories of ``compare_data``."""
    from tests.convert import compare_data

    _guard.require("prometheus")
    prom = PrometheusSandbox(extra_args=["--query.lookback-delta=10s"])
    try:
        prom.backfill(series_data.backfill_text(compare_data.add_histories))
        prom.start()
        yield prom
    finally:
        prom.close()
