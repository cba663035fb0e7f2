"""The scale subresource of built-in workloads."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient, ApiException

from kube_emulator import KubeEmulator

from .builders import deployment, statefulset

MERGE = "application/merge-patch+json"


async def test_read_replace_and_patch_deployment_scale(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    emulator.seed(deployment(replicas=2) | {"status": {"replicas": 2}})
    scale = await apps.read_namespaced_deployment_scale("web", "default")
    assert scale.kind == "Scale" and scale.api_version == "autoscaling/v1"
    assert (scale.spec.replicas, scale.status.replicas, scale.status.selector) == (2, 2, "app=web")
    assert scale.metadata.uid == emulator.get("deployments", "web")["metadata"]["uid"]

    scale.spec.replicas = 5
    replaced = await apps.replace_namespaced_deployment_scale("web", "default", scale)
    assert replaced.spec.replicas == 5
    assert int(replaced.metadata.resource_version) > int(scale.metadata.resource_version)

    patched = await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 7}})
    assert patched.spec.replicas == 7
    patched = await apps.patch_namespaced_deployment_scale(
        "web", "default", {"spec": {"replicas": 8}}, _content_type="application/merge-patch+json"
    )
    assert patched.spec.replicas == 8

    deployment_now = await apps.read_namespaced_deployment("web", "default")
    assert deployment_now.spec.replicas == 8
    assert deployment_now.metadata.generation == 4  # each replica change is a spec change
    assert deployment_now.status.replicas == 2  # the scale subresource never touches status
    assert [v["spec"]["replicas"] for v in emulator.history("deployments", "web")] == [2, 5, 7, 8]


async def test_stale_scale_put_is_a_conflict(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    emulator.seed(deployment(replicas=2))
    scale = await apps.read_namespaced_deployment_scale("web", "default")
    emulator.patch("deployments", "web", {"spec": {"replicas": 3}})  # a concurrent writer
    scale.spec.replicas = 10
    with pytest.raises(ApiException) as stale:
        await apps.replace_namespaced_deployment_scale("web", "default", scale)
    assert stale.value.status == 409
    assert emulator.get("deployments", "web")["spec"]["replicas"] == 3
    # Without a resourceVersion the write is unconditional, as for the real scale subresource.
    scale.metadata.resource_version = None
    assert (await apps.replace_namespaced_deployment_scale("web", "default", scale)).spec.replicas == 10


async def test_negative_replicas_are_invalid(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment())
    with pytest.raises(ApiException) as invalid:
        await client.AppsV1Api(api).patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": -1}})
    assert invalid.value.status == 422
    assert json.loads(invalid.value.body)["message"].startswith('Scale.autoscaling "web" is invalid')


async def test_zero_replicas_are_omitted_like_the_real_server(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment(replicas=0))
    scale = await client.AppsV1Api(api).read_namespaced_deployment_scale("web", "default")
    assert scale.spec.replicas is None  # autoscaling/v1 ScaleSpec.replicas is omitempty


async def test_selector_string_from_match_expressions(emulator: KubeEmulator, api: ApiClient) -> None:
    body = deployment()
    body["spec"]["selector"] = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "track", "operator": "In", "values": ["stable", "canary"]}],
    }
    body["spec"]["template"]["metadata"]["labels"] = {"app": "web", "track": "stable"}
    emulator.seed(body)
    scale = await client.AppsV1Api(api).read_namespaced_deployment_scale("web", "default")
    assert scale.status.selector == "app=web,track in (canary,stable)"


async def test_statefulset_and_replicaset_scale(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    await apps.create_namespaced_stateful_set("default", statefulset(replicas=1))
    scaled = await apps.patch_namespaced_stateful_set_scale("db", "default", {"spec": {"replicas": 3}})
    assert scaled.spec.replicas == 3 and scaled.status.selector == "app=db"
    replicaset = deployment("rs")
    replicaset["kind"] = "ReplicaSet"
    await apps.create_namespaced_replica_set("default", replicaset)
    scale = await apps.read_namespaced_replica_set_scale("rs", "default")
    scale.spec.replicas = 4
    assert (await apps.replace_namespaced_replica_set_scale("rs", "default", scale)).spec.replicas == 4


async def test_scale_of_a_missing_deployment_is_404(api: ApiClient) -> None:
    with pytest.raises(ApiException) as missing:
        await client.AppsV1Api(api).read_namespaced_deployment_scale("ghost", "default")
    assert missing.value.status == 404


async def test_minimal_seeded_workloads_still_accept_writes(emulator: KubeEmulator, api: ApiClient) -> None:
    # Seeding skips validation; problems an object already has do not block later writes
    # (here: no pod template at all), but new problems still do.
    emulator.seed(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "bare"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "bare"}}},
        }
    )
    custom = client.CustomObjectsApi(api)  # plain dicts: the typed model would reject this object
    scaled = await custom.patch_namespaced_custom_object_scale(
        "apps", "v1", "default", "deployments", "bare", {"spec": {"replicas": 3}}, _content_type=MERGE
    )
    assert scaled["spec"]["replicas"] == 3
    with pytest.raises(ApiException) as invalid:
        await custom.patch_namespaced_custom_object_scale(
            "apps", "v1", "default", "deployments", "bare", {"spec": {"replicas": -2}}, _content_type=MERGE
        )
    assert invalid.value.status == 422
