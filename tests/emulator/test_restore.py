"""resourceVersions the store never issued, and etcd restores that send the versions back.

What the API server does, from staging/src/k8s.io/apiserver/pkg/storage/cacher (watch_cache.go,
cacher.go) and storage/errors.go:

* a GET or LIST "not older than" a version the watch cache has not reached waits up to 3 s
  (``blockTimeout``), then answers 504 Timeout "Too large resource version: N, current: C" with a
  ``ResourceVersionTooLarge`` cause and ``retryAfterSeconds`` 1; so does a watch-list
  (``sendInitialEvents=true``), as an ERROR event;
* a plain watch from such a version is accepted and sends nothing — no event, no bookmark — until the
  cache passes it (kubernetes/kubernetes#107457: informers silently miss changes after an etcd restore
  that sent the versions back);
* a watch from a version older than the cache's window is 410 Expired, which is what every client's
  version is after ``etcdutl snapshot restore --bump-revision N --mark-compacted``.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient, ApiException

from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController

from .builders import deployment
from .test_watch import take


async def raw_events(session: aiohttp.ClientSession, url: str) -> list[dict[str, Any]]:
    """Every event of a raw watch until the server ends it."""
    async with session.get(url) as response:
        assert response.status == 200
        return [json.loads(line) async for line in response.content if line.strip()]


async def test_a_watch_from_a_version_not_reached_is_silent_until_the_store_passes_it(
    emulator: KubeEmulator,
) -> None:
    emulator.seed(deployment())
    ahead = emulator.store.resource_version + 3
    url = f"{emulator.url}/apis/apps/v1/namespaces/default/deployments"
    query = f"?watch=1&allowWatchBookmarks=true&resourceVersion={ahead}&timeoutSeconds=2"

    async def writes() -> None:
        for replicas in range(3, 8):  # versions ahead-2 … ahead+2
            await asyncio.sleep(0.3)
            emulator.patch("deployments", "web", {"spec": {"replicas": replicas}})

    async with aiohttp.ClientSession() as session:
        writer = asyncio.create_task(writes())
        events = await raw_events(session, url + query)
        await writer
    changes = [event for event in events if event["type"] != "BOOKMARK"]
    # Only the changes after the version asked for: the ones at or below it were never this watch's.
    assert [event["object"]["spec"]["replicas"] for event in changes] == [6, 7]
    bookmarks = [int(event["object"]["metadata"]["resourceVersion"]) for event in events if event["type"] == "BOOKMARK"]
    assert bookmarks and min(bookmarks) >= ahead  # never a bookmark that would send the client back


async def test_a_watch_list_from_a_version_not_reached_is_504_too_large(emulator: KubeEmulator) -> None:
    emulator.seed(deployment())
    current = emulator.store.resource_version
    query = f"watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={current + 10}"
    started = time.monotonic()
    async with aiohttp.ClientSession() as session:
        events = await raw_events(session, f"{emulator.url}/apis/apps/v1/deployments?{query}")
    assert time.monotonic() - started >= 2.9  # it waited for the version first
    (error,) = events
    assert error["type"] == "ERROR"
    status = error["object"]
    assert (status["code"], status["reason"]) == (504, "Timeout")
    assert status["message"] == f"Timeout: Too large resource version: {current + 10}, current: {current}"
    assert status["details"] == {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }


async def test_a_watch_list_gets_its_version_if_it_comes_within_the_wait(emulator: KubeEmulator) -> None:
    emulator.seed(deployment())
    wanted = emulator.store.resource_version + 1
    query = f"watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersion={wanted}&timeoutSeconds=1"
    asyncio.get_running_loop().call_later(0.5, emulator.patch, "deployments", "web", {"spec": {"replicas": 4}})
    async with aiohttp.ClientSession() as session:
        events = await raw_events(session, f"{emulator.url}/apis/apps/v1/deployments?{query}")
    assert events[0]["type"] == "ADDED" and events[0]["object"]["spec"]["replicas"] == 4


async def test_reads_from_a_version_not_reached_are_504_too_large(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment())
    apps = client.AppsV1Api(api)
    ahead = str(emulator.store.resource_version + 5)
    started = time.monotonic()
    with pytest.raises(ApiException) as listed:
        await apps.list_namespaced_deployment("default", resource_version=ahead)
    assert time.monotonic() - started >= 2.9
    assert listed.value.status == 504
    assert listed.value.headers["Retry-After"] == "1"
    body = json.loads(listed.value.body)
    assert body["reason"] == "Timeout"
    assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    async with aiohttp.ClientSession() as session:
        url = f"{emulator.url}/apis/apps/v1/namespaces/default/deployments/web"
        async with session.get(url, params={"resourceVersion": ahead}) as got:
            assert got.status == 504
            assert (await got.json())["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    # "0" and the current version are served at once, as before.
    assert (await apps.list_namespaced_deployment("default", resource_version="0")).items
    current = str(emulator.store.resource_version)
    assert (await apps.list_namespaced_deployment("default", resource_version=current)).items


async def test_a_restore_sends_the_versions_back_and_ends_every_watch(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    emulator.seed(deployment("web", replicas=2))
    snapshot = emulator.snapshot_etcd()
    emulator.patch("deployments", "web", {"spec": {"replicas": 5}})
    emulator.seed(deployment("late"))
    seen = (await apps.list_namespaced_deployment("default")).metadata.resource_version
    url = f"{emulator.url}/apis/apps/v1/namespaces/default/deployments?watch=1&allowWatchBookmarks=true"
    async with aiohttp.ClientSession() as session:
        open_watch = asyncio.create_task(raw_events(session, f"{url}&resourceVersion={seen}&timeoutSeconds=30"))
        await asyncio.sleep(0.3)
        assert not open_watch.done()  # the watch is open, following
        await emulator.restore_etcd(snapshot)
        ended = await asyncio.wait_for(open_watch, 5)  # the API server restarted: the watch ended
        # The client resumes from the version it saw, which the restored store has not reached: silence,
        # not even a bookmark (the fixture's emulator bookmarks every 0.2 s), until the server closes it.
        resumed = await raw_events(session, f"{url}&resourceVersion={seen}&timeoutSeconds=1")
    assert all(event["type"] == "BOOKMARK" for event in ended)
    assert resumed == []

    listed = await apps.list_namespaced_deployment("default")
    assert int(listed.metadata.resource_version) == snapshot.revision < int(seen)
    assert [(d.metadata.name, d.spec.replicas) for d in listed.items] == [("web", 2)]
    assert [d["spec"]["replicas"] for d in emulator.history("deployments", "web")] == [2, 5, 2]
    # A version issued before the restore is issued again, to another change.
    emulator.patch("deployments", "web", {"spec": {"replicas": 3}})
    assert emulator.get("deployments", "web")["metadata"]["resourceVersion"] == str(snapshot.revision + 1)
    # A watch from a version older than the restore is 410 Expired (the window starts at the restore).
    with pytest.raises(ApiException) as expired:
        async with watch.Watch() as watcher:
            await take(
                watcher.stream(apps.list_namespaced_deployment, "default", resource_version="1", timeout_seconds=2), 1
            )
    assert expired.value.status == 410


async def test_a_restore_with_a_bump_answers_every_earlier_version_410(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    emulator.seed(deployment("web", replicas=2))
    snapshot = emulator.snapshot_etcd()
    emulator.patch("deployments", "web", {"spec": {"replicas": 5}})
    seen = (await apps.list_namespaced_deployment("default")).metadata.resource_version
    await emulator.restore_etcd(snapshot, bump_revision=1000)

    async with watch.Watch() as watcher:
        with pytest.raises(ApiException) as expired:
            await take(
                watcher.stream(apps.list_namespaced_deployment, "default", resource_version=seen, timeout_seconds=2), 1
            )
    assert expired.value.status == 410
    relisted = await apps.list_namespaced_deployment("default")
    assert int(relisted.metadata.resource_version) == snapshot.revision + 1000
    assert [d.spec.replicas for d in relisted.items] == [2]
    async with watch.Watch() as watcher:
        stream = watcher.stream(
            apps.list_namespaced_deployment,
            "default",
            resource_version=relisted.metadata.resource_version,
            timeout_seconds=5,
        )
        emulator.patch("deployments", "web", {"spec": {"replicas": 4}})
        (event,) = await take(stream, 1)
    assert event["object"].spec.replicas == 4
    assert int(event["raw_object"]["metadata"]["resourceVersion"]) == snapshot.revision + 1001


async def test_the_controllers_work_on_the_restored_objects() -> None:
    async with KubeEmulator(controllers=[WorkloadController(PodLifecycle())]) as emu:
        emu.seed(deployment("web", replicas=2))
        await _pods(emu, 2)
        snapshot = emu.snapshot_etcd()
        emu.patch("deployments", "web", {"spec": {"replicas": 4}})
        await _pods(emu, 4)
        await emu.restore_etcd(snapshot)
        assert len(emu.list("pods", "default")) == 2  # the pods as they were
        emu.patch("deployments", "web", {"spec": {"replicas": 3}})
        await _pods(emu, 3)  # the controller follows the restored world


async def _pods(emu: KubeEmulator, count: int) -> None:
    for _ in range(500):
        pods = emu.list("pods", "default")
        if len(pods) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not {count} running pods: {len(emu.list('pods', 'default'))}")
