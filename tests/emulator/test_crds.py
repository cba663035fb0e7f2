"""CustomResourceDefinitions and custom resources through CustomObjectsApi."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient, ApiException

from kube_emulator import ApiError, KubeEmulator

from .builders import TARGET_CRD_YAML, VPA_CRD, vpa

VPA = ("autoscaling.k8s.io", "v1", "default", "verticalpodautoscalers")
SCALERS = ("example.dev", "v1", "default", "scalers")


def scaler(name: str = "web", replicas: int = 2) -> dict[str, object]:
    return {
        "apiVersion": "example.dev/v1",
        "kind": "Scaler",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "target": {"kind": "Deployment", "name": name}},
    }


async def test_vpa_crud_status_and_merge_patch(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.install_crd(VPA_CRD)
    custom = client.CustomObjectsApi(api)
    created = await custom.create_namespaced_custom_object(*VPA, vpa() | {"status": {"ignored": True}})
    assert created["metadata"]["generation"] == 1 and "status" not in created
    assert created["apiVersion"] == "autoscaling.k8s.io/v1" and created["kind"] == "VerticalPodAutoscaler"

    fetched = await custom.get_namespaced_custom_object(*VPA, "web")
    assert fetched["spec"]["updatePolicy"]["updateMode"] == "Off"

    patched = await custom.patch_namespaced_custom_object(
        *VPA,
        "web",
        {"spec": {"updatePolicy": {"updateMode": "Auto"}}},
        _content_type="application/merge-patch+json",
    )
    assert patched["spec"]["updatePolicy"]["updateMode"] == "Auto"
    assert patched["spec"]["targetRef"]["name"] == "web"  # merged, not replaced
    assert patched["metadata"]["generation"] == 2

    recommendation = {
        "recommendation": {"containerRecommendations": [{"containerName": "app", "target": {"cpu": "1"}}]}
    }
    with_status = await custom.patch_namespaced_custom_object_status(
        *VPA,
        "web",
        {"status": recommendation, "spec": {"updatePolicy": {"updateMode": "Initial"}}},
        _content_type="application/merge-patch+json",
    )
    assert with_status["status"] == recommendation
    assert with_status["spec"]["updatePolicy"]["updateMode"] == "Auto"  # spec ignored on /status
    assert with_status["metadata"]["generation"] == 2  # status does not bump generation

    # Status is ignored on the main resource.
    with_status["status"] = {"overwritten": True}
    with_status["spec"]["updatePolicy"]["updateMode"] = "Recreate"
    replaced = await custom.replace_namespaced_custom_object(*VPA, "web", with_status)
    assert replaced["status"] == recommendation and replaced["metadata"]["generation"] == 3

    listed = await custom.list_namespaced_custom_object(*VPA)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["web"]
    assert listed["kind"] == "VerticalPodAutoscalerList"
    everywhere = await custom.list_cluster_custom_object("autoscaling.k8s.io", "v1", "verticalpodautoscalers")
    assert len(everywhere["items"]) == 1

    deleted = await custom.delete_namespaced_custom_object(*VPA, "web")
    assert deleted["metadata"]["name"] == "web"  # custom resources answer DELETE with the object
    with pytest.raises(ApiException) as missing:
        await custom.get_namespaced_custom_object(*VPA, "web")
    assert missing.value.status == 404
    assert json.loads(missing.value.body)["message"] == 'verticalpodautoscalers.autoscaling.k8s.io "web" not found'


async def test_strategic_merge_patch_is_415_for_custom_resources(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.install_crd(VPA_CRD)
    emulator.seed(vpa())
    custom = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as unsupported:
        await custom.patch_namespaced_custom_object(
            *VPA, "web", {"spec": {}}, _content_type="application/strategic-merge-patch+json"
        )
    assert unsupported.value.status == 415
    assert json.loads(unsupported.value.body)["reason"] == "UnsupportedMediaType"


async def test_a_dict_patch_without_content_type_is_rejected(emulator: KubeEmulator, api: ApiClient) -> None:
    # kubernetes-asyncio sends a dict body to CustomObjectsApi as application/json-patch+json;
    # a JSON patch must be a list, so the real server (and the emulator) refuse it.
    emulator.install_crd(VPA_CRD)
    emulator.seed(vpa())
    with pytest.raises(ApiException) as rejected:
        await client.CustomObjectsApi(api).patch_namespaced_custom_object(*VPA, "web", {"spec": {"x": 1}})
    assert rejected.value.status == 400
    assert emulator.get("vpa", "web")["spec"].get("x") is None


async def test_json_patch_on_a_custom_resource(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.install_crd(VPA_CRD)
    emulator.seed(vpa())
    custom = client.CustomObjectsApi(api)
    current = await custom.get_namespaced_custom_object(*VPA, "web")
    patched = await custom.patch_namespaced_custom_object(
        *VPA,
        "web",
        [
            {
                "op": "test",
                "path": "/metadata/resourceVersion",
                "value": current["metadata"]["resourceVersion"],
            },
            {
                "op": "replace",
                "path": "/spec/resourcePolicy/containerPolicies/0/minAllowed/cpu",
                "value": "75m",
            },
        ],
    )
    assert patched["spec"]["resourcePolicy"]["containerPolicies"][0]["minAllowed"]["cpu"] == "75m"
    with pytest.raises(ApiException) as failed:
        await custom.patch_namespaced_custom_object(
            *VPA,
            "web",
            [
                {
                    "op": "test",
                    "path": "/metadata/resourceVersion",
                    "value": current["metadata"]["resourceVersion"],
                }
            ],
        )
    assert failed.value.status == 422


async def test_custom_resource_put_needs_a_resource_version(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.install_crd(VPA_CRD)
    emulator.seed(vpa())
    custom = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as unconditional:
        await custom.replace_namespaced_custom_object(*VPA, "web", vpa())
    assert unconditional.value.status == 422
    current = await custom.get_namespaced_custom_object(*VPA, "web")
    stale = dict(current, metadata=dict(current["metadata"], resourceVersion="1"))
    with pytest.raises(ApiException) as conflict:
        await custom.replace_namespaced_custom_object(*VPA, "web", stale)
    assert conflict.value.status == 409


async def test_custom_resource_scale_subresource(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.install_crd(TARGET_CRD_YAML)
    custom = client.CustomObjectsApi(api)
    await custom.create_namespaced_custom_object(*SCALERS, scaler(replicas=2))
    await custom.patch_namespaced_custom_object_status(
        *SCALERS,
        "web",
        {"status": {"replicas": 2, "selector": "app=web"}},
        _content_type="application/merge-patch+json",
    )
    scale = await custom.get_namespaced_custom_object_scale(*SCALERS, "web")
    assert scale["kind"] == "Scale"
    assert scale["spec"] == {"replicas": 2} and scale["status"] == {"replicas": 2, "selector": "app=web"}
    patched = await custom.patch_namespaced_custom_object_scale(
        *SCALERS, "web", {"spec": {"replicas": 6}}, _content_type="application/merge-patch+json"
    )
    assert patched["spec"]["replicas"] == 6
    scale["spec"]["replicas"] = 9  # stale resourceVersion now
    with pytest.raises(ApiException) as stale:
        await custom.replace_namespaced_custom_object_scale(*SCALERS, "web", scale)
    assert stale.value.status == 409
    fresh = await custom.get_namespaced_custom_object_scale(*SCALERS, "web")
    fresh["spec"]["replicas"] = 9
    await custom.replace_namespaced_custom_object_scale(*SCALERS, "web", fresh)
    stored = emulator.get("scalers", "web")
    assert stored["spec"]["replicas"] == 9 and stored["metadata"]["generation"] == 3


async def test_versions_share_storage_and_unserved_versions_are_404(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.install_crd(TARGET_CRD_YAML)
    emulator.install_crd(VPA_CRD)
    custom = client.CustomObjectsApi(api)
    await custom.create_namespaced_custom_object(*SCALERS, scaler())
    old_version = await custom.get_namespaced_custom_object("example.dev", "v1alpha1", "default", "scalers", "web")
    assert old_version["apiVersion"] == "example.dev/v1alpha1"
    with pytest.raises(ApiException) as unserved:
        await custom.list_namespaced_custom_object("autoscaling.k8s.io", "v1beta2", "default", "verticalpodautoscalers")
    assert unserved.value.status == 404


async def test_crd_over_http_and_deletion(emulator: KubeEmulator, api: ApiClient) -> None:
    extensions = client.ApiextensionsV1Api(api)
    created = await extensions.create_custom_resource_definition(VPA_CRD)
    established = {c.type: c.status for c in created.status.conditions}
    assert established == {"NamesAccepted": "True", "Established": "True"}
    custom = client.CustomObjectsApi(api)
    await custom.create_namespaced_custom_object(*VPA, vpa())
    await extensions.delete_custom_resource_definition(VPA_CRD["metadata"]["name"])
    with pytest.raises(ApiException) as gone:
        await custom.list_namespaced_custom_object(*VPA)
    assert gone.value.status == 404
    # Re-creating the CRD does not bring the old instances back.
    await extensions.create_custom_resource_definition(VPA_CRD)
    assert (await custom.list_namespaced_custom_object(*VPA))["items"] == []


async def test_cluster_scoped_custom_resources(emulator: KubeEmulator, api: ApiClient) -> None:
    crd = json.loads(json.dumps(VPA_CRD))
    crd["metadata"]["name"] = "policies.example.dev"
    crd["spec"].update(group="example.dev", scope="Cluster")
    crd["spec"]["names"] = {"plural": "policies", "kind": "Policy"}
    emulator.install_crd(crd)
    custom = client.CustomObjectsApi(api)
    created = await custom.create_cluster_custom_object(
        "example.dev",
        "v1",
        "policies",
        {"apiVersion": "example.dev/v1", "kind": "Policy", "metadata": {"name": "p"}},
    )
    assert "namespace" not in created["metadata"]
    assert (await custom.get_cluster_custom_object("example.dev", "v1", "policies", "p"))["metadata"]["name"] == "p"
    with pytest.raises(ApiException) as namespaced:
        await custom.list_namespaced_custom_object("example.dev", "v1", "default", "policies")
    assert namespaced.value.status == 404


def test_invalid_crds_are_rejected(emulator: KubeEmulator) -> None:
    wrong_name = json.loads(json.dumps(VPA_CRD))
    wrong_name["metadata"]["name"] = "vpas.autoscaling.k8s.io"
    two_storage = json.loads(json.dumps(VPA_CRD))
    two_storage["spec"]["versions"][1]["storage"] = True
    for crd in (wrong_name, two_storage):
        with pytest.raises(ApiError) as invalid:
            emulator.install_crd(crd)
        assert invalid.value.code == 422
