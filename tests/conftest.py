"""What the whole suite checks before any test runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from autoscaler import native
from tests.warm_prometheus import Scraped, WarmPrometheus

# No property test has a wall-clock deadline: speed goals live in bench/, and on a loaded machine (CI runs the
# interpreted and the compiled build side by side) one slow example -- '0E500000' read digit by digit took 53 ms
# against Hypothesis's 200 ms default under load -- failed a test whose answers were all right.
settings.register_profile("autoscaler", deadline=None)
settings.load_profile("autoscaler")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Modules compiled in place and edited since would be tested as they were (the compiled module wins)."""
    stale = native.stale()
    if stale:
        raise pytest.UsageError(
            f"compiled modules older than their source: {', '.join(stale)}. Rebuild them "
            "(AUTOSCALER_COMPILE=1 python setup.py build_ext --inplace) or delete them "
            "(find autoscaler -name '*.so' -delete)"
        )


@pytest.fixture(scope="session")
def warm_prometheus() -> Iterator[WarmPrometheus]:
    """This worker's spare exporter and Prometheus, already scraped (tests/warm_prometheus.py)."""
    warm = WarmPrometheus()
    try:
        yield warm
    finally:
        warm.close()


@pytest.fixture(scope="module")
def scraped(warm_prometheus: WarmPrometheus) -> Iterator[Scraped]:
    """This module's own exporter and the real Prometheus scraping it every second (see the ``exporter`` and
    ``prometheus`` fixtures of the suites that use it)."""
    taken = warm_prometheus.take()
    try:
        yield taken
    finally:
        taken.close()
