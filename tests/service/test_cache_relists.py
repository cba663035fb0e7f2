"""The service's side of the watch caches' relists (the backoff and the count: tests/kube/test_relists.py): its
readiness names a cache that relists too often, and the relist settings are parsed and reach every cache.

The first test runs a cache against the API emulator with every watch answered 410, on a short backoff and
window so the whole story takes seconds."""

from __future__ import annotations

import asyncio

import pytest

from autoscaler.kube.api import DEPLOYMENTS, KubeApi
from autoscaler.kube.records import trim_deployment
from autoscaler.kube.relists import DEFAULT_RELIST_POLICY, RelistBackoff, RelistPolicy, Relists
from autoscaler.kube.watch import WatchCache
from autoscaler.service.cluster.cache_health import cache_readiness, cache_states
from autoscaler.service.cluster.caches import ClusterCaches
from autoscaler.service.settings import parse_service_settings
from autoscaler.values.fields import SpecError
from kube_emulator import KubeEmulator
from tests.service.cluster import deployment, eventually


async def test_a_cache_whose_watches_always_expire_backs_off_reports_it_and_recovers() -> None:
    """Every watch answered 410: one relist at once, then the backoff's (here 50 ms doubling to 200 ms);
    past 3 relists in 2 s the readiness check names the cache, and once the watches follow again it
    passes after the window."""
    async with KubeEmulator(bookmark_interval=0.1) as emu, emu.api_client() as api:
        emu.seed(deployment("web", 1))
        cache = WatchCache(KubeApi(api), DEPLOYMENTS, trim_deployment)
        cache.backoff = RelistBackoff(start=0.05, cap=0.2, rand=lambda: 0.0)
        cache.relist_counts = Relists(limit=3, window=2.0)
        expiring = emu.faults.expire_watches(resource="deployments")
        task = asyncio.create_task(cache.run())
        try:
            await asyncio.wait_for(cache.synced.wait(), 5)
            await eventually(lambda: cache.relisting() is not None, what="the cache to relist too often")
            ok, detail = cache_readiness([cache], stale_limit=30.0)
            assert not ok and "relisting too often: deployments.apps relisted 4 times" in detail, detail
            assert "410" in detail, detail
            [state] = cache_states([cache])
            assert state.relisting and state.relists["expired"] >= 4
            listed = emu.requests.count("list", "deployments")
            await asyncio.sleep(1.0)
            # 1 s of 410s at the cap: a relist every 200 ms at most (without a backoff: hundreds)
            assert emu.requests.count("list", "deployments") - listed <= 1.0 / 0.2 + 1
            emu.faults.remove(expiring)
            await eventually(lambda: cache.following, what="the cache to follow again")
            assert cache.relisting() is not None  # not for a whole window yet
            await eventually(lambda: cache.relisting() is None, timeout=10, what="the window to pass")
            assert cache_readiness([cache], stale_limit=30.0) == (True, "synced")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def test_the_relist_settings_default_to_client_gos_backoff_and_five_relists_a_minute() -> None:
    settings = parse_service_settings({"prometheus": {"url": "http://p:9090"}})
    assert settings.kubernetes.relists == DEFAULT_RELIST_POLICY == RelistPolicy(0.8, 30.0, 5, 60.0)
    backoff = DEFAULT_RELIST_POLICY.backoff()
    assert (backoff.start, backoff.cap, backoff.factor, backoff.jitter) == (0.8, 30.0, 2.0, 1.0)


def test_every_invalid_relist_setting_is_reported_with_its_path() -> None:
    relists = {"backoffStartSeconds": 2, "backoffCapSeconds": 1, "limit": 0, "windowSeconds": "1m", "window": 5}
    with pytest.raises(SpecError) as info:
        parse_service_settings({"prometheus": {"url": "http://p:9090"}, "kubernetes": {"relists": relists}})
    assert {str(e) for e in info.value.errors} == {
        "kubernetes.relists.backoffCapSeconds: must be at least backoffStartSeconds (2)",
        "kubernetes.relists.limit: must be between 1 and 1000",
        "kubernetes.relists.windowSeconds: must be a number, not string",
        'kubernetes.relists.window: unknown field (did you mean "windowSeconds"?)',
    }


async def test_the_relist_settings_reach_every_cache_of_the_service() -> None:
    relists = {"backoffStartSeconds": 0.2, "backoffCapSeconds": 1, "limit": 3, "windowSeconds": 15}
    settings = parse_service_settings({"prometheus": {"url": "http://p:9090"}, "kubernetes": {"relists": relists}})
    async with KubeEmulator() as emu, emu.api_client() as api:
        caches = ClusterCaches(
            KubeApi(api),
            ("a", "b"),
            on_pod=lambda *_: None,
            watch_targets=True,
            silence_seconds=90.0,
            relist_policy=settings.kubernetes.relists,
        )
        assert len(caches.all) == 12  # six kinds in each of two namespaces
        for cache in caches.all:
            assert (cache.backoff.start, cache.backoff.cap) == (0.2, 1.0), cache.name
            assert (cache.relist_counts.limit, cache.relist_counts.window) == (3, 15.0), cache.name
