"""What the whole suite checks before any test runs."""

from __future__ import annotations

import pytest

from autoscaler import native


def pytest_sessionstart(session: pytest.Session) -> None:
    """Modules compiled in place and edited since would be tested as they were (the compiled module wins)."""
    stale = native.stale()
    if stale:
        raise pytest.UsageError(
            f"compiled modules older than their source: {', '.join(stale)}. Rebuild them "
            "(AUTOSCALER_COMPILE=1 python setup.py build_ext --inplace) or delete them "
            "(find autoscaler -name '*.so' -delete)"
        )
