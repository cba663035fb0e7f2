"""Fixtures for the emulator's own tests: a running emulator, a real kubernetes-asyncio client, and the
real kubectl pointed at the emulator (``kubectl`` tests fail instead of skipping in CI without it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio.client import ApiClient

from kube_emulator import KubeEmulator
from tests.guard import Guard, missing_binaries

from .kubectl import Kubectl

_guard = Guard({"kubectl": missing_binaries("kubectl", package="kubernetes-client")}, str(Path(__file__).parent))

pytest_runtest_setup, pytest_runtest_logreport, pytest_deselected, pytest_sessionfinish = _guard.hooks()


@pytest.fixture
async def emulator() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.2, seed=7) as emu:
        yield emu


@pytest.fixture
async def api(emulator: KubeEmulator) -> AsyncIterator[ApiClient]:
    async with emulator.api_client() as client:
        yield client


@pytest.fixture
def kubectl(emulator: KubeEmulator, tmp_path: Path) -> Kubectl:
    _guard.require("kubectl")
    return Kubectl(emulator, tmp_path)
