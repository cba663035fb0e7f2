"""The KubeEmulator facade: connecting clients (token, kubeconfig), seeding from YAML, resource
names, counters, and field-selected watches."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client import ApiClient, ApiException

from kube_emulator import KubeEmulator

from .builders import TARGET_CRD_YAML, deployment, pod
from .test_watch import take


async def test_bearer_token_and_kubeconfig(tmp_path: Path) -> None:
    async with KubeEmulator(token="s3cret") as emu:
        async with emu.api_client() as api:
            assert (await client.CoreV1Api(api).read_namespace("default")).metadata.name == "default"
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{emu.url}/api/v1/namespaces") as response:
                assert response.status == 401
                assert (await response.json())["reason"] == "Unauthorized"
            async with session.get(f"{emu.url}/healthz") as response:
                assert response.status == 200
        path = emu.write_kubeconfig(tmp_path / "config", namespace="team-a")
        async with await config.new_client_from_config(config_file=str(path)) as api:
            namespaces = await client.CoreV1Api(api).list_namespace()
            assert "kube-system" in {ns.metadata.name for ns in namespaces.items}


async def test_load_yaml_and_install_crd_from_a_file(emulator: KubeEmulator, tmp_path: Path) -> None:
    crd_file = tmp_path / "crd.yaml"
    crd_file.write_text(TARGET_CRD_YAML)
    served = emulator.install_crd(crd_file)
    assert sorted(rt.version for rt in served) == ["v1", "v1alpha1"]
    emulator.install_crd(crd_file)  # installing again replaces it
    loaded = emulator.load_yaml(
        """
apiVersion: v1
kind: List
items:
  - apiVersion: example.dev/v1
    kind: Scaler
    metadata: {name: web, namespace: demo}
    spec: {replicas: 3}
    status: {replicas: 3, selector: app=web}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: demo, labels: {app: web}}
spec: {containers: [{name: app, image: nginx}]}
status: {phase: Running}
"""
    )
    assert [obj["kind"] for obj in loaded] == ["Scaler", "Pod"]
    assert emulator.get("namespaces", "demo") is not None  # created on the way
    assert emulator.get("sc", "web", "demo")["status"]["selector"] == "app=web"  # short name
    assert emulator.get("pods", "p", "demo")["status"]["phase"] == "Running"  # seeding keeps status
    assert emulator.resource("scalers.example.dev").version == "v1"  # the preferred version


async def test_request_counters(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(deployment())
    apps = client.AppsV1Api(api)
    await apps.list_namespaced_deployment("default")
    await apps.list_namespaced_deployment("default")
    await apps.read_namespaced_deployment_scale("web", "default")
    with pytest.raises(ApiException):
        await apps.read_namespaced_deployment("ghost", "default")
    assert emulator.requests.count("list", "deployments") == 2
    assert emulator.requests.count("get", "deployments/scale") == 1
    assert emulator.requests.count(group="apps") == 4
    expected = {"get deployments": 1, "get deployments/scale": 1, "list deployments": 2}
    assert emulator.requests.counts() == expected
    assert [record.status for record in emulator.requests.find("get", "deployments")] == [404]
    emulator.requests.reset()
    assert emulator.requests.count() == 0


async def test_watch_with_a_field_selector(emulator: KubeEmulator, api: ApiClient) -> None:
    core = client.CoreV1Api(api)
    start = (await core.list_namespaced_pod("default")).metadata.resource_version
    async with watch.Watch() as watcher:
        stream = watcher.stream(
            core.list_namespaced_pod,
            "default",
            field_selector="status.phase=Running",
            resource_version=start,
            timeout_seconds=5,
        )
        emulator.seed(pod("a", phase="Pending"), pod("b", phase="Running"))
        emulator.patch("pods", "a", {"status": {"phase": "Running"}}, subresource="status")
        emulator.patch("pods", "b", {"status": {"phase": "Succeeded"}}, subresource="status")
        events = await take(stream, 3)
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("ADDED", "b"),
        ("ADDED", "a"),
        ("DELETED", "b"),
    ]


async def test_errors_inside_the_emulator_are_500_statuses(emulator: KubeEmulator) -> None:
    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    emulator.api.get_scale = broken  # type: ignore[method-assign]
    emulator.seed(deployment())
    url = f"{emulator.url}/apis/apps/v1/namespaces/default/deployments/web/scale"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 500
        body = json.loads(await response.read())
    assert body["reason"] == "InternalError" and "boom" in body["message"]
