"""What the whole suite checks before any test runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from autoscaler import native
from tests.warm_prometheus import Scraped, WarmPrometheus


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
