"""Fixtures for the service's operational components: the Kubernetes API emulator and a client of it (the kube
layer's, tests/kube/emulated.py); an emulator that runs workloads, for the manager's tests; the logging
configuration put back after a test that changed it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator

import pytest
import structlog

from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.kube.emulated import api as api
from tests.kube.emulated import emulator as emulator
from tests.service.cluster import CRD


@pytest.fixture
async def emu() -> AsyncIterator[KubeEmulator]:
    """An emulator whose Deployments get pods (and pods readiness), with the ScalingTarget CRD installed.
    A module that needs more (the VPA CRD) defines its own ``emu``, which takes precedence."""
    async with KubeEmulator(bookmark_interval=0.5, controllers=[WorkloadController(PodLifecycle())]) as emulator:
        emulator.install_crd(CRD)
        yield emulator


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """The root logger's handlers and level, and structlog's defaults, as they were before the test; the
    handlers it added are closed (a threaded one's writer ends)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    structlog.reset_defaults()
