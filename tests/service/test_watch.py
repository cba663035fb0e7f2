"""Watch caches against the API emulator: an optional resource that is not served yet."""

from __future__ import annotations

import asyncio

from autoscaler.emulator import KubeEmulator
from autoscaler.kube.api import VPAS, KubeApi
from autoscaler.kube.records import trim_object
from autoscaler.kube.watch import WatchCache
from tests.service.cluster import VPA_CRD, eventually, vpa


async def test_an_absent_optional_resource_is_looked_for_without_listing() -> None:
    async with KubeEmulator(bookmark_interval=0.5) as emu, emu.api_client() as api:
        cache = WatchCache(KubeApi(api), VPAS, trim_object, optional=True, recheck_seconds=0.05)
        task = asyncio.create_task(cache.run())
        try:
            await asyncio.wait_for(cache.synced.wait(), 5)
            assert cache.unavailable and not cache.records
            await asyncio.sleep(0.5)  # ~10 rechecks: discovery GETs, never another LIST
            assert emu.requests.count("list", "verticalpodautoscalers") == 1
            emu.install_crd(VPA_CRD)
            emu.seed(vpa("web", "web", cpu="100m", memory="128Mi"))
            await eventually(lambda: ("default", "web") in cache.records, what="the VPA once its CRD is there")
            assert not cache.unavailable
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
