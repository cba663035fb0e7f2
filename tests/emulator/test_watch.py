"""Watch streams through kubernetes-asyncio's Watch(): events, resume, bookmarks, timeouts, 410."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient, ApiException

from kube_emulator import KubeEmulator

from .builders import VPA_CRD, deployment, vpa


async def take(stream: AsyncIterator[dict[str, Any]], count: int, within: float = 5.0) -> list[dict[str, Any]]:
    """The next ``count`` events of a watch stream (failing after ``within`` seconds)."""
    events: list[dict[str, Any]] = []

    async def pull() -> None:
        async for event in stream:
            events.append(event)
            if len(events) == count:
                return

    await asyncio.wait_for(pull(), within)
    return events


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["raw_object"]["metadata"].get("name", "")) for e in events]


async def test_added_modified_deleted_from_a_resource_version(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    listed = await apps.list_namespaced_deployment("default")
    async with watch.Watch() as watcher:
        stream = watcher.stream(
            apps.list_namespaced_deployment,
            "default",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=5,
        )
        await apps.create_namespaced_deployment("default", deployment("web", replicas=1))
        await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 4}})
        await apps.delete_namespaced_deployment("web", "default")
        events = await take(stream, 3)
    assert summary(events) == [("ADDED", "web"), ("MODIFIED", "web"), ("DELETED", "web")]
    assert events[1]["object"].spec.replicas == 4  # typed objects, as for a real watch
    versions = [int(e["raw_object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and len(set(versions)) == 3


async def test_watch_without_resource_version_starts_with_the_current_objects(
    emulator: KubeEmulator, api: ApiClient
) -> None:
    emulator.seed(deployment("a"), deployment("b"), deployment("c", namespace="other"))
    apps = client.AppsV1Api(api)
    async with watch.Watch() as watcher:
        stream = watcher.stream(apps.list_namespaced_deployment, "default", timeout_seconds=5)
        initial = await take(stream, 2)
        emulator.patch("deployments", "a", {"spec": {"replicas": 3}})
        emulator.patch("deployments", "c", {"spec": {"replicas": 3}}, namespace="other")  # not ours
        emulator.patch("deployments", "b", {"spec": {"replicas": 3}})
        changes = await take(stream, 2)
    assert summary(initial) == [("ADDED", "a"), ("ADDED", "b")]
    assert summary(changes) == [("MODIFIED", "a"), ("MODIFIED", "b")]


async def test_cluster_wide_watch_with_label_selector_transitions(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    version = (await apps.list_deployment_for_all_namespaces()).metadata.resource_version
    async with watch.Watch() as watcher:
        stream = watcher.stream(
            apps.list_deployment_for_all_namespaces,
            label_selector="team=a",
            resource_version=version,
            timeout_seconds=5,
        )
        emulator.seed(deployment("x", namespace="ns1", labels={"app": "x", "team": "a"}))
        emulator.seed(deployment("y", namespace="ns2", labels={"app": "y", "team": "b"}))
        emulator.patch("deployments", "x", {"metadata": {"labels": {"team": "b"}}}, namespace="ns1")
        emulator.patch("deployments", "y", {"metadata": {"labels": {"team": "a"}}}, namespace="ns2")
        events = await take(stream, 3)
    # Leaving the selection is a DELETED, entering it an ADDED, as the watch cache reports them.
    assert summary(events) == [("ADDED", "x"), ("DELETED", "x"), ("ADDED", "y")]


async def test_bookmarks_carry_the_current_resource_version(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment())
    apps = client.AppsV1Api(api)
    async with watch.Watch() as watcher:
        stream = watcher.stream(
            apps.list_namespaced_deployment, "default", allow_watch_bookmarks=True, timeout_seconds=3
        )
        added, bookmark = await take(stream, 2)
    assert added["type"] == "ADDED"
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["raw_object"]["kind"] == "Deployment"
    assert int(bookmark["raw_object"]["metadata"]["resourceVersion"]) == emulator.store.resource_version
    assert watcher.resource_version == bookmark["raw_object"]["metadata"]["resourceVersion"]


async def test_timeout_seconds_closes_the_stream(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    started = time.monotonic()
    async with watch.Watch() as watcher:
        events = [e async for e in watcher.stream(apps.list_namespaced_deployment, "default", timeout_seconds=1)]
    elapsed = time.monotonic() - started
    assert events == []
    assert 0.9 <= elapsed < 3


async def test_watch_from_a_compacted_resource_version_is_410(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    emulator.seed(deployment())
    old_version = (await apps.list_namespaced_deployment("default")).metadata.resource_version
    emulator.patch("deployments", "web", {"spec": {"replicas": 5}})
    emulator.compact_watch_history()

    async with watch.Watch() as watcher:
        with pytest.raises(ApiException) as expired:
            await take(
                watcher.stream(
                    apps.list_namespaced_deployment,
                    "default",
                    resource_version=old_version,
                    timeout_seconds=5,
                ),
                1,
            )
    assert expired.value.status == 410
    assert "too old resource version" in str(expired.value.reason)

    # Without timeout_seconds the client retries a 410 once, then gives up.
    before = emulator.requests.count("watch", "deployments")
    async with watch.Watch() as watcher:
        with pytest.raises(ApiException):
            await take(watcher.stream(apps.list_namespaced_deployment, "default", resource_version=old_version), 1)
    assert emulator.requests.count("watch", "deployments") - before == 2

    # What a reflector does next: relist, then watch from the list's resourceVersion.
    relisted = await apps.list_namespaced_deployment("default")
    assert relisted.items[0].spec.replicas == 5
    async with watch.Watch() as watcher:
        stream = watcher.stream(
            apps.list_namespaced_deployment,
            "default",
            resource_version=relisted.metadata.resource_version,
            timeout_seconds=5,
        )
        emulator.patch("deployments", "web", {"spec": {"replicas": 6}})
        (event,) = await take(stream, 1)
    assert event["type"] == "MODIFIED" and event["object"].spec.replicas == 6


async def test_history_window_is_bounded() -> None:
    async with KubeEmulator(watch_history=3) as emu, emu.api_client() as api:
        apps = client.AppsV1Api(api)
        emu.seed(deployment())
        start = (await apps.list_namespaced_deployment("default")).metadata.resource_version
        for replicas in range(3, 6):
            emu.patch("deployments", "web", {"spec": {"replicas": replicas}})
        async with watch.Watch() as watcher:  # the three changes are still in the window
            events = await take(
                watcher.stream(apps.list_namespaced_deployment, "default", resource_version=start, timeout_seconds=2),
                3,
            )
        assert [e["object"].spec.replicas for e in events] == [3, 4, 5]
        emu.patch("deployments", "web", {"spec": {"replicas": 6}})  # pushes the first change out
        async with watch.Watch() as watcher:
            with pytest.raises(ApiException) as expired:
                await take(
                    watcher.stream(
                        apps.list_namespaced_deployment, "default", resource_version=start, timeout_seconds=2
                    ),
                    1,
                )
        assert expired.value.status == 410


async def test_client_reconnects_when_the_server_ends_a_watch() -> None:
    # The server closes every watch after 0.3 s; Watch() without timeout_seconds re-watches from
    # the last resourceVersion it saw, so no change is lost or repeated.
    async with KubeEmulator(default_watch_timeout=0.3) as emu, emu.api_client() as api:
        apps = client.AppsV1Api(api)
        emu.seed(deployment())
        start = (await apps.list_namespaced_deployment("default")).metadata.resource_version

        async def writer() -> None:
            for replicas in range(1, 9):
                await asyncio.sleep(0.1)
                emu.patch("deployments", "web", {"spec": {"replicas": replicas}})

        async with watch.Watch() as watcher:
            task = asyncio.create_task(writer())
            events = await take(watcher.stream(apps.list_namespaced_deployment, "default", resource_version=start), 8)
            await task
        assert [e["object"].spec.replicas for e in events] == list(range(1, 9))
        assert emu.requests.count("watch", "deployments") >= 2


async def test_custom_resource_watch(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.install_crd(VPA_CRD)
    custom = client.CustomObjectsApi(api)
    async with watch.Watch() as watcher:
        stream = watcher.stream(
            custom.list_namespaced_custom_object,
            "autoscaling.k8s.io",
            "v1",
            "default",
            "verticalpodautoscalers",
            timeout_seconds=5,
        )
        emulator.seed(vpa())
        (event,) = await take(stream, 1)
    assert event["type"] == "ADDED" and event["object"]["kind"] == "VerticalPodAutoscaler"


async def read_lines(session: aiohttp.ClientSession, url: str, count: int) -> list[dict[str, Any]]:
    """The first ``count`` events of a raw watch stream (then hang up)."""
    lines: list[dict[str, Any]] = []
    async with session.get(url) as response:
        assert response.status == 200
        async for line in response.content:
            if line.strip():
                lines.append(json.loads(line))
            if len(lines) == count:
                break
    return lines


@pytest.mark.parametrize("flag", ["true", "True", "1"])
async def test_raw_watch_flags_and_legacy_path(emulator: KubeEmulator, flag: str) -> None:
    emulator.seed(deployment())
    async with aiohttp.ClientSession() as session:
        url = f"{emulator.url}/apis/apps/v1/namespaces/default/deployments?watch={flag}"
        assert [line["type"] for line in await read_lines(session, url, 1)] == ["ADDED"]
        legacy = f"{emulator.url}/apis/apps/v1/watch/namespaces/default/deployments/web"
        assert [line["object"]["metadata"]["name"] for line in await read_lines(session, legacy, 1)] == ["web"]


async def test_send_initial_events_ends_with_an_annotated_bookmark(emulator: KubeEmulator) -> None:
    emulator.seed(deployment("a"), deployment("b"))
    query = "watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
    async with aiohttp.ClientSession() as session:
        lines = await read_lines(session, f"{emulator.url}/apis/apps/v1/deployments?{query}", 3)
    assert [line["type"] for line in lines] == ["ADDED", "ADDED", "BOOKMARK"]
    assert lines[2]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_watchers_are_released(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    async with watch.Watch() as watcher:
        stream = watcher.stream(apps.list_namespaced_deployment, "default", timeout_seconds=5)
        emulator.seed(deployment())
        await take(stream, 1)
        assert emulator.store.watcher_count() == 1
    for _ in range(100):  # the server notices the hang-up and ends the handler
        if emulator.store.watcher_count() == 0:
            break
        await asyncio.sleep(0.01)
    assert emulator.store.watcher_count() == 0
