"""Fixtures for the emulator's own tests: a running emulator and a real kubernetes-asyncio client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio.client import ApiClient

from autoscaler.emulator import KubeEmulator


@pytest.fixture
async def emulator() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.2, seed=7) as emu:
        yield emu


@pytest.fixture
async def api(emulator: KubeEmulator) -> AsyncIterator[ApiClient]:
    async with emulator.api_client() as client:
        yield client
