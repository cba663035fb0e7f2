"""Fault injection: errors never change state, delays, 429 + Retry-After, conflict storms,
dropped and expired watches, disconnects, rule matching and limits."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient, ApiException

from kube_emulator import FaultRule, KubeEmulator, Respond

from .builders import deployment
from .test_watch import take


async def test_injected_500_does_not_change_state(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment(replicas=2))
    before = emulator.store.resource_version
    rule = emulator.faults.error(500, verb="patch", resource="deployments/scale", times=1)
    apps = client.AppsV1Api(api)
    with pytest.raises(ApiException) as failed:
        await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 7}})
    assert failed.value.status == 500
    assert json.loads(failed.value.body)["reason"] == "InternalError"
    assert emulator.get("deployments", "web")["spec"]["replicas"] == 2
    assert emulator.store.resource_version == before
    assert (rule.matched, rule.fired, rule.exhausted) == (1, 1, True)
    # The rule is spent: the retry goes through.
    assert (
        await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 7}})
    ).spec.replicas == 7
    assert [r.fault for r in emulator.requests.find("patch", "deployments/scale")] == ["Respond", None]


async def test_429_carries_retry_after(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.faults.throttle(retry_after=3, verb="list")
    with pytest.raises(ApiException) as throttled:
        await client.CoreV1Api(api).list_namespaced_pod("default")
    assert throttled.value.status == 429
    assert throttled.value.headers["Retry-After"] == "3"
    body = json.loads(throttled.value.body)
    assert body["reason"] == "TooManyRequests" and body["details"]["retryAfterSeconds"] == 3


async def test_503_with_retry_after_and_custom_message(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.faults.add(FaultRule(Respond(503, message="etcd is sad", retry_after=2), verb="get"))
    emulator.seed(deployment())
    with pytest.raises(ApiException) as unavailable:
        await client.AppsV1Api(api).read_namespaced_deployment("web", "default")
    assert unavailable.value.status == 503 and unavailable.value.headers["Retry-After"] == "2"
    assert json.loads(unavailable.value.body)["message"] == "etcd is sad"


async def test_slow_responses(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment())
    emulator.faults.delay(0.3, verb="get", resource="deployments", times=1)
    apps = client.AppsV1Api(api)
    started = time.monotonic()
    await apps.read_namespaced_deployment("web", "default")
    assert time.monotonic() - started >= 0.3
    # A client timeout shorter than the delay: no answer, and (delay before) no change either.
    emulator.faults.delay(1.0, verb="patch", times=1)
    with pytest.raises(asyncio.TimeoutError):
        await apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 5}}, _request_timeout=0.2)
    assert emulator.get("deployments", "web")["spec"]["replicas"] == 2


async def test_delay_after_means_the_write_landed_but_the_answer_was_lost(
    emulator: KubeEmulator, api: ApiClient
) -> None:
    emulator.seed(deployment())
    emulator.faults.delay(1.0, after=True, verb="patch", times=1)
    with pytest.raises(asyncio.TimeoutError):
        await client.AppsV1Api(api).patch_namespaced_deployment(
            "web", "default", {"spec": {"replicas": 5}}, _request_timeout=0.2
        )
    assert emulator.get("deployments", "web")["spec"]["replicas"] == 5


async def test_conflict_storm_then_success(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment(replicas=2))
    emulator.faults.conflicts(3, verb="update", resource="deployments/scale")
    apps = client.AppsV1Api(api)
    attempts = 0
    while True:
        attempts += 1
        scale = await apps.read_namespaced_deployment_scale("web", "default")
        scale.spec.replicas = 6
        try:
            await apps.replace_namespaced_deployment_scale("web", "default", scale)
            break
        except ApiException as conflict:
            assert conflict.status == 409 and json.loads(conflict.body)["reason"] == "Conflict"
            assert emulator.get("deployments", "web")["spec"]["replicas"] == 2  # nothing applied
    assert attempts == 4
    assert [v["spec"]["replicas"] for v in emulator.history("deployments", "web")] == [2, 6]


async def test_rule_matching_skip_and_probability(emulator: KubeEmulator, api: ApiClient) -> None:
    core = client.CoreV1Api(api)
    skipper = emulator.faults.error(500, verb="list", resource="pods", namespace="kube-*", skip=1, times=1)
    await core.list_namespaced_pod("default")  # other namespace: no match
    await core.list_namespaced_pod("kube-system")  # first match is skipped
    with pytest.raises(ApiException):
        await core.list_namespaced_pod("kube-public")
    await core.list_namespaced_pod("kube-system")
    assert (skipper.matched, skipper.fired) == (2, 1)
    emulator.faults.clear()

    by_path = emulator.faults.error(502, path=r"^/apis/apps/")
    with pytest.raises(ApiException) as bad_gateway:
        await client.AppsV1Api(api).list_namespaced_deployment("default")
    assert bad_gateway.value.status == 502
    await core.list_namespaced_pod("default")
    emulator.faults.remove(by_path)

    emulator.faults.error(500, verb="list", resource="configmaps", probability=0.5)
    failures = 0
    for _ in range(40):
        try:
            await core.list_namespaced_config_map("default")
        except ApiException:
            failures += 1
    assert 5 < failures < 35


async def test_faults_apply_to_discovery(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.faults.error(503, path=r"^/apis/?$", times=1)
    with pytest.raises(ApiException) as unavailable:
        await client.ApisApi(api).get_api_versions()
    assert unavailable.value.status == 503
    assert (await client.ApisApi(api).get_api_versions()).groups


async def test_dropped_watch_is_resumed_by_the_client(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment())
    apps = client.AppsV1Api(api)
    start = (await apps.list_namespaced_deployment("default")).metadata.resource_version
    emulator.faults.drop_watches(after_events=1, resource="deployments", times=2)
    async with watch.Watch() as watcher:
        stream = watcher.stream(apps.list_namespaced_deployment, "default", resource_version=start)
        for replicas in (3, 4, 5):
            emulator.patch("deployments", "web", {"spec": {"replicas": replicas}})
        events = await take(stream, 3)
    assert [e["object"].spec.replicas for e in events] == [3, 4, 5]
    assert emulator.requests.count("watch", "deployments") == 3  # two drops, two reconnects


async def test_abruptly_cut_watch_raises_in_the_client(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment())
    emulator.faults.drop_watches(after_events=1, abrupt=True)
    async with watch.Watch() as watcher:
        with pytest.raises(aiohttp.ClientPayloadError):
            await take(watcher.stream(client.AppsV1Api(api).list_namespaced_deployment, "default"), 5)


async def test_watch_dropped_after_a_time(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.faults.drop_watches(after_seconds=0.2, times=1)
    started = time.monotonic()
    async with watch.Watch() as watcher:
        events = [
            e
            async for e in watcher.stream(
                client.AppsV1Api(api).list_namespaced_deployment, "default", timeout_seconds=10
            )
        ]
    assert events == [] and time.monotonic() - started < 2


async def test_forced_410_on_watch(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.faults.expire_watches(resource="deployments", times=1)
    async with watch.Watch() as watcher:
        with pytest.raises(ApiException) as expired:
            await take(
                watcher.stream(client.AppsV1Api(api).list_namespaced_deployment, "default", timeout_seconds=5),
                1,
            )
    assert expired.value.status == 410


async def test_disconnect(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment())
    # aiohttp silently retries an idempotent request once when a kept-alive connection is
    # closed under it, so a client only sees the second disconnect in a row.
    emulator.faults.disconnect(verb="get", times=2)
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await client.AppsV1Api(api).read_namespaced_deployment("web", "default")
    assert {r.status for r in emulator.requests.find("get", "deployments")} == {0}  # never answered
    assert (await client.AppsV1Api(api).read_namespaced_deployment("web", "default")).metadata.name == "web"
