"""HVPA in the service: the VPA is read from the cluster, the Deployment scaled and the VPA pinned."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from autoscaler.core.settings import ControllerSettings
from kube_emulator import KubeEmulator
from tests.service.cluster import (
    CRD,
    VPA_CRD,
    FakeMetrics,
    eventually,
    replicas_of,
    status_of,
    vpa,
)
from tests.service.manager_setup import running_manager

INTERVALS = [
    {"maxReplicas": 1, "maxResources": {"cpu": "500m", "memory": "2Gi"}},
    {"maxReplicas": 2, "maxResources": {"cpu": "1", "memory": "4Gi"}},
    {"maxReplicas": 3, "maxResources": {"cpu": "2", "memory": "8Gi"}},
]


def hvpa_target() -> dict[str, Any]:
    return {
        "apiVersion": "autoscaler.dev/v1alpha1",
        "kind": "ScalingTarget",
        "metadata": {"name": "api", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
            "minReplicas": 1,
            "maxReplicas": 3,
            "hvpa": {"sources": ["vpa"], "scalingIntervals": INTERVALS, "containers": [{"name": "main"}]},
        },
    }


def api_deployment() -> dict[str, Any]:
    labels = {"app": "api"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": "main", "image": "api", "resources": {"requests": {"cpu": "300m", "memory": "1Gi"}}}
                    ]
                },
            },
        },
    }


@pytest.fixture
async def emu() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.5) as emulator:
        emulator.install_crd(CRD)
        emulator.install_crd(VPA_CRD)
        yield emulator


async def test_hvpa_scales_out_and_pins_the_vpa(emu: KubeEmulator) -> None:
    from kube_emulator import PodLifecycle, WorkloadController

    controller = WorkloadController(PodLifecycle())
    await controller.start(emu)
    emu.create(api_deployment())
    # the VPA recommends 1.2 CPU per pod on 1 replica: 1.2 > MAX(1) = 500m -> 2 replicas of 600m
    emu.seed(vpa("api", "api", cpu="1200m", memory="1Gi"))  # seeded: a create would drop the status
    emu.create(hvpa_target())
    try:
        async with running_manager(
            emu, FakeMetrics().read_many, settings=ControllerSettings(), period=0.3, jitter=0.0, batch_window=0.05
        ):
            await eventually(lambda: replicas_of(emu, "api") == 2, what="HVPA scale-out")

            def pinned() -> Any:
                obj = emu.get("verticalpodautoscalers.autoscaling.k8s.io", "api")
                assert obj is not None
                return obj["spec"]["resourcePolicy"]["containerPolicies"][0]

            await eventually(lambda: "minAllowed" in pinned(), what="VPA pinned")
            policy = pinned()
            assert policy["containerName"] == "main"
            assert policy["minAllowed"]["cpu"] == policy["maxAllowed"]["cpu"] == "600m"
            await eventually(lambda: "hvpa" in status_of(emu, "api"), what="hvpa status")
            section = status_of(emu, "api")["hvpa"]
            assert section["desiredReplicas"] == 2
            assert section["state"]["pins"]["main"]["cpu"] == "600m"
            assert section["explanation"]
    finally:
        await controller.stop()


async def test_hvpa_without_a_vpa_reports_no_decision(emu: KubeEmulator) -> None:
    emu.create(api_deployment())
    emu.create(hvpa_target())
    async with running_manager(
        emu, FakeMetrics().read_many, settings=ControllerSettings(), period=0.3, jitter=0.0, batch_window=0.05
    ):
        await eventually(lambda: "hvpa" in status_of(emu, "api"), what="hvpa status")
        assert replicas_of(emu, "api") == 1
        assert "no recommendation" in str(status_of(emu, "api")["hvpa"].get("inactive"))
