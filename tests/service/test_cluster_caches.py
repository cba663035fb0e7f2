"""The service's watch caches, one of each kind per namespace, against the API emulator (one cache:
tests/kube/test_watch.py)."""

from __future__ import annotations

import asyncio

from autoscaler.kube.api import KubeApi
from autoscaler.service.cluster.caches import LISTS_AT_ONCE, ClusterCaches
from kube_emulator import KubeEmulator
from tests.service.cluster import deployment


async def test_caches_of_many_namespaces_list_a_few_at_a_time() -> None:
    """An instance given 12 namespaces has 36 caches (pods, Deployments, VPAs per namespace): listing them
    all at once held every one's pages in memory together (bench/service.py --shard-by namespace)."""
    namespaces = tuple(f"team-{i}" for i in range(12))
    async with KubeEmulator(bookmark_interval=0.5) as emu, emu.api_client() as api:
        for namespace in namespaces:
            web = deployment("web", 1)
            web["metadata"]["namespace"] = namespace
            emu.seed(web)
        emu.faults.delay(0.1, verb="list")
        caches = ClusterCaches(
            KubeApi(api), namespaces, on_pod=lambda *_: None, watch_targets=False, silence_seconds=60
        )
        await caches.start()
        try:
            await asyncio.wait_for(caches.wait_synced(), 20)
        finally:
            await caches.stop()
        lists = [r for r in emu.requests.records if r.verb == "list" and r.duration is not None]
        assert len(lists) >= 12 * 2  # pods and Deployments of every namespace (the VPAs are not served)
        edges = sorted([(r.started, 1) for r in lists] + [(r.started + r.duration, -1) for r in lists])
        at_once = peak = 0
        for _, step in edges:
            at_once += step
            peak = max(peak, at_once)
        assert peak <= LISTS_AT_ONCE
