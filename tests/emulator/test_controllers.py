"""The workload controller-lite, on a manual clock: pods follow spec.replicas and status follows pods."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from kube_emulator import KubeEmulator, ManualClock, PodLifecycle, WorkloadController

from .builders import deployment, statefulset


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[KubeEmulator, WorkloadController, ManualClock]]:
    clock = ManualClock()
    controller = WorkloadController(PodLifecycle(start_delay=2, ready_delay=5))
    async with KubeEmulator(clock=clock, controllers=[controller], seed=3) as emu:
        yield emu, controller, clock


def pods_of(emu: KubeEmulator, app: str = "web") -> list[dict[str, Any]]:
    return emu.list("pods", "default", label_selector=f"app={app}")


def phases(emu: KubeEmulator, app: str = "web") -> list[tuple[str, bool]]:
    result = []
    for pod in pods_of(emu, app):
        ready = next((c["status"] for c in pod["status"].get("conditions", []) if c["type"] == "Ready"), "False")
        result.append((pod["status"]["phase"], ready == "True"))
    return sorted(result)


async def test_pods_go_pending_running_ready(
    cluster: tuple[KubeEmulator, WorkloadController, ManualClock],
) -> None:
    emu, controller, clock = cluster
    async with emu.api_client() as api:
        apps = client.AppsV1Api(api)
        await apps.create_namespaced_deployment("default", deployment(replicas=2, cpu="250m"))
        await controller.settle()
        assert phases(emu) == [("Pending", False), ("Pending", False)]
        status = (await apps.read_namespaced_deployment_status("web", "default")).status
        assert (status.replicas, status.ready_replicas, status.observed_generation) == (2, None, 1)

        await clock.advance(2)
        await controller.settle()
        assert phases(emu) == [("Running", False), ("Running", False)]
        pod = pods_of(emu)[0]
        assert pod["status"]["startTime"] == "2026-01-01T00:00:02Z"
        assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "250m", "memory": "64Mi"}
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
        assert pod["spec"]["nodeName"] == "emulated-node"

        await clock.advance(5)
        await controller.settle()
        assert phases(emu) == [("Running", True), ("Running", True)]
        ready = next(c for c in pods_of(emu)[0]["status"]["conditions"] if c["type"] == "Ready")
        assert ready["lastTransitionTime"] == "2026-01-01T00:00:07Z"
        status = (await apps.read_namespaced_deployment_status("web", "default")).status
        assert (status.replicas, status.ready_replicas, status.available_replicas) == (2, 2, 2)
        available = next(c for c in status.conditions if c.type == "Available")
        assert available.status == "True"


async def test_scaling_through_the_scale_subresource(
    cluster: tuple[KubeEmulator, WorkloadController, ManualClock],
) -> None:
    emu, controller, clock = cluster
    async with emu.api_client() as api:
        apps = client.AppsV1Api(api)
        await apps.create_namespaced_deployment("default", deployment(replicas=3))
        await controller.settle()
        await clock.advance(7)
        await controller.settle()
        await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 5}})
        await controller.settle()
        assert phases(emu) == [("Pending", False)] * 2 + [("Running", True)] * 3
        scale = await apps.read_namespaced_deployment_scale("web", "default")
        assert (scale.spec.replicas, scale.status.replicas) == (5, 5)

        # Scaling down removes the pods that are not ready yet first.
        await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 2}})
        await controller.settle()
        assert phases(emu) == [("Running", True)] * 2
        status = (await apps.read_namespaced_deployment_status("web", "default")).status
        assert (status.replicas, status.ready_replicas, status.observed_generation) == (2, 2, 3)

        await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 0}})
        await controller.settle()
        assert pods_of(emu) == []


async def test_deleted_pods_are_replaced_and_deleted_workloads_take_their_pods(
    cluster: tuple[KubeEmulator, WorkloadController, ManualClock],
) -> None:
    emu, controller, _ = cluster
    emu.create(deployment(replicas=2))
    await controller.settle()
    victim = pods_of(emu)[0]["metadata"]["name"]
    emu.delete("pods", victim)
    await controller.settle()
    names = [pod["metadata"]["name"] for pod in pods_of(emu)]
    assert len(names) == 2 and victim not in names
    emu.delete("deployments", "web")
    await controller.settle()
    assert pods_of(emu) == []


async def test_template_change_replaces_pods_once_new_ones_are_ready(
    cluster: tuple[KubeEmulator, WorkloadController, ManualClock],
) -> None:
    emu, controller, clock = cluster
    emu.create(deployment(replicas=2, cpu="100m"))
    await controller.settle()
    await clock.advance(7)
    await controller.settle()
    emu.patch(
        "deployments",
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "300m"}}}]}}}},
        content_type="application/strategic-merge-patch+json",
    )
    await controller.settle()
    cpus = sorted(p["spec"]["containers"][0]["resources"]["requests"]["cpu"] for p in pods_of(emu))
    assert cpus == ["100m", "100m", "300m", "300m"]  # old pods stay until the new ones are ready
    await clock.advance(7)
    await controller.settle()
    cpus = sorted(p["spec"]["containers"][0]["resources"]["requests"]["cpu"] for p in pods_of(emu))
    assert cpus == ["300m", "300m"]
    status = emu.get("deployments", "web")["status"]
    assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"]) == (2, 2, 2)


async def test_statefulset_pods_have_ordinals(
    cluster: tuple[KubeEmulator, WorkloadController, ManualClock],
) -> None:
    emu, controller, clock = cluster
    emu.create(statefulset(replicas=3))
    await controller.settle()
    assert sorted(p["metadata"]["name"] for p in pods_of(emu, "db")) == ["db-0", "db-1", "db-2"]
    emu.patch("statefulsets", "db", {"spec": {"replicas": 1}})
    await controller.settle()
    assert [p["metadata"]["name"] for p in pods_of(emu, "db")] == ["db-0"]
    await clock.advance(7)
    await controller.settle()
    status = emu.get("statefulsets", "db")["status"]
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"]) == (1, 1, 1)


async def test_instant_lifecycle() -> None:
    controller = WorkloadController()  # zero delays: pods are Ready as soon as they exist
    async with KubeEmulator(controllers=[controller]) as emu, emu.api_client() as other:
        await client.AppsV1Api(other).create_namespaced_deployment("default", deployment(replicas=3))
        await controller.settle()
        assert phases(emu) == [("Running", True)] * 3
        assert emu.get("deployments", "web")["status"]["readyReplicas"] == 3
        # The controller's writes are real writes: replica history and pod versions are recorded.
        assert emu.history("deployments", "web")[-1]["status"]["readyReplicas"] == 3
        assert emu.requests.count("create", "pods") == 0  # in-process: not in the request log
