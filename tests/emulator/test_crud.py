"""Built-in kinds through the real kubernetes-asyncio client: create, read, update and patch, with
resourceVersion, generation, status, names, validation and dry runs. Lists: test_lists.py; deletes:
test_deletes.py.
"""

from __future__ import annotations

import json

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient, ApiException

from kube_emulator import KubeEmulator

from .builders import deployment, pod


async def test_deployment_crud_round_trip(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    created = await apps.create_namespaced_deployment("default", deployment("web", replicas=3))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.metadata.generation == 1
    assert created.spec.replicas == 3
    assert created.spec.strategy.type == "RollingUpdate"  # defaulted
    version = int(created.metadata.resource_version)

    read = await apps.read_namespaced_deployment("web", "default")
    assert read.metadata.resource_version == created.metadata.resource_version

    read.spec.replicas = 4
    replaced = await apps.replace_namespaced_deployment("web", "default", read)
    assert int(replaced.metadata.resource_version) > version
    assert replaced.metadata.generation == 2

    listed = await apps.list_namespaced_deployment("default")
    assert [d.metadata.name for d in listed.items] == ["web"]
    assert int(listed.metadata.resource_version) >= int(replaced.metadata.resource_version)

    status = await apps.delete_namespaced_deployment("web", "default")
    assert status.status == "Success" and status.details.name == "web"
    with pytest.raises(ApiException) as missing:
        await apps.read_namespaced_deployment("web", "default")
    assert missing.value.status == 404
    body = json.loads(missing.value.body)
    assert body["kind"] == "Status" and body["reason"] == "NotFound"
    assert body["message"] == 'deployments.apps "web" not found'


async def test_create_twice_is_already_exists(api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    await apps.create_namespaced_deployment("default", deployment())
    with pytest.raises(ApiException) as duplicate:
        await apps.create_namespaced_deployment("default", deployment())
    assert duplicate.value.status == 409
    assert json.loads(duplicate.value.body)["reason"] == "AlreadyExists"


async def test_stale_put_is_a_conflict_and_changes_nothing(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    first = await apps.create_namespaced_deployment("default", deployment())
    second = await apps.read_namespaced_deployment("web", "default")
    second.spec.replicas = 5
    await apps.replace_namespaced_deployment("web", "default", second)
    first.spec.replicas = 9
    with pytest.raises(ApiException) as stale:
        await apps.replace_namespaced_deployment("web", "default", first)
    assert stale.value.status == 409
    assert json.loads(stale.value.body)["reason"] == "Conflict"
    assert "the object has been modified" in json.loads(stale.value.body)["message"]
    assert emulator.get("deployments", "web")["spec"]["replicas"] == 5


async def test_put_to_a_missing_object_is_404_and_name_mismatch_is_400(api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    with pytest.raises(ApiException) as missing:
        await apps.replace_namespaced_deployment("ghost", "default", deployment("ghost"))
    assert missing.value.status == 404
    await apps.create_namespaced_deployment("default", deployment())
    with pytest.raises(ApiException) as mismatch:
        await apps.replace_namespaced_deployment("web", "default", deployment("other"))
    assert mismatch.value.status == 400


async def test_generation_follows_spec_not_metadata_or_status(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    await apps.create_namespaced_deployment("default", deployment())
    labelled = await apps.patch_namespaced_deployment("web", "default", {"metadata": {"labels": {"extra": "1"}}})
    assert labelled.metadata.generation == 1
    status = await apps.patch_namespaced_deployment_status("web", "default", {"status": {"replicas": 2}})
    assert status.metadata.generation == 1 and status.status.replicas == 2
    respec = await apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 3}})
    assert respec.metadata.generation == 2
    # Deployments (only) also bump generation when annotations change, as the real strategy does.
    annotated = await apps.patch_namespaced_deployment("web", "default", {"metadata": {"annotations": {"a": "b"}}})
    assert annotated.metadata.generation == 3
    assert [v["metadata"]["generation"] for v in emulator.history("deployments", "web")] == [1, 1, 1, 2, 3]


async def test_a_write_that_changes_nothing_keeps_the_resource_version(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    created = await apps.create_namespaced_deployment("default", deployment(replicas=2))
    same = await apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 2}})
    assert same.metadata.resource_version == created.metadata.resource_version
    assert len(emulator.history("deployments", "web")) == 1


