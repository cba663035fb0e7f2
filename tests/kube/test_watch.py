"""Watch caches against the API emulator: a paged LIST, an optional resource that is not served yet. The
service's caches of many namespaces: tests/service/test_cluster_caches.py."""

from __future__ import annotations

import asyncio
from typing import Any

from autoscaler.kube.api import DEPLOYMENTS, VPAS, KubeApi
from autoscaler.kube.records import trim_deployment, trim_object
from autoscaler.kube.watch import TRIM_SLICE, WatchCache
from kube_emulator import KubeEmulator
from tests.service.cluster import VPA_CRD, deployment, eventually, vpa


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


async def test_the_list_comes_in_pages_and_the_watch_follows_it() -> None:
    async with KubeEmulator(bookmark_interval=0.5) as emu, emu.api_client() as api:
        emu.seed(*(deployment(f"web-{i}", 1) for i in range(7)))
        cache = WatchCache(KubeApi(api), DEPLOYMENTS, trim_deployment, page_size=3)
        task = asyncio.create_task(cache.run())
        try:
            await asyncio.wait_for(cache.synced.wait(), 5)
            assert sorted(name for _, name in cache.records) == [f"web-{i}" for i in range(7)]
            assert cache.lists == emu.requests.count("list", "deployments") == 3
            emu.patch("deployments", "web-6", {"spec": {"replicas": 4}})
            await eventually(
                lambda: (record := cache.get("default", "web-6")) is not None and record.spec_replicas == 4,
                what="a change after the paged list",
            )
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_the_next_page_is_asked_for_before_this_one_is_trimmed() -> None:
    """While a page's objects are trimmed (CPU on the loop, between turns of it), the server is already
    serving the next one: start-up at 100,000 pods is 200 pages, and waiting for each in turn left both
    sides idle half the time."""
    async with KubeEmulator(bookmark_interval=0.5) as emu, emu.api_client() as api:
        emu.seed(*(deployment(f"web-{i:03d}", 1) for i in range(2 * TRIM_SLICE * 3 + 1)))
        asked: list[int] = []  # pages asked for when each object was trimmed
        caches: list[WatchCache[Any]] = []

        def trim(obj: Any) -> Any:
            asked.append(caches[0].lists)
            return trim_deployment(obj)

        page = 2 * TRIM_SLICE * 2
        cache = WatchCache(KubeApi(api), DEPLOYMENTS, trim, page_size=page)
        caches.append(cache)
        task = asyncio.create_task(cache.run())
        try:
            await asyncio.wait_for(cache.synced.wait(), 10)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        assert len(cache.records) == len(asked) == 2 * TRIM_SLICE * 3 + 1
        assert asked[0] == 2, "the second page was asked for before the first was trimmed"
        assert asked[-1] == 2, "the last page asks for no other"
        assert emu.requests.count("list", "deployments") == 2
