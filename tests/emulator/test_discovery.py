"""Discovery documents, the typed discovery APIs, and the dynamic client's discovery."""

from __future__ import annotations

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.dynamic import DynamicClient

from kube_emulator import KubeEmulator

from .builders import TARGET_CRD_YAML, VPA_CRD, deployment


async def test_core_and_group_discovery(emulator: KubeEmulator, api: ApiClient) -> None:
    versions = await client.CoreApi(api).get_api_versions()
    assert versions.versions == ["v1"]
    groups = await client.ApisApi(api).get_api_versions()
    names = {group.name: group.preferred_version.version for group in groups.groups}
    assert names["apps"] == "v1" and names["coordination.k8s.io"] == "v1"
    assert "autoscaling.k8s.io" not in names
    code = await client.VersionApi(api).get_code()
    assert code.major == "1" and code.git_version.startswith("v1.")

    apps = await client.AppsV1Api(api).get_api_resources()
    by_name = {resource.name: resource for resource in apps.resources}
    assert by_name["deployments"].kind == "Deployment" and by_name["deployments"].namespaced
    assert by_name["deployments"].short_names == ["deploy"]
    assert "watch" in by_name["deployments"].verbs and "patch" in by_name["deployments"].verbs
    scale = by_name["deployments/scale"]
    assert (scale.group, scale.version, scale.kind) == ("autoscaling", "v1", "Scale")
    assert sorted(scale.verbs) == ["get", "patch", "update"]
    assert by_name["deployments/status"].kind == "Deployment"
    assert "statefulsets/scale" in by_name

    core = await client.CoreV1Api(api).get_api_resources()
    core_names = {resource.name for resource in core.resources}
    assert {"pods", "pods/status", "namespaces", "events"} <= core_names
    assert not next(r for r in core.resources if r.name == "namespaces").namespaced


async def test_crds_appear_in_discovery(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.install_crd(VPA_CRD)
    emulator.install_crd(TARGET_CRD_YAML)
    groups = {group.name: group for group in (await client.ApisApi(api).get_api_versions()).groups}
    assert [v.version for v in groups["autoscaling.k8s.io"].versions] == ["v1"]  # v1beta2 is not served
    assert groups["example.dev"].preferred_version.version == "v1"  # GA beats alpha
    resources = await client.CustomObjectsApi(api).get_api_resources("example.dev", "v1")
    by_name = {resource.name: resource for resource in resources.resources}
    assert by_name["scalers"].short_names == ["sc"]
    assert by_name["scalers/scale"].kind == "Scale"
    assert "scalers/status" in by_name


async def find_scale_subresource(api: ApiClient, kind: str) -> tuple[str, str, str]:
    """What a generic autoscaler does: walk discovery to find the scale subresource of a kind."""
    custom = client.CustomObjectsApi(api)
    for group in (await client.ApisApi(api).get_api_versions()).groups:
        version = group.preferred_version.version
        listing = await custom.get_api_resources(group.name, version)
        names = {resource.name for resource in listing.resources}
        for resource in listing.resources:
            if resource.kind == kind and f"{resource.name}/scale" in names:
                return group.name, version, resource.name
    raise LookupError(kind)


async def test_generic_scale_lookup_via_discovery(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.install_crd(TARGET_CRD_YAML)
    assert await find_scale_subresource(api, "Deployment") == ("apps", "v1", "deployments")
    assert await find_scale_subresource(api, "Scaler") == ("example.dev", "v1", "scalers")


async def test_dynamic_client(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment(replicas=3))
    dynamic = await DynamicClient(api)
    deployments = await dynamic.resources.get(api_version="apps/v1", kind="Deployment")
    assert "scale" in deployments.subresources
    found = await deployments.get(name="web", namespace="default")
    assert found.spec.replicas == 3
    scale = await deployments.subresources["scale"].get(name="web", namespace="default")
    assert scale.status.selector == "app=web"


async def test_unknown_paths_are_404_statuses(emulator: KubeEmulator) -> None:
    async with aiohttp.ClientSession() as session:
        for path in (
            "/apis/nope.example/v1",
            "/apis/apps/v2",
            "/apis/apps/v1/namespaces/default/widgets",
            "/foo",
        ):
            async with session.get(emulator.url + path) as response:
                assert response.status == 404, path
                body = await response.json()
                assert (body["kind"], body["reason"], body["code"]) == ("Status", "NotFound", 404)
        async with session.get(emulator.url + "/healthz") as response:
            assert response.status == 200 and await response.text() == "ok"
