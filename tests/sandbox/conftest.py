"""The demo's tests; those with a real Prometheus or kubectl skip locally without the binary, but fail under
``AUTOSCALER_REQUIRE_SERVERS=1`` (``.ci/run``), as everywhere else (``tests/guard.py``)."""

from __future__ import annotations

from pathlib import Path

from tests.guard import Guard, missing_binaries

_guard = Guard(
    {"prometheus": missing_binaries("prometheus"), "kubectl": missing_binaries("kubectl", package="kubernetes-client")},
    str(Path(__file__).parent),
)

pytest_runtest_setup, pytest_runtest_logreport, pytest_deselected, pytest_sessionfinish = _guard.hooks()
