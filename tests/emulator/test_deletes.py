"""Deleting built-in kinds through the real kubernetes-asyncio client: finalizers (a soft delete until the
last one goes), preconditions, and a namespace's contents deleted with it.
"""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient, ApiException

from kube_emulator import KubeEmulator

from .builders import deployment, pod


async def test_finalizers_turn_delete_into_a_soft_delete(emulator: KubeEmulator, api: ApiClient) -> None:
    core = client.CoreV1Api(api)
    body = pod("guarded")
    body["metadata"]["finalizers"] = ["example.dev/keep"]
    await core.create_namespaced_pod("default", body)
    soft = await core.delete_namespaced_pod("guarded", "default")
    assert soft.metadata.deletion_timestamp is not None
    still_there = await core.read_namespaced_pod("guarded", "default")
    assert still_there.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as no_new_finalizers:
        await core.patch_namespaced_pod(
            "guarded", "default", {"metadata": {"finalizers": ["example.dev/keep", "more"]}}
        )
    assert no_new_finalizers.value.status == 422
    await core.patch_namespaced_pod("guarded", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as gone:
        await core.read_namespaced_pod("guarded", "default")
    assert gone.value.status == 404
    assert emulator.history("pods", "guarded")[-1]["metadata"].get("finalizers") is None


async def test_delete_preconditions(api: ApiClient) -> None:
    core = client.CoreV1Api(api)
    created = await core.create_namespaced_pod("default", pod("p"))
    with pytest.raises(ApiException) as stale:
        await core.delete_namespaced_pod(
            "p",
            "default",
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="1")),
        )
    assert stale.value.status == 409
    deleted = await core.delete_namespaced_pod(
        "p",
        "default",
        body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=created.metadata.uid)),
    )
    assert deleted.metadata.name == "p"  # pods answer DELETE with the object


async def test_namespaces_and_cascading_delete(emulator: KubeEmulator, api: ApiClient) -> None:
    core = client.CoreV1Api(api)
    namespace = await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="team-a")))
    assert namespace.status.phase == "Active"
    names = {ns.metadata.name for ns in (await core.list_namespace()).items}
    assert {"default", "kube-system", "team-a"} <= names
    await client.AppsV1Api(api).create_namespaced_deployment("team-a", deployment(namespace="team-a"))
    await core.delete_namespace("team-a")
    assert emulator.get("deployments", "web", "team-a") is None
    assert emulator.get("namespaces", "team-a") is None