async def test_status_is_reset_on_create_and_kept_on_main_writes(api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    body = deployment()
    body["status"] = {"replicas": 7, "readyReplicas": 7}
    created = await apps.create_namespaced_deployment("default", body)
    assert created.status.replicas is None
    await apps.patch_namespaced_deployment_status("web", "default", {"status": {"replicas": 2, "readyReplicas": 1}})
    current = await apps.read_namespaced_deployment("web", "default")
    current.status.ready_replicas = 99  # ignored: status changes only through /status
    current.spec.replicas = 3
    replaced = await apps.replace_namespaced_deployment("web", "default", current)
    assert replaced.status.ready_replicas == 1 and replaced.spec.replicas == 3
    # And /status ignores spec.
    replaced.spec.replicas = 50
    replaced.status.ready_replicas = 2
    after_status = await apps.replace_namespaced_deployment_status("web", "default", replaced)
    assert after_status.spec.replicas == 3 and after_status.status.ready_replicas == 2
    read_status = await apps.read_namespaced_deployment_status("web", "default")
    assert read_status.status.ready_replicas == 2


async def test_new_pods_are_pending(api: ApiClient) -> None:
    core = client.CoreV1Api(api)
    created = await core.create_namespaced_pod("default", pod("p", phase="Running"))
    assert created.status.phase == "Pending"
    assert created.status.qos_class == "BestEffort"


async def test_generate_name(api: ApiClient) -> None:
    core = client.CoreV1Api(api)
    body = pod("ignored")
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "worker-"
    first = await core.create_namespaced_pod("default", body)
    second = await core.create_namespaced_pod("default", body)
    assert first.metadata.name.startswith("worker-") and len(first.metadata.name) == len("worker-") + 5
    assert first.metadata.name != second.metadata.name


async def test_validation_errors_are_422(api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    mismatched = deployment()
    mismatched["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    negative = deployment()
    negative["spec"]["replicas"] = -1
    messages = []
    for body in (mismatched, negative):
        with pytest.raises(ApiException) as invalid:
            await apps.create_namespaced_deployment("default", body)
        assert invalid.value.status == 422
        assert json.loads(invalid.value.body)["reason"] == "Invalid"
        messages.append(json.loads(invalid.value.body)["message"])
    # Values as the API server (Go) prints them, not Python reprs
    assert messages == [
        'Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"other"}: `selector` does not match template `labels`',
        'Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
    ]
    await apps.create_namespaced_deployment("default", deployment())
    with pytest.raises(ApiException) as immutable:
        await apps.patch_namespaced_deployment("web", "default", {"spec": {"selector": {"matchLabels": {"x": "y"}}}})
    assert immutable.value.status == 422
    bad_name = deployment("Not_A_Name")
    with pytest.raises(ApiException) as named:
        await apps.create_namespaced_deployment("default", bad_name)
    assert named.value.status == 422


async def test_creating_in_a_missing_namespace_is_404(api: ApiClient) -> None:
    with pytest.raises(ApiException) as missing:
        await client.AppsV1Api(api).create_namespaced_deployment("nowhere", deployment(namespace="nowhere"))
    assert missing.value.status == 404
    assert json.loads(missing.value.body)["message"] == 'namespaces "nowhere" not found'


async def test_dry_run_changes_nothing(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    result = await apps.create_namespaced_deployment("default", deployment(), dry_run="All")
    assert result.metadata.name == "web"
    assert emulator.get("deployments", "web") is None


async def test_json_and_strategic_merge_patches_on_builtin_kinds(api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    await apps.create_namespaced_deployment("default", deployment())
    # A dict body goes out as strategic merge: containers merge by name.
    patched = await apps.patch_namespaced_deployment(
        "web",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "250m"}}}]}}}},
    )
    container = patched.spec.template.spec.containers[0]
    assert container.image == "nginx:1.27"
    assert container.resources.requests == {"cpu": "250m", "memory": "64Mi"}
    # A list body goes out as a JSON patch.
    patched = await apps.patch_namespaced_deployment(
        "web",
        "default",
        [
            {"op": "test", "path": "/spec/replicas", "value": 2},
            {"op": "replace", "path": "/spec/replicas", "value": 6},
        ],
    )
    assert patched.spec.replicas == 6
    with pytest.raises(ApiException) as failed_test:
        await apps.patch_namespaced_deployment("web", "default", [{"op": "test", "path": "/spec/replicas", "value": 2}])
    assert failed_test.value.status == 422
    with pytest.raises(ApiException) as stale:
        await apps.patch_namespaced_deployment(
            "web", "default", [{"op": "replace", "path": "/metadata/resourceVersion", "value": "1"}]
        )
    assert stale.value.status == 409
    merge = await apps.patch_namespaced_deployment(
        "web", "default", {"metadata": {"labels": {"x": "y"}}}, _content_type="application/merge-patch+json"
    )
    assert merge.metadata.labels["x"] == "y"
    with pytest.raises(ApiException) as stale_merge:
        await apps.patch_namespaced_deployment(
            "web",
            "default",
            {"metadata": {"resourceVersion": "2"}, "spec": {"replicas": 1}},
            _content_type="application/merge-patch+json",
        )
    assert stale_merge.value.status == 409


