"""The watch caches' relists: client-go's backoff between them, and a cache that relists too often.

The backoff and the relist count are pure (time passed in); the last test runs a cache against the API
emulator with every watch answered 410, on a short backoff and window so the whole story takes seconds."""

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


def test_the_backoff_doubles_to_its_cap_jittered_up_to_twice_each_step() -> None:
    lowest = RelistBackoff(rand=lambda: 0.0)
    assert [lowest.next_wait(float(t)) for t in range(8)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    highest = RelistBackoff(rand=lambda: 0.999)
    waits = [highest.next_wait(float(t)) for t in range(8)]
    assert all(
        1.99 * low <= high < 2 * low
        for low, high in zip([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0], waits, strict=True)
    )


def test_the_backoff_starts_over_after_two_quiet_minutes() -> None:
    backoff = RelistBackoff(rand=lambda: 0.0)
    assert [backoff.next_wait(t) for t in (0.0, 1.0, 2.0)] == [0.8, 1.6, 3.2]
    assert not backoff.quiet(122.0)
    assert backoff.next_wait(110.0) == 6.4  # 108 s after the last wait began: not quiet yet
    assert backoff.quiet(230.1)
    assert backoff.next_wait(230.1) == 0.8


def test_more_than_five_relists_in_a_minute_is_too_often_until_a_minute_of_following() -> None:
    relists = Relists()
    moments = [0.0, 1.0, 3.0, 7.0, 15.0]
    assert not any(relists.record(t, "expired", t) for t in moments)
    assert not relists.too_often(20.0, following=False)
    assert relists.record(31.0, "expired", 31.0)  # the sixth within 60 s
    assert relists.too_often(31.0, following=True)
    assert (relists.streak, relists.streak_began) == (6, 0.0)
    # At the backoff's cap relists come every 30–60 s, fewer than the limit: still too often while the
    # cache does not follow the server between them.
    assert not relists.record(80.0, "expired", 80.0)
    assert not relists.record(135.0, "expired", 135.0)
    assert relists.streak == 8
    assert relists.too_often(190.0, following=False)
    assert relists.too_often(150.0, following=True)  # following, but not for a minute yet
    assert not relists.too_often(196.0, following=True)
    assert relists.counts == {"expired": 8} and relists.total == 8
    assert relists.settle(196.0) and relists.too_often_since is None
    # A relist after a calm minute starts no streak
    assert not relists.record(200.0, "error", 199.0)
    assert not relists.too_often(200.0, following=False)


def test_a_relist_after_a_minute_of_following_ends_the_state() -> None:
    relists = Relists(limit=2, window=10.0)
    for moment in (0.0, 1.0, 2.0):
        relists.record(moment, "error", moment)
    assert relists.too_often_since == 2.0
    # the cache followed the server from its relist at 2 s until 14 s, then failed and relisted at 15 s
    assert not relists.record(15.0, "error", followed_until=14.0)
    assert relists.too_often_since is None


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
