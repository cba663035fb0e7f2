"""Many clients at once: optimistic concurrency loses no update, and a big store stays fast."""

from __future__ import annotations

import asyncio
import time

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiException

from kube_emulator import KubeEmulator

from .builders import deployment, pod


async def test_parallel_read_modify_write_with_retry_loses_no_update(emulator: KubeEmulator) -> None:
    emulator.seed(deployment(replicas=0))
    writers, increments = 8, 10
    conflicts = 0

    async def writer(index: int) -> None:
        nonlocal conflicts
        async with emulator.api_client() as api:
            apps = client.AppsV1Api(api)
            for _ in range(increments):
                while True:  # client-go's RetryOnConflict, without the sleep
                    scale = await apps.read_namespaced_deployment_scale("web", "default")
                    scale.spec.replicas = (scale.spec.replicas or 0) + 1
                    try:
                        await apps.replace_namespaced_deployment_scale("web", "default", scale)
                        break
                    except ApiException as problem:
                        assert problem.status == 409
                        conflicts += 1

    await asyncio.gather(*(writer(i) for i in range(writers)))
    assert emulator.get("deployments", "web")["spec"]["replicas"] == writers * increments
    replicas = [version["spec"]["replicas"] for version in emulator.history("deployments", "web")]
    assert replicas == list(range(writers * increments + 1))  # every value exactly once, in order
    assert conflicts > 0  # the writers really did race


async def test_parallel_json_patches_guarded_by_test_ops(emulator: KubeEmulator) -> None:
    emulator.seed(deployment())
    emulator.patch("deployments", "web", {"metadata": {"annotations": {"counter": "0"}}})

    async def bump() -> None:
        async with emulator.api_client() as api:
            apps = client.AppsV1Api(api)
            while True:
                current = await apps.read_namespaced_deployment("web", "default")
                value = current.metadata.annotations["counter"]
                try:
                    await apps.patch_namespaced_deployment(
                        "web",
                        "default",
                        [
                            {"op": "test", "path": "/metadata/annotations/counter", "value": value},
                            {
                                "op": "replace",
                                "path": "/metadata/annotations/counter",
                                "value": str(int(value) + 1),
                            },
                        ],
                    )
                    return
                except ApiException as problem:
                    assert problem.status == 422

    await asyncio.gather(*(bump() for _ in range(20)))
    assert emulator.get("deployments", "web")["metadata"]["annotations"]["counter"] == "20"


async def test_benchmark_sized_store_answers_selector_lists_quickly() -> None:
    async with KubeEmulator(versions_per_object=2) as emu:
        started = time.monotonic()
        for index in range(1000):
            emu.seed(deployment(f"app-{index}", labels={"app": f"app-{index}"}))
        emu.seed(
            *(pod(f"app-{index // 10}-{index % 10}", labels={"app": f"app-{index // 10}"}) for index in range(10_000))
        )
        seeded = time.monotonic() - started
        async with emu.api_client() as api:
            core = client.CoreV1Api(api)
            started = time.monotonic()
            for index in range(0, 1000, 10):
                listed = await core.list_namespaced_pod("default", label_selector=f"app=app-{index}")
                assert len(listed.items) == 10
            per_list = (time.monotonic() - started) / 100
    # The label index makes a 10-pod list independent of the 10,000 pods stored.
    assert per_list < 0.05, per_list
    assert seeded < 15, seeded
