"""``stabilizationMode: WindowMax`` across a restart: the recommendation history the service keeps in
``status.hvpa.state.recommendations`` is what a new process starts from, so a request stays held until its
window has passed (issue 42).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from autoscaler.core.settings import ControllerSettings
from kube_emulator import KubeEmulator
from tests.service.cluster import CRD, VPA_CRD, FakeMetrics, eventually, status_of, vpa
from tests.service.manager_setup import running_manager

HELD = "requests held at 400m: the largest recommendation in the last 10m"


def target() -> dict[str, Any]:
    intervals = [{"maxReplicas": 3, "maxResources": {"cpu": "2", "memory": "8Gi"}}]
    return {
        "apiVersion": "autoscaler.dev/v1alpha1",
        "kind": "ScalingTarget",
        "metadata": {"name": "api", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
            "minReplicas": 1,
            "maxReplicas": 3,
            "hvpa": {
                "sources": ["vpa"],
                "scalingIntervals": intervals,
                "containers": [{"name": "main", "controlledResources": ["cpu"]}],
                "scaleUp": {"minChange": {"cpu": {"value": "0"}}},
                "scaleDown": {
                    "minChange": {"cpu": {"value": "0"}},
                    "stabilizationDuration": "10m",
                    "stabilizationMode": "WindowMax",
                },
            },
        },
    }


def deployment() -> dict[str, Any]:
    labels = {"app": "api"}
    container = {"name": "main", "image": "api", "resources": {"requests": {"cpu": "300m", "memory": "1Gi"}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


@pytest.fixture
async def emu() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.5) as emulator:
        emulator.install_crd(CRD)
        emulator.install_crd(VPA_CRD)
        yield emulator


def pinned_cpu(emu: KubeEmulator) -> Any:
    obj = emu.get("verticalpodautoscalers.autoscaling.k8s.io", "api")
    assert obj is not None
    return obj["spec"]["resourcePolicy"]["containerPolicies"][0].get("minAllowed", {}).get("cpu")


def recommend(emu: KubeEmulator, cpu: str) -> None:
    """The VPA's recommendation changes; its spec (HVPA's pins) stays as HVPA left it."""
    obj = copy.deepcopy(emu.get("verticalpodautoscalers.autoscaling.k8s.io", "api"))
    assert obj is not None
    [entry] = obj["status"]["recommendation"]["containerRecommendations"]
    entry["target"]["cpu"] = entry["uncappedTarget"]["cpu"] = cpu
    emu.seed(obj)


def explanation(emu: KubeEmulator) -> str:
    return " ".join(status_of(emu, "api").get("hvpa", {}).get("explanation") or [])


def manager(emu: KubeEmulator) -> Any:
    return running_manager(
        emu, FakeMetrics().read_many, settings=ControllerSettings(), period=0.3, jitter=0.0, batch_window=0.05
    )


async def test_a_restart_in_the_middle_of_the_window_keeps_the_request_held(emu: KubeEmulator) -> None:
    emu.create(deployment())
    emu.seed(vpa("api", "api", cpu="400m", memory="1Gi"))  # seeded: a create would drop the status
    emu.create(target())
    async with manager(emu):
        # 300m → 400m: a scale-up (scaleUp is SinceLastScaling with no duration), and 400m is recorded
        await eventually(lambda: pinned_cpu(emu) == "400m", what="VPA pinned at 400m")

        def recorded() -> bool:
            state = status_of(emu, "api").get("hvpa", {}).get("state", {})
            return any(r.get("request") == "400m" for r in state.get("recommendations", []))

        await eventually(recorded, what="the 400m recommendation in status.hvpa.state")
    recommend(emu, "300m")  # while no process runs
    async with manager(emu):  # a new process: its only memory of the window is the status
        await eventually(lambda: HELD in explanation(emu), what="the request held after the restart")
        assert pinned_cpu(emu) == "400m"
    # The same restart with the history gone from the status: the request comes down at once, so it was the
    # restored history that held it.
    stored = copy.deepcopy(emu.get("scalingtargets.autoscaler.dev", "api"))
    assert stored is not None
    stored["status"]["hvpa"]["state"].pop("recommendations")
    emu.seed(stored)
    async with manager(emu):
        await eventually(lambda: pinned_cpu(emu) == "300m", what="the request down without the history")
