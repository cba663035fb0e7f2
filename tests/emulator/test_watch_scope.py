"""A namespaced (or selected) watch from an older resourceVersion replays only its own scope's changes.

The replay of a watch that resumes from a resourceVersion goes through the recorded change window; it
must apply the same filters as the live fan-out: the request's namespace, its label selector and its
field selector. A replay without the namespace filter once leaked other namespaces' objects into a
namespaced watch (issue 37, item 12), and a service limited to one namespace acted on them.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient

from kube_emulator import KubeEmulator

from .builders import deployment, pod
from .test_watch import read_lines, take


def namespaced_names(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [
        (event["type"], event["raw_object"]["metadata"]["namespace"], event["raw_object"]["metadata"]["name"])
        for event in events
    ]


async def test_a_namespaced_watch_from_an_old_version_replays_only_its_namespace(
    emulator: KubeEmulator, api: ApiClient
) -> None:
    apps = client.AppsV1Api(api)
    start = (await apps.list_namespaced_deployment("default")).metadata.resource_version
    # Changes in both namespaces before the watch starts: the replay reads them from the window.
    emulator.seed(deployment("theirs", namespace="other"))
    emulator.seed(deployment("ours"))
    emulator.patch("deployments", "theirs", {"spec": {"replicas": 5}}, namespace="other")
    emulator.patch("deployments", "ours", {"spec": {"replicas": 3}})
    async with watch.Watch() as watcher:
        stream = watcher.stream(apps.list_namespaced_deployment, "default", resource_version=start, timeout_seconds=3)
        replayed = await take(stream, 2)
        emulator.patch("deployments", "theirs", {"spec": {"replicas": 6}}, namespace="other")  # live: not ours
        emulator.patch("deployments", "ours", {"spec": {"replicas": 4}})
        (live,) = await take(stream, 1)
        rest = [event async for event in stream]  # until the server's timeout: nothing else
    assert namespaced_names(replayed) == [("ADDED", "default", "ours"), ("MODIFIED", "default", "ours")]
    assert namespaced_names([live]) == [("MODIFIED", "default", "ours")]
    assert [e for e in rest if e["type"] != "BOOKMARK"] == []


async def test_a_namespaced_watch_with_a_label_selector_replays_its_namespace_and_selection(
    emulator: KubeEmulator,
) -> None:
    start = emulator.store.resource_version
    team_a = {"app": "web", "team": "a"}
    emulator.seed(deployment("x", namespace="other", labels=team_a))  # selected, wrong namespace
    emulator.seed(deployment("y", labels={"app": "web", "team": "b"}))  # right namespace, not selected
    emulator.seed(deployment("z", labels=team_a))  # ours
    emulator.patch("deployments", "y", {"metadata": {"labels": {"team": "a"}}})  # enters the selection
    emulator.patch("deployments", "x", {"spec": {"replicas": 4}}, namespace="other")
    query = f"watch=1&resourceVersion={start}&labelSelector=team%3Da&timeoutSeconds=1"
    async with aiohttp.ClientSession() as session:
        lines = await read_lines(session, f"{emulator.url}/apis/apps/v1/namespaces/default/deployments?{query}", 2)
        rest = await _rest(session, f"{emulator.url}/apis/apps/v1/namespaces/default/deployments?{query}")
    seen = [
        (line["type"], line["object"]["metadata"]["namespace"], line["object"]["metadata"]["name"]) for line in lines
    ]
    assert seen == [("ADDED", "default", "z"), ("ADDED", "default", "y")]
    assert {line["object"]["metadata"]["namespace"] for line in rest} == {"default"}


async def test_a_namespaced_watch_with_a_field_selector_replays_its_namespace_and_selection(
    emulator: KubeEmulator,
) -> None:
    start = emulator.store.resource_version
    emulator.seed(pod("p1", namespace="other", phase="Running"))  # selected, wrong namespace
    emulator.seed(pod("p2", phase="Pending"))  # right namespace, not selected
    emulator.seed(pod("p3", phase="Running"))  # ours
    query = f"watch=1&resourceVersion={start}&fieldSelector=status.phase%3DRunning&timeoutSeconds=1"
    async with aiohttp.ClientSession() as session:
        lines = await _rest(session, f"{emulator.url}/api/v1/namespaces/default/pods?{query}")
    assert [(line["type"], line["object"]["metadata"]["name"]) for line in lines if line["type"] != "BOOKMARK"] == [
        ("ADDED", "p3")
    ]


async def _rest(session: aiohttp.ClientSession, url: str) -> list[dict[str, Any]]:
    """Every event of a raw watch until the server ends it (``timeoutSeconds``)."""
    async with session.get(url) as response:
        assert response.status == 200
        return [json.loads(line) async for line in response.content if line.strip()]