async def test_server_side_apply_creates_then_merges(emulator: KubeEmulator, api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    body = deployment("applied", replicas=1)
    created = await apps.patch_namespaced_deployment(
        "applied", "default", body, field_manager="test", _content_type="application/apply-patch+yaml"
    )
    assert created.spec.replicas == 1
    body["spec"]["replicas"] = 4
    applied = await apps.patch_namespaced_deployment(
        "applied", "default", body, field_manager="test", _content_type="application/apply-patch+yaml"
    )
    assert applied.spec.replicas == 4
    with pytest.raises(ApiException) as no_manager:
        await apps.patch_namespaced_deployment("applied", "default", body, _content_type="application/apply-patch+yaml")
    assert no_manager.value.status == 400


async def test_configmaps_and_services(api: ApiClient) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_config_map("default", {"metadata": {"name": "cfg"}, "data": {"k": "v"}})
    assert (await core.read_namespaced_config_map("cfg", "default")).data == {"k": "v"}
    await core.create_namespaced_service(
        "default",
        {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}},
    )
    assert (await core.read_namespaced_service("svc", "default")).spec.ports[0].port == 80


async def test_in_process_access(emulator: KubeEmulator, api: ApiClient) -> None:
    seeded = emulator.seed(deployment(replicas=2) | {"status": {"replicas": 2, "readyReplicas": 2}})
    assert seeded[0]["status"]["readyReplicas"] == 2  # seeding keeps status
    emulator.patch("deployments", "web", {"spec": {"replicas": 3}})
    read = await client.AppsV1Api(api).read_namespaced_deployment("web", "default")
    assert read.spec.replicas == 3 and read.status.ready_replicas == 2
    assert [d["metadata"]["name"] for d in emulator.list("deploy", label_selector="app=web")] == ["web"]
    copy = emulator.get("Deployment", "web")
    assert copy is not None
    copy["spec"]["replicas"] = 100  # a copy: the store is not affected
    assert emulator.get("deployments.apps", "web")["spec"]["replicas"] == 3
    emulator.delete("deployments", "web")
    assert emulator.get("deployments", "web") is None


async def test_a_body_in_a_media_type_the_server_does_not_accept_is_415(emulator: KubeEmulator) -> None:
    async with aiohttp.ClientSession() as session:
        response = await session.post(
            f"{emulator.url}/api/v1/namespaces",
            data=b'{"metadata":{"name":"x"}}',
            headers={"Content-Type": "text/plain"},
        )
        assert response.status == 415
        assert (await response.json())["reason"] == "UnsupportedMediaType"
    assert emulator.get("ns", "x") is None
